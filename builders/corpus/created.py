"""Creation dates for a corpus: each page's first revision, from `stub-meta-history` files
scanned at the byte level, kept as one array indexed by page id (docs/corpus.md#creation-dates).

A stub file holds every revision's metadata of every page, oldest revision first. Only three
values a page are wanted (`<ns>`, `<id>`, and the first `<timestamp>` after them), so the scan
finds them with `bytes.find` in the decompressed stream and jumps to `</page>`, never parsing the
revisions between; a page of a million revisions passes through a bounded buffer. Dates are
kept by page id, not title (a page's id survives a move), as 4 bytes a page: seconds since 2000
in a uint32 array (the machine's byte order) (`created.u32`, 0 for unknown) that every worker maps read-only,
so the 17 million titles of English Wikipedia are neither held in a dict nor copied per process.
"""

from __future__ import annotations

import bz2
import gzip
import mmap
from array import array
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Iterator, cast

from freshrag.core.files import replacing
from freshrag.retrieval.passages import CorpusError

DATES_FILE = "created.u32"
EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)
READ = 4 << 20


def stub_open(path: Path) -> IO[bytes]:
    if path.name.endswith(".gz"):
        return cast(IO[bytes], gzip.open(path, "rb"))
    if path.name.endswith(".bz2"):
        return bz2.open(path, "rb")
    return open(path, "rb")


def scan_stub(path: str) -> tuple[array, array]:
    """Worker: (page ids, first-revision seconds since 2000) of a stub file's main namespace."""
    ids, seconds = array("I"), array("I")
    try:
        with stub_open(Path(path)) as raw:
            for page_id, stamp in _first_revisions(raw):
                ids.append(page_id)
                seconds.append(to_seconds(stamp))
    except (OSError, EOFError) as err:
        raise CorpusError(f"{path}: the stub file breaks off or is corrupt after page "
                          f"{ids[-1] if ids else 'none'} ({type(err).__name__}: {err})") from None
    except ValueError as err:
        raise CorpusError(f"{path}: a page's <id> or <timestamp> cannot be read after page "
                          f"{ids[-1] if ids else 'none'} ({err})") from None
    return ids, seconds


def _first_revisions(raw: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """(page id, first timestamp) of every namespace-0 page, read a block at a time; `at` walks
    the buffer, which is cut only when a block is added, so no page copies it."""
    buffer, at, ended = b"", 0, False
    while True:
        start = buffer.find(b"<page>", at)
        stamp_end = buffer.find(b"</timestamp>", start) if start >= 0 else -1
        page_end = buffer.find(b"</page>", stamp_end) if stamp_end >= 0 else -1
        if page_end < 0:  # the page is not all here yet: read on, keeping its start
            if ended:
                if start >= 0 or b"</mediawiki>" not in buffer[-64:]:
                    raise EOFError("the file ends inside a <page>")
                return
            block = raw.read(READ)
            ended = not block
            keep = start if start >= 0 else max(at, len(buffer) - 16)
            if stamp_end >= 0 and len(buffer) - keep > READ:  # a long history: drop its middle
                head = buffer[start:stamp_end + len(b"</timestamp>")]
                buffer, at = head + buffer[-16:] + block, 0
                continue
            buffer, at = buffer[keep:] + block, 0
            continue
        head = buffer[start:stamp_end]
        if head[head.find(b"<ns>") + 4:head.find(b"</ns>")] == b"0":
            page_id = head[head.find(b"<id>") + 4:head.find(b"</id>")]
            yield int(page_id), head[head.find(b"<timestamp>") + 11:]
        at = page_end + 7


def to_seconds(stamp: bytes | str) -> int:
    """`YYYY-MM-DDTHH:MM:SSZ` as seconds since 2000-01-01 UTC (at least 1: 0 means unknown)."""
    s = stamp.decode() if isinstance(stamp, bytes) else stamp
    moment = datetime(int(s[0:4]), int(s[5:7]), int(s[8:10]), int(s[11:13]), int(s[14:16]),
                      int(s[17:19]), tzinfo=timezone.utc)
    return max(1, int((moment - EPOCH).total_seconds()))


def to_timestamp(seconds: int) -> str | None:
    if not seconds:
        return None
    return datetime.fromtimestamp(EPOCH.timestamp() + seconds, timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def write_dates(path: Path, scans: list[tuple[array, array]]) -> int:
    """The scans as one array indexed by page id, written whole; how many pages it dates."""
    top = max((max(ids) for ids, _ in scans if ids), default=0)
    table = array("I", bytes(4 * (top + 1)))
    for ids, seconds in scans:
        for page_id, value in zip(ids, seconds):
            table[page_id] = value
    with replacing(path) as tmp:
        tmp.write_bytes(table.tobytes())
    return sum(len(ids) for ids, _ in scans)


class Dates:
    """The dates file mapped read-only: a page's creation timestamp by its id."""

    def __init__(self, path: Path | None):
        self._map: Any = None
        if path is not None:
            with open(path, "rb") as handle:
                self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            self._view = memoryview(self._map).cast("I")

    def seconds(self, page_id: int) -> int:
        if self._map is None or page_id >= len(self._view):
            return 0
        return int(self._view[page_id])

    def close(self) -> None:
        if self._map is not None:
            self._view.release()
            self._map.close()
