"""A corpus built shard by shard, in worker processes, resumably (docs/corpus.md).

The source becomes a plan of shards: a run of multistream streams each (a dump with its index),
one split file each, or a slice of titles fetched through the MediaWiki API. Creation dates,
when stub files are given, are scanned first (a worker per stub file) into the dates file. Then
every shard not already on disk with the SHA-256 the manifest records is written by a worker
process; the manifest is rewritten after each one, so that a build stopped anywhere resumes with
the shards it lacks. A second build into the same directory with other settings is refused,
naming each difference; one process at a time builds into a directory (core/rundir.py `locked`).
"""

from __future__ import annotations

import hashlib
import re
import time
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable

from freshrag.builders.corpus.created import DATES_FILE, scan_stub, write_dates
from freshrag.builders.corpus.multistream import check_dump, read_index
from freshrag.builders.corpus.shards import Rules, ShardTask, write_shard
from freshrag.core.files import write_json
from freshrag.core.rundir import locked
from freshrag.core.wording import counted
from freshrag.retrieval.passages import (
    FORMAT,
    KIND,
    MANIFEST,
    SHARDS,
    CorpusError,
    file_sha256,
    read_corpus_manifest,
    shard_path,
)

TEXT = "builders/corpus/wikitext.py passage_text"  # how wikitext became text, as recorded
DUMP_DATE = re.compile(r"-(\d{8})-")


@dataclass(frozen=True)
class CorpusSource:
    """Where a corpus's pages come from: a multistream dump with its index, split dump files,
    or titles read through a wiki's API (`pages_of` fetches them; the workflow gives it)."""

    dumps: tuple[Path, ...] = ()
    index: Path | None = None
    titles: tuple[str, ...] = ()
    wiki: str | None = None  # the API's URL, for the manifest
    stubs: tuple[Path, ...] = ()
    streams_per_shard: int = 100  # 10,000 pages a shard in a Wikipedia dump
    titles_per_shard: int = 1000

    def record(self) -> dict[str, Any]:
        files = [{"path": str(p), "bytes": p.stat().st_size} for p in self.dumps]
        return {"dumps": files,
                "index": ({"path": str(self.index), "bytes": self.index.stat().st_size}
                          if self.index else None),
                "titles": len(self.titles) or None, "wiki": self.wiki,
                "stubs": [{"path": str(p), "bytes": p.stat().st_size} for p in self.stubs],
                "dump_date": next((m.group(1) for p in self.dumps
                                   if (m := DUMP_DATE.search(p.name))), None),
                "streams_per_shard": self.streams_per_shard if self.index else None,
                "titles_per_shard": self.titles_per_shard if self.titles else None}


Progress = Callable[[str], None]
PagesOf = Callable[[list[str]], list[Any]]  # titles -> (RawPage, plain text) pairs


def build_corpus(out: Path, source: CorpusSource, rules: Rules, processes: int = 2,
                 pages_of: PagesOf | None = None,
                 progress: Progress = lambda line: None) -> dict[str, Any]:
    """The corpus written into `out` (what is already there with the same settings kept); its
    manifest."""
    settings = {"source": source.record(), "rules": rules.record(), "chunker": _chunker(rules),
                "text": TEXT}
    with locked(out):
        manifest = _resumed(out, settings)
        (out / SHARDS).mkdir(exist_ok=True)
        context = get_context("spawn")  # no inherited threads or open files in the workers
        with ProcessPoolExecutor(max(1, processes), mp_context=context) as pool:
            if source.stubs:
                rules = replace(rules, dates=str(_dates(out, source, manifest, pool, progress)))
            tasks = _plan(out, source, rules, pages_of)
            done = {shard["name"]: shard for shard in manifest["shards"]}
            kept = {task.name for task in tasks if _kept(out, done.get(task.name))}
            for name in sorted(kept):
                progress(f"{name}: on disk with its recorded SHA-256, kept")
            manifest["shards"] = [done[name] for name in sorted(kept)]
            _write(out, manifest)
            _run(pool, [task for task in tasks if task.name not in kept], out, manifest,
                 pages_of, progress)
        names = [task.name for task in tasks]
        manifest["shards"].sort(key=lambda shard: names.index(shard["name"]))
        manifest.update(complete=True, counts=_counts(manifest["shards"]),
                        content_sha256=_content_hash(manifest["shards"]))
        _write(out, manifest)
    return manifest


def _chunker(rules: Rules) -> dict[str, Any]:
    from importlib.metadata import version

    return {"splitter": "langchain_text_splitters.RecursiveCharacterTextSplitter",
            "version": version("langchain-text-splitters"), "chunk_size": rules.chunk_size,
            "chunk_overlap": rules.chunk_overlap, "prefix": "Title: {title}\\n",
            "code": "harness/retrieval/chunking.py chunk_articles"}


def _resumed(out: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """The manifest to go on with: the one on disk, if made with these settings, else new."""
    if not (out / MANIFEST).exists():
        return {"kind": KIND, "format": FORMAT, "complete": False, **settings, "dates": None,
                "shards": []}
    manifest = read_corpus_manifest(out, complete=False)
    differ = [key for key in settings if manifest.get(key) != settings[key]]
    if differ:
        raise CorpusError(f"{out}: this corpus was built with other {', '.join(differ)} ("
                          + "; ".join(f"{k}: {manifest.get(k)!r}, now {settings[k]!r}"
                                      for k in differ)[:600]
                          + "); build into another directory, or remove this one")
    return dict(manifest, complete=False)


def _dates(out: Path, source: CorpusSource, manifest: dict[str, Any],
           pool: ProcessPoolExecutor, progress: Progress) -> Path:
    """The dates file: kept if whole from an earlier pass, else scanned from the stub files."""
    path, recorded = out / DATES_FILE, manifest.get("dates")
    if recorded and path.is_file() and file_sha256(path) == recorded["sha256"]:
        progress(f"{DATES_FILE}: on disk with its recorded SHA-256, kept")
        return path
    started = time.monotonic()
    scans = [future.result() for future in
             [pool.submit(scan_stub, str(stub)) for stub in source.stubs]]
    dated = write_dates(path, scans)
    manifest["dates"] = {"file": DATES_FILE, "sha256": file_sha256(path), "pages": dated,
                         "seconds": round(time.monotonic() - started, 1)}
    _write(out, manifest)
    progress(f"{DATES_FILE}: {counted(dated, 'page')} dated from "
             f"{counted(len(source.stubs), 'stub file')}")
    return path


def _plan(out: Path, source: CorpusSource, rules: Rules,
          pages_of: PagesOf | None) -> list[ShardTask]:
    def task(number: int, **where: Any) -> ShardTask:
        name = f"shard-{number:05d}"
        return ShardTask(name, str(shard_path(out, name)), rules, **where)

    if source.index:
        dump = source.dumps[0]
        streams = read_index(source.index)
        check_dump(dump, source.index, streams)
        size = source.streams_per_shard
        return [task(i, dump=str(dump), index=str(source.index),
                     streams=tuple(streams[start:start + size]))
                for i, start in enumerate(range(0, len(streams), size))]
    if source.dumps:
        return [task(i, split_file=str(path)) for i, path in enumerate(source.dumps)]
    if pages_of is None:
        raise CorpusError("a corpus from titles needs a wiki to fetch them from")
    size = source.titles_per_shard
    return [task(i, titles=source.titles[start:start + size])
            for i, start in enumerate(range(0, len(source.titles), size))]


def _kept(out: Path, shard: dict[str, Any] | None) -> bool:
    path = shard_path(out, shard["name"]) if shard else None
    return bool(shard and path and path.is_file() and file_sha256(path) == shard["sha256"])


def _run(pool: ProcessPoolExecutor, todo: list[ShardTask], out: Path, manifest: dict[str, Any],
         pages_of: PagesOf | None, progress: Progress) -> None:
    """Every shard of `todo` written; the manifest rewritten as each one ends."""
    pending: set[Future] = set()
    for task in todo:
        if task.titles and pages_of is not None:
            # fetched here, where the wiki's client lives; only the writing goes to a worker
            task = replace(task, titles=(), pages=tuple(pages_of(list(task.titles))))
        pending.add(pool.submit(write_shard, task))
    while pending:
        finished, pending = wait(pending, return_when=FIRST_EXCEPTION)
        for future in finished:
            error = future.exception()
            if error is not None:
                for other in pending:
                    other.cancel()
                raise error
            record = future.result()
            manifest["shards"].append(record)
            _write(out, manifest)
            progress(f"{record['name']}: {record['pages']:,} pages, {record['passages']:,} "
                     f"passages")


def _counts(shards: list[dict[str, Any]]) -> dict[str, Any]:
    dropped: dict[str, int] = {}
    for shard in shards:
        for why, count in shard["dropped"].items():
            dropped[why] = dropped.get(why, 0) + count
    return {"shards": len(shards), "pages": sum(s["pages"] for s in shards),
            "passages": sum(s["passages"] for s in shards),
            "bytes": sum(s["bytes"] for s in shards), "dropped": dict(sorted(dropped.items()))}


def _content_hash(shards: list[dict[str, Any]]) -> str:
    digest = hashlib.sha256()
    for shard in shards:
        digest.update(f"{shard['name']} {shard['sha256']}\n".encode())
    return digest.hexdigest()


def _write(out: Path, manifest: dict[str, Any]) -> None:
    write_json(out / MANIFEST, manifest)
