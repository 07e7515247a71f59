"""A `pages-articles-multistream.xml.bz2` dump and its index, read a stream at a time
(docs/corpus.md#reading-a-dump).

Wikipedia writes its multistream dump as a chain of bz2 streams: the first holds `<mediawiki>`
and `<siteinfo>`, each next one 100 pages, the last `</mediawiki>`. The index
(`…-multistream-index.txt.bz2`) has a line `offset:page_id:title` per page, the offset being where
the page's stream starts in the compressed file. So any stream decompresses alone: seek to its
offset, feed one bz2 decompressor until that stream's end. Before any worker starts, the plan is
checked against the dump: the first stream must end where the index's first offset is (else the
file is one ordinary bz2 stream, not multistream, or the index is another dump's), and every
offset must lie inside the file and hold a bz2 stream header. A worker then checks that each
stream holds the pages the index names, in order.
"""

from __future__ import annotations

import bz2
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from freshrag.builders.corpus.xmlpages import PAGE, RawPage, XMLPageError, split_pages
from freshrag.retrieval.passages import CorpusError

READ = 1 << 20  # bytes read at a time from a stream whose end the index does not give
# "BZh" + a block size digit, then the block magic (pi's digits in BCD): where a bz2 stream begins
STREAM_MAGIC = b"1AY&SY"
HEADER_MAX = 16 << 20  # compressed bytes the siteinfo stream may take (Wikipedia's: under 1 KB)


@dataclass(frozen=True)
class Stream:
    """One stream of pages as the index names it."""

    offset: int
    end: int | None  # the next stream's offset; None for the last page stream
    line: int  # the index line of its first page
    pages: tuple[tuple[int, str], ...]  # (page id, title) in order


def read_index(path: Path) -> list[Stream]:
    """The streams an index names, in the order of their offsets."""
    groups: list[tuple[int, int, list[tuple[int, str]]]] = []
    opener = bz2.open if path.suffix == ".bz2" else open
    try:
        with opener(path, "rt", encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                offset, page_id, title = _index_line(path, number, line.rstrip("\n"))
                if groups and offset == groups[-1][0]:
                    groups[-1][2].append((page_id, title))
                elif groups and offset < groups[-1][0]:
                    raise CorpusError(f"{path}:{number}: offset {offset} comes after "
                                      f"{groups[-1][0]}: not a multistream index (offsets rise)")
                else:
                    groups.append((offset, number, [(page_id, title)]))
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise CorpusError(f"{path}: cannot read the index ({type(err).__name__}: {err})") from None
    if not groups:
        raise CorpusError(f"{path}: an empty index names no stream")
    ends = [offset for offset, _, _ in groups[1:]] + [None]
    return [Stream(offset, end, line, tuple(pages))
            for (offset, line, pages), end in zip(groups, ends)]


def _index_line(path: Path, number: int, line: str) -> tuple[int, int, str]:
    offset, _, rest = line.partition(":")
    page_id, _, title = rest.partition(":")
    if not (offset.isdigit() and page_id.isdigit() and title):
        raise CorpusError(f"{path}:{number}: not an index line `offset:page_id:title` "
                          f"({line[:80]!r})")
    return int(offset), int(page_id), title


def check_dump(dump: Path, index: Path, streams: list[Stream]) -> None:
    """Refuse, naming the file and offset, a dump the index does not describe: not multistream,
    truncated, or another dump's."""
    size = dump.stat().st_size
    with dump.open("rb") as raw:
        header_end = _header_end(dump, raw, streams[0].offset)
        if header_end != streams[0].offset:
            raise CorpusError(f"{index}:{streams[0].line}: the dump {dump}'s first stream ends at "
                              f"byte {header_end}, not at offset {streams[0].offset}: the index "
                              f"is another dump's")
        for stream in streams:
            if stream.offset >= size:
                raise CorpusError(f"{dump}: truncated: it ends at byte {size:,}, before offset "
                                  f"{stream.offset:,} (line {stream.line} of {index})")
            raw.seek(stream.offset)
            head = raw.read(10)
            if not (head[:3] == b"BZh" and head[3:4].isdigit() and head[4:] == STREAM_MAGIC):
                raise CorpusError(f"{index}:{stream.line}: offset {stream.offset:,} of {dump} is "
                                  f"not the start of a bz2 stream: the index is another dump's")


def _header_end(dump: Path, raw: IO[bytes], limit: int) -> int:
    """Where the first stream (siteinfo) ends; refused when it holds pages or runs past `limit`."""
    decompressor = bz2.BZ2Decompressor()
    data = raw.read(min(max(limit, 16), HEADER_MAX))  # a bogus first offset reads no more
    try:
        text = decompressor.decompress(data, max_length=64 << 20)
    except OSError as err:
        raise CorpusError(f"{dump}: not a bz2 file ({err})") from None
    if PAGE in text or not decompressor.eof:
        raise CorpusError(f"{dump}: not a multistream dump: its first bz2 stream holds pages "
                          f"or runs past offset {limit:,} (a pages-articles-multistream dump's "
                          f"first stream holds siteinfo only); read an ordinary .bz2 as a split "
                          f"file (--dump without --index)")
    return len(data) - len(decompressor.unused_data)


def stream_pages(dump: Path, raw: IO[bytes], stream: Stream, index: Path) -> list[RawPage]:
    """The pages of one stream, decompressed alone, checked against the index's titles."""
    data = decompress_stream(dump, raw, stream)
    try:
        pages = list(split_pages(data))
    except XMLPageError as err:
        raise CorpusError(f"{dump}: the stream at offset {stream.offset:,}: {err}") from None
    found = [(page.id, page.title) for page in pages]
    if found != list(stream.pages):
        at = next((i for i, (a, b) in enumerate(zip(found, stream.pages)) if a != b),
                  min(len(found), len(stream.pages)))
        wanted = stream.pages[at] if at < len(stream.pages) else "no page"
        got = found[at] if at < len(found) else "no page"
        raise CorpusError(f"{index}:{stream.line + at}: the index names {wanted} but the stream "
                          f"at offset {stream.offset:,} of {dump} holds {got}: the index is "
                          f"another dump's")
    return pages


def decompress_stream(dump: Path, raw: IO[bytes], stream: Stream) -> bytes:
    """The whole of one bz2 stream, read from its offset up to its end."""
    decompressor = bz2.BZ2Decompressor()
    raw.seek(stream.offset)
    parts = []
    try:
        for block in _blocks(raw, stream):
            parts.append(decompressor.decompress(block))
            if decompressor.eof:
                break
    except OSError as err:
        raise CorpusError(f"{dump}: the stream at offset {stream.offset:,} is corrupt "
                          f"({err})") from None
    if not decompressor.eof:
        raise CorpusError(f"{dump}: truncated: the stream at offset {stream.offset:,} breaks off "
                          f"at byte {raw.tell():,}")
    if stream.end is not None and decompressor.unused_data:
        raise CorpusError(f"{dump}: the stream at offset {stream.offset:,} ends before the next "
                          f"offset the index names ({stream.end:,}): the index is another dump's")
    return b"".join(parts)


def _blocks(raw: IO[bytes], stream: Stream) -> Iterator[bytes]:
    if stream.end is not None:
        yield raw.read(stream.end - stream.offset)
        return
    while block := raw.read(READ):
        yield block
