"""A corpus's pages read through a wiki's MediaWiki API, by title (docs/corpus.md#from-a-wiki):
the plain text TextExtracts gives (the API source's, builders/sources/mediawiki.py), the first
revision's timestamp as the creation date, the page id from `prop=info`."""

from __future__ import annotations

from typing import Iterator, Protocol

from freshrag.builders.corpus.xmlpages import RawPage
from freshrag.builders.sources.pages import Page


class TitleSource(Protocol):
    def fetch_titles(self, titles: list[str]) -> Iterator[Page]: ...

    def page_ids(self, titles: list[str]) -> dict[str, int]: ...


def wiki_pages(source: TitleSource, titles: list[str]) -> list[tuple[RawPage, str | None]]:
    """(page, plain text) of each title that is an article; redirects, disambiguation pages and
    missing titles are left out (no id, or the source's discard)."""
    ids = source.page_ids(titles)
    found: list[tuple[RawPage, str | None]] = []
    for page in source.fetch_titles(titles):
        if page.discard is None and page.title in ids:
            raw = RawPage(ids[page.title], 0, page.title, False, "", page.created)
            found.append((raw, page.content))
    return found
