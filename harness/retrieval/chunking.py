"""The chunks of the retrieval index (the builders draw questions' evidence from them too,
docs/retrieval.md#the-index): articles cut by the rules of langchain's
`RecursiveCharacterTextSplitter`, 1,024 characters with an overlap of 48 by default as in the
paper, the article's title prepended to every chunk.

`split_text` is those rules written again for speed (docs/design.md#the-chunker): the splitter's
defaults exactly (separators paragraph, line, space, character; each separator kept at the start
of the piece it begins; pieces stripped, empty ones dropped), the same chunks to the byte, which a
test holds against langchain's own on varied text. It cuts a whole Wikipedia, where langchain's
merge, a word at a time (copying its list of words at every word it drops), was the corpus's
largest step.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import accumulate, chain
from operator import add
from typing import Iterable

from freshrag.core.types import Article

SEPARATORS = ("\n\n", "\n", " ", "")  # RecursiveCharacterTextSplitter's defaults, in its order


@dataclass(frozen=True)
class Chunk:
    title: str
    index: int  # position within its article
    text: str   # "Title: ...\n" + the article's text piece, as the released runs hold them


def chunk_articles(articles: Iterable[Article], size: int, overlap: int) -> list[Chunk]:
    return [Chunk(article.title, i, f"Title: {article.title}\n{piece}")
            for article in articles
            for i, piece in enumerate(split_text(article.content, size, overlap))]


def split_text(text: str, size: int, overlap: int) -> list[str]:
    """`text` in pieces of at most `size` characters (a piece without a separator in it may be
    longer), neighbours sharing up to `overlap`: `RecursiveCharacterTextSplitter(chunk_size=size,
    chunk_overlap=overlap).split_text(text)`."""
    if size <= 0 or not 0 <= overlap <= size:  # as the splitter refuses them
        raise ValueError(f"chunks of {size} characters overlapping by {overlap}: the size must "
                         f"be positive and the overlap from 0 to the size")
    return _split(text, SEPARATORS, size, overlap)


def _split(text: str, separators: tuple[str, ...], size: int, overlap: int) -> list[str]:
    """The text cut at the first separator it holds, each separator starting the piece after
    it; a piece too long cut again at the next separator, the others merged into chunks. Pieces
    are kept as offsets into `text` (they are contiguous), never as strings of their own."""
    separator = ""
    rest: tuple[str, ...] = ()
    for i, candidate in enumerate(separators):
        if not candidate or candidate in text:
            separator, rest = candidate, separators[i + 1:] if candidate else ()
            break
    offsets, longest = _pieces(text, separator)
    longs = [] if longest < size else [
        i for i, (start, end) in enumerate(zip(offsets, offsets[1:])) if end - start >= size]
    chunks: list[str] = []
    begin = 0  # the first piece not yet merged or cut
    for long in longs:
        if begin < long:
            chunks += _merge(text, offsets, begin, long, size, overlap)
        piece = text[offsets[long]:offsets[long + 1]]
        chunks += _split(piece, rest, size, overlap) if rest else [piece]
        begin = long + 1
    if begin < len(offsets) - 1:
        chunks += _merge(text, offsets, begin, len(offsets) - 1, size, overlap)
    return chunks


def _pieces(text: str, separator: str) -> tuple[list[int], int]:
    """Where each piece of `text` cut at `separator` starts, and its end, with an upper bound
    of a piece's length: piece 0 is the text before the first separator (left out if empty),
    piece i the i-th separator and the text up to the next. Summed in C (`accumulate`, `map`),
    as a text holds a piece a word."""
    if not separator:
        return list(range(len(text) + 1)), 1
    parts = list(map(len, text.split(separator)))
    width = len(separator)
    # piece i starts after the parts before it and the i - 1 separators between them
    offsets = list(map(add, accumulate(parts, initial=0),
                       chain((0,), range(0, len(parts) * width, width))))
    return (offsets[1:] if not parts[0] else offsets), max(parts) + width


def _merge(text: str, offsets: list[int], low: int, high: int, size: int,
           overlap: int) -> list[str]:
    """Pieces `low` to `high` (each shorter than `size`) joined into chunks of up to `size`,
    each chunk after the first starting with the last pieces of the one before that fit in
    `overlap` and leave room for the next piece. The splitter adds and drops a piece at a time;
    the same bounds are found here by bisection over the pieces' offsets."""
    chunks: list[str] = []
    start = low
    while True:
        end = bisect_right(offsets, offsets[start] + size, start, high + 1) - 1
        if end >= high:  # the rest fits
            break
        if chunk := text[offsets[start]:offsets[end]].strip():
            chunks.append(chunk)
        room = min(overlap, size - (offsets[end + 1] - offsets[end]))
        start = bisect_left(offsets, offsets[end] - room, start, end)
    if chunk := text[offsets[start]:offsets[high]].strip():
        chunks.append(chunk)
    return chunks
