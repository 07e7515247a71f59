"""The pages of MediaWiki export XML, split at the byte level (docs/corpus.md#reading-a-dump).

A dump's pages are written by one program in one fixed layout (`<page>`, then `<title>`, `<ns>`,
`<id>`, an optional `<redirect>`, then revisions each ending in `<text>`), so a page is found by
`bytes.find` on its tags and the latest revision's text is the last `<text …>` of the page: no
XML parser, which is most of what mwxml costs. Only the five entities XML escapes (and numeric
ones) are decoded; nothing else in the export format needs it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Iterator

from freshrag.core.errors import FreshragError

PAGE, END_PAGE = b"<page>", b"</page>"


class XMLPageError(FreshragError, ValueError):
    """A `<page>` without the elements every export page has; the message says which. Internal:
    the readers say it again with the file and offset (multistream.py, shards.py)."""


@dataclass(frozen=True)
class RawPage:
    id: int
    ns: int
    title: str
    redirect: bool
    text: str  # the latest revision's wikitext, entities decoded
    created: str | None = None  # where the source gives it (a wiki's first revision)


def split_pages(data: bytes) -> Iterator[RawPage]:
    """Every whole `<page>` of `data`, in order; what follows the last `</page>` is ignored."""
    start = data.find(PAGE)
    while start >= 0:
        end = data.find(END_PAGE, start)
        if end < 0:
            return
        yield page_of(data, start, end)
        start = data.find(PAGE, end)


def page_of(data: bytes, start: int, end: int) -> RawPage:
    """The page whose `<page>` is at `start` and `</page>` at `end`."""
    title = _element(data, b"<title>", b"</title>", start, end)
    ns = _element(data, b"<ns>", b"</ns>", start, end)
    page_id = _element(data, b"<id>", b"</id>", start, end)
    if title is None or ns is None or page_id is None:
        raise XMLPageError(f"a <page> without its <title>, <ns> or <id> "
                           f"({data[start:start + 120]!r}...)")
    first_revision = data.find(b"<revision>", start, end)
    head_end = first_revision if first_revision >= 0 else end
    redirect = data.find(b"<redirect", start, head_end) >= 0
    return RawPage(int(page_id), int(ns), unescape(title), redirect,
                   _latest_text(data, start, end))


def _element(data: bytes, open_tag: bytes, close_tag: bytes, start: int, end: int) -> bytes | None:
    at = data.find(open_tag, start, end)
    if at < 0:
        return None
    at += len(open_tag)
    stop = data.find(close_tag, at, end)
    return data[at:stop] if stop >= 0 else None


def _latest_text(data: bytes, start: int, end: int) -> str:
    at = data.rfind(b"<text", start, end)
    if at < 0:
        return ""
    close = data.find(b">", at, end)
    if close < 0 or data[close - 1:close] == b"/":  # <text ... /> : a deleted or empty text
        return ""
    stop = data.rfind(b"</text>", close, end)
    return unescape(data[close + 1:stop if stop >= 0 else end])


def unescape(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace")
    if "&" not in text:
        return text
    if "&#" in text:
        return html.unescape(text)  # numeric references; the five named ones are HTML's too
    return (text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
            .replace("&apos;", "'").replace("&amp;", "&"))
