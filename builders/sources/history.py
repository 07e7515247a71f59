"""Revision histories of pages, oldest revision first, one revision at a time
(docs/building.md#changed-facts): from a `pages-meta-history` dump here, from a wiki's API in
builders/sources/mediawiki.py (`MediaWikiSource.history`).

A history dump is walked with `mwxml`, as the dump source walks a pages-articles dump: a page's
revisions are read one at a time and let go, and the root element is emptied after each page,
so memory stays flat however long a history is. Only the pages asked for are handed on; the rest
are read past. A dump that breaks off inside a page ends that page's history with
`HistoryBroken` (the page's history is then truncated) and ends the walk.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator
from xml.etree.ElementTree import ParseError

import mwxml
from mwxml.element_iterator import ElementIterator

from freshrag.builders.sources.dump import SUFFIXES, DumpError, _CountingReader, _open, _skip
from freshrag.core.titles import title_form

BROKEN = (ParseError, mwxml.errors.MalformedXML, AssertionError, EOFError, OSError, ValueError,
          TypeError, AttributeError, KeyError)  # what mwxml raises on a cut or malformed dump


@dataclass(frozen=True)
class Revision:
    """One revision as a history gives it."""

    id: int | None
    parent_id: int | None  # None or 0: the page's first revision
    timestamp: datetime | None  # UTC; None where the source gives none
    text: str | None  # the wikitext; None where it is hidden or absent


class HistoryBroken(DumpError):
    """A history that breaks off before its end; the message names the file and the page."""


def dump_histories(path: Path, titles: set[str]) -> Iterator[tuple[str, Iterator[Revision]]]:
    """(title, its revisions oldest first) for each main-namespace page of `titles` (NFC) in the
    history dump at `path`, in dump order. Each page's revisions are read as they are asked for:
    take them before asking for the next page."""
    path = Path(path)
    if not path.is_file() or not path.name.endswith(SUFFIXES):
        raise DumpError(f"--history-dump {path}: no MediaWiki XML dump there (a file ending in "
                        f"{', '.join(SUFFIXES)})")
    with _open(path) as raw:
        try:
            root = ElementIterator.from_file(_CountingReader(raw))
            if root.tag != "mediawiki":
                raise DumpError(f"{path}: not a MediaWiki export (root element <{root.tag}>)")
            pages = iter(mwxml.Dump.from_element(root))
        except BROKEN as err:
            raise HistoryBroken(f"{path}: cannot be read as a history dump ({_said(err)})") \
                from None
        while True:
            try:
                page = next(pages, None)
            except BROKEN as err:
                raise HistoryBroken(f"{path}: broken between pages ({_said(err)})") from None
            if page is None:
                return
            title = title_form(page.title or "")
            if page.namespace == 0 and title in titles:
                yield title, _revisions(path, title, page)
            _finish(path, title, page)
            root.element.clear()  # mwxml empties each page; the root would keep them all


def _revisions(path: Path, title: str, page: Any) -> Iterator[Revision]:
    try:
        for revision in page:
            yield Revision(revision.id, revision.parent_id, _moment(revision.timestamp),
                           revision.text)
    except BROKEN as err:
        raise HistoryBroken(f"{path}: the history of {title!r} breaks off ({_said(err)})") \
            from None


def _finish(path: Path, title: str, page: Any) -> None:
    """Read past what the consumer left of a page's revisions."""
    try:
        _skip(page)
    except BROKEN as err:
        raise HistoryBroken(f"{path}: the history of {title!r} breaks off ({_said(err)})") \
            from None


def _moment(timestamp: Any) -> datetime | None:
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp.unix(), tz=timezone.utc)


def api_revision(revision: dict[str, Any]) -> Revision:
    """A revision of the MediaWiki API's `prop=revisions` (formatversion 2, `rvslots=main`)."""
    from freshrag.core.dates import parse_timestamp

    main = (revision.get("slots") or {}).get("main") or {}
    content = main.get("content", revision.get("content"))
    stamp = revision.get("timestamp")
    return Revision(revision.get("revid"), revision.get("parentid"),
                    parse_timestamp(stamp) if isinstance(stamp, str) else None,
                    content if isinstance(content, str) else None)


def _said(err: Exception) -> str:
    return f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else 'malformed'}"
