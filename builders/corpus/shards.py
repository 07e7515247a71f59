"""One shard of a corpus, written by one worker process (docs/corpus.md#shards): its pages read
(a run of multistream streams, or one split file, or pages handed over), turned into text, kept
or dropped by the corpus's rules, chunked exactly as the index chunks (harness/retrieval/
chunking.py) and written as one Parquet file, atomically: a shard is whole or absent.
"""

from __future__ import annotations

import bz2
import gzip
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, cast

from freshrag.builders.corpus.created import Dates, to_seconds, to_timestamp
from freshrag.builders.corpus.multistream import Stream, stream_pages
from freshrag.builders.corpus.wikitext import is_disambiguation, passage_text
from freshrag.builders.corpus.xmlpages import END_PAGE, PAGE, RawPage, XMLPageError, page_of
from freshrag.core.files import replacing
from freshrag.core.types import Article
from freshrag.retrieval.chunking import chunk_articles
from freshrag.retrieval.passages import COLUMNS, CorpusError, file_sha256, passage_id

READ = 1 << 20
BATCH = 200  # pages chunked at once: one text splitter serves them all


@dataclass(frozen=True)
class Rules:
    """What a page must be to give passages, and how they are cut."""

    chunk_size: int = 1024
    chunk_overlap: int = 48
    min_chars: int = 1  # plain-text characters a page needs
    created_after: str | None = None  # ISO timestamps; a page created at or before is dropped
    created_before: str | None = None  # a page created at or after is dropped
    dates: str | None = None  # the dates file (created.u32), if creation dates are known

    def record(self) -> dict[str, Any]:
        return {"chunk_size": self.chunk_size, "chunk_overlap": self.chunk_overlap,
                "min_chars": self.min_chars, "created_after": self.created_after,
                "created_before": self.created_before}


@dataclass(frozen=True)
class ShardTask:
    """A shard to write: where its pages come from (`streams`, a `split_file`, or `titles`
    whose `pages` the building process fetched)."""

    name: str
    out: str  # the shard's file
    rules: Rules
    dump: str | None = None
    index: str | None = None
    streams: tuple[Stream, ...] = ()
    split_file: str | None = None
    titles: tuple[str, ...] = ()  # fetched through the wiki's API before the shard is written
    pages: tuple[tuple[RawPage, str | None], ...] = field(default=(), repr=False)  # plain text


def write_shard(task: ShardTask) -> dict[str, Any]:
    """Worker: the shard written; its record for the manifest."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    counts: Counter[str] = Counter()
    rows: dict[str, list[Any]] = {column: [] for column in COLUMNS}
    dates = Dates(Path(task.rules.dates) if task.rules.dates else None)
    try:
        for batch in _batches(_kept(_pages(task), task.rules, dates, counts), BATCH):
            _chunk(batch, task.rules, rows, counts)
    finally:
        dates.close()
    schema = pa.schema([("id", pa.int64()), ("title", pa.string()), ("chunk", pa.int32()),
                        ("text", pa.string()), ("created", pa.string())])
    table = pa.table(rows, schema=schema)
    path = Path(task.out)
    with replacing(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", row_group_size=8192)
    return {"name": task.name, "sha256": file_sha256(path), "bytes": path.stat().st_size,
            "pages": counts.pop("pages", 0), "passages": len(rows["id"]),
            "dropped": dict(sorted(counts.items()))}


def _pages(task: ShardTask) -> Iterator[tuple[RawPage, str | None]]:
    """(page, plain text or None to convert its wikitext) from the task's source."""
    if task.streams:
        dump, index = Path(cast(str, task.dump)), Path(cast(str, task.index))
        with dump.open("rb") as raw:
            for stream in task.streams:
                for page in stream_pages(dump, raw, stream, index):
                    yield page, None
    elif task.split_file:
        for page in split_file_pages(Path(task.split_file)):
            yield page, None
    else:
        yield from task.pages


def split_file_pages(path: Path) -> Iterator[RawPage]:
    """The pages of one dump file (.xml, .xml.bz2, .xml.gz), streamed: a bounded buffer holds
    at most the page being read."""
    buffer, read = b"", 0
    try:
        with _open(path) as raw:
            while block := raw.read(READ):
                read += len(block)
                buffer += block
                start, consumed = buffer.find(PAGE), 0
                while start >= 0:
                    end = buffer.find(END_PAGE, start)
                    if end < 0:
                        break
                    yield page_of(buffer, start, end)
                    consumed = end + len(END_PAGE)
                    start = buffer.find(PAGE, consumed)
                buffer = buffer[start if start >= 0 else max(consumed, len(buffer) - 8):]
    except (OSError, EOFError) as err:
        raise CorpusError(f"{path}: truncated or corrupt after {read:,} bytes of XML "
                          f"({type(err).__name__}: {err})") from None
    except (XMLPageError, ValueError) as err:
        raise CorpusError(f"{path}: a malformed page after {read:,} bytes of XML "
                          f"({err})") from None
    if PAGE in buffer:
        raise CorpusError(f"{path}: truncated: it ends inside a <page> after {read:,} bytes "
                          f"of XML")


def _open(path: Path) -> IO[bytes]:
    if path.name.endswith(".bz2"):
        return bz2.open(path, "rb")
    if path.name.endswith(".gz"):
        return cast(IO[bytes], gzip.open(path, "rb"))
    return open(path, "rb")


def _kept(pages: Iterable[tuple[RawPage, str | None]], rules: Rules, dates: Dates,
          counts: Counter[str]) -> Iterator[tuple[RawPage, str, int]]:
    """(page, plain text, creation seconds) of the pages that give passages; the rest counted
    by why."""
    after = to_seconds(rules.created_after) if rules.created_after else None
    before = to_seconds(rules.created_before) if rules.created_before else None
    for page, text in pages:
        if page.ns != 0:
            continue
        counts["pages"] += 1
        created = dates.seconds(page.id) or (to_seconds(page.created) if page.created else 0)
        if text is None:
            if page.redirect or page.text.lstrip()[:9].upper() == "#REDIRECT":
                counts["redirect"] += 1
                continue
            if is_disambiguation(page.text):
                counts["disambiguation"] += 1
                continue
        if (after or before) and not created:
            counts["undated"] += 1
        elif (after and created <= after) or (before and created >= before):
            counts["outside_dates"] += 1
        else:
            text = passage_text(page.text) if text is None else text
            if len(text) < rules.min_chars:
                counts["too_short"] += 1
            else:
                yield page, text, created


def _batches(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _chunk(batch: list[tuple[RawPage, str, int]], rules: Rules, rows: dict[str, list[Any]],
           counts: Counter[str]) -> None:
    articles = [Article(page.title, text) for page, text, _ in batch]
    chunks = iter(chunk_articles(articles, rules.chunk_size, rules.chunk_overlap))
    chunk = next(chunks, None)
    for page, _, created in batch:
        stamp = to_timestamp(created)
        while chunk is not None and chunk.title == page.title:
            rows["id"].append(passage_id(page.id, chunk.index))
            rows["title"].append(page.title)
            rows["chunk"].append(chunk.index)
            rows["text"].append(chunk.text)
            rows["created"].append(stamp)
            chunk = next(chunks, None)
            if chunk is not None and chunk.index == 0:
                break
