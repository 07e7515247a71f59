"""Whole-Wikipedia dumps: the split files of a dump read in parallel processes, and creation dates
from a `stub-meta-history` dump joined to the text of a `pages-articles` dump
(docs/methods.md#date-filter: an article's creation date is its first revision's timestamp).

Wikipedia publishes its big dumps split into files by page id (`enwiki-…-pages-articles1.xml-
p1p41242.bz2`, …). Each file is read by a worker process with the one-file dump source
(`builders/sources/dump.py`, flat memory), which writes the pages it reads to a spool file of its own
(JSON Lines under the dataset directory, deleted when the source is done); the builder reads the
spool files in the order the dump files were given, following each as it grows. So every worker
runs at full speed, none holds more than one page, and the pages come out in the same order
however many processes read them: the sample, and so the dataset's hash, do not depend on it.

A `pages-articles` dump holds each page's current revision only, whose parent is an older one:
no creation date. A `stub-meta-history` dump holds every revision's metadata and no text, about a
tenth of the full history's size. Given `--stub-dump`, its files are read first (in parallel too)
into a SQLite table title -> first revision's timestamp (on disk, so memory stays flat for the
seventeen million titles of English Wikipedia), and every page without a date takes its own.
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import sqlite3
import time
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generator, Iterable, Iterator, TextIO

import mwxml
from mwxml.element_iterator import ElementIterator

from freshrag.builders.sources.dump import (
    SUFFIXES,
    DumpError,
    DumpSource,
    _CountingReader,
    _open,
    _skip,
    expand,
)
from freshrag.builders.sources.links import Link, dump_links, pages_titled
from freshrag.builders.sources.pages import BuildError, Page
from freshrag.core.files import create_new, dumps
from freshrag.core.titles import title_form

if TYPE_CHECKING:
    from freshrag.builders.sources import Source

SPOOL = ".dump-spool"
END = "__end__"  # the key of a spool's last line: how its worker ended
FOLLOW_S = 0.05  # how often a spool that has not ended is read again

CREATION_DATES = " (creation dates from "  # in a description: the stub files that follow


def _peak_rss_mib() -> float:
    """This process's own peak resident memory: Linux's VmHWM, which starts afresh at exec (a
    spawned worker's `ru_maxrss` starts from its parent's at the fork), else `ru_maxrss`."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def read_pages(path: str, spool: str) -> dict[str, Any]:
    """Worker: every main-namespace page of one dump file into a spool file; how it went."""
    started, count, error = time.monotonic(), 0, None
    with _new_spool(spool) as out:
        try:
            for page in DumpSource(Path(path)).pages(set()):
                out.write(dumps(page.record(), ensure_ascii=False) + "\n")
                count += 1
        except DumpError as err:
            error = str(err)
        summary = {"file": path, "pages": count, "seconds": round(time.monotonic() - started, 2),
                   "peak_rss_mib": _peak_rss_mib(), "pid": os.getpid(), "error": error}
        out.write(dumps({END: summary}) + "\n")
    return summary


def read_first_revisions(path: str, spool: str) -> dict[str, Any]:
    """Worker: (title, first revision's timestamp) of every main-namespace page of a stub file
    whose first revision has no parent, i.e. whose history the file holds from its start."""
    started, count = time.monotonic(), 0
    with _open(Path(path)) as raw, _new_spool(spool) as out:
        try:
            root = ElementIterator.from_file(_CountingReader(raw))
            for page in mwxml.Dump.from_element(root):
                if page.namespace != 0:
                    _skip(page)
                    continue
                first = next(iter(page), None)
                _skip(page)
                if first is not None and first.parent_id is None and first.timestamp:
                    out.write(dumps([page.title, first.timestamp.long_format()]) + "\n")
                    count += 1
                root.element.clear()  # as in builders/sources/dump.py: the root keeps every page
        except Exception as err:  # a broken stub file: named, with the pages read before it
            return {"file": path, "error": f"{path}: stub dump broken ({type(err).__name__}: "
                                           f"{str(err)[:200]})", "pages": count}
    return {"file": path, "pages": count, "seconds": round(time.monotonic() - started, 2),
            "peak_rss_mib": _peak_rss_mib(), "error": None}


def _new_spool(path: str | Path) -> TextIO:
    """A spool file, new: freshrag's own scratch file, so whatever was left at its name (a stale
    spool, a symbolic link) is replaced, never written through (core/files.create_new)."""
    return os.fdopen(create_new(Path(path)), "w", encoding="utf-8")


class SplitDumpSource:
    """Pages of several dump files, read by `processes` worker processes, in the files' order."""

    random_order = False

    def __init__(self, paths: list[Path], spool_dir: Path, stubs: Iterable[Path] = (),
                 processes: int = 2):
        self.paths = [Path(p) for p in paths]
        self.stubs = [Path(p) for p in stubs]
        for path in self.paths + self.stubs:
            DumpSource(path)  # refuses a missing file or a wrong suffix, naming it
        self.spool = Path(spool_dir) / SPOOL
        self.processes = processes
        self.description = ", ".join(str(p) for p in self.paths) + (
            f"{CREATION_DATES}{', '.join(str(p) for p in self.stubs)})" if self.stubs else "")
        self.workers: list[dict[str, Any]] = []  # each worker's file, pages, seconds, peak RSS

    def wikitexts(self, articles: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
        """(title, wikitext) of the given articles (the facts stage, builders/styles/facts.py): each
        split file read again in turn, until every article was found."""
        wanted = {row["title"]: row for row in articles}
        for path in self.paths:
            for title, wikitext in DumpSource(path).wikitexts(list(wanted.values())):
                del wanted[title]
                yield title, wikitext
            if not wanted:
                return

    def links(self, titles: list[str]) -> dict[str, list[Link]]:
        """What each of `titles` links to (builders/sources/links.py): every file read again in
        turn, in this process, so that redirects in one file resolve links in another."""
        return dump_links(itertools.chain.from_iterable(
            DumpSource(path).pages(set()) for path in self.paths), titles)

    def fetch_titles(self, titles: list[str]) -> Iterator[Page]:
        """The pages `titles` name, the files read again in turn up to the last of them."""
        return pages_titled(itertools.chain.from_iterable(
            DumpSource(path).pages(set()) for path in self.paths), titles)

    def pages(self, seen: set[str]) -> Generator[Page, None, None]:
        self.spool.mkdir(parents=True, exist_ok=True)
        context = get_context("spawn")  # no inherited threads or open files in the workers
        with ProcessPoolExecutor(self.processes, mp_context=context) as pool:
            dates = self._creation_dates(pool) if self.stubs else None
            spools = [self.spool / f"pages-{i}.jsonl" for i in range(len(self.paths))]
            futures = [pool.submit(read_pages, str(path), str(spool))
                       for path, spool in zip(self.paths, spools)]
            try:
                for spool, future in zip(spools, futures):
                    for page in _follow(spool, future, self.workers):
                        if title_form(page.title) in seen:
                            continue
                        if page.created is None and dates is not None:
                            page = Page(**{**page.record(), "created": _created(dates, page.title)})
                        yield page
            finally:
                for future in futures:
                    future.cancel()
                if dates is not None:
                    dates.close()
        for spool in self.spool.glob("*.jsonl"):
            spool.unlink()

    def _creation_dates(self, pool: ProcessPoolExecutor) -> sqlite3.Connection:
        """Every stub file read in parallel into one SQLite table of first revisions."""
        path = self.spool / "created.sqlite"
        os.close(create_new(path))  # scratch: a stale table or a link there is replaced
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE created (title TEXT PRIMARY KEY, created TEXT)")
        spools = [self.spool / f"stub-{i}.jsonl" for i in range(len(self.stubs))]
        futures = [pool.submit(read_first_revisions, str(path), str(spool))
                   for path, spool in zip(self.stubs, spools)]
        for spool, future in zip(spools, futures):
            summary = future.result()
            if summary["error"]:
                raise DumpError(summary["error"])
            self.workers.append(summary)
            with spool.open(encoding="utf-8") as lines:
                db.executemany("INSERT OR REPLACE INTO created VALUES (?, ?)",
                               (json.loads(line) for line in lines))
            db.commit()
            spool.unlink()
        return db


def _created(db: sqlite3.Connection, title: str) -> str | None:
    row = db.execute("SELECT created FROM created WHERE title = ?", (title,)).fetchone()
    return row[0] if row else None


def _follow(spool: Path, future: Future, workers: list[dict[str, Any]]) -> Iterator[Page]:
    """The pages of one spool file as its worker writes them, until its end line."""
    while not spool.exists():
        if future.done():
            future.result()  # a worker that died before opening its spool: raise its error
        time.sleep(FOLLOW_S)
    with spool.open(encoding="utf-8") as lines:
        partial = ""
        while True:
            line = lines.readline()
            if not line.endswith("\n"):  # the worker has not finished writing this line yet
                partial += line
                if future.done() and not line:
                    future.result()
                    raise DumpError(f"{spool}: a dump worker ended without its end line")
                time.sleep(FOLLOW_S)
                continue
            row = json.loads(partial + line)
            partial = ""
            if END in row:
                workers.append(row[END])
                if row[END]["error"]:
                    raise DumpError(row[END]["error"])
                return
            yield Page(**row)


class SplitDump:
    """Several dump files (split files, or a glob), or a dump with stub-meta-history files giving
    its creation dates (`--dump FILE... --stub-dump FILE...`), read by worker processes."""

    name = "split-dump"

    def recognises(self, given: Source) -> bool:
        return bool(given.dump) and (bool(given.stub_dump) or len(expand(list(given.dump))) > 1)

    def open(self, given: Source, out: Path) -> SplitDumpSource:
        return SplitDumpSource(expand(list(given.dump)), out, expand(list(given.stub_dump)),
                               given.dump_processes)

    def reopens(self, recorded: str) -> bool:
        return recorded.endswith(SUFFIXES) and (CREATION_DATES in recorded or ", " in recorded)

    def reopen(self, recorded: str, given: Source, out: Path) -> SplitDumpSource:
        raise BuildError(f"{out}: its articles were sampled from the split dump {recorded}; give "
                         f"the same --dump (and --stub-dump) for the facts stage")


SPLIT_DUMP = SplitDump()
