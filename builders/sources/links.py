"""Links between the pages of a wiki, for questions that need two articles
(docs/building.md#multi-hop-questions): which main-namespace pages each page links to, as the
wiki's own link table says, never guessed by matching titles in the text.

A live wiki answers from its link table (`prop=links`, builders/sources/mediawiki.py); a dump has
no table, so its wikitext is read with mwparserfromhell (`filter_wikilinks`, links inside templates
such as infoboxes included) as MediaWiki fills the table. A link to a redirect counts as a link to
the redirect's target when that target is one of the pages asked about: the dump's redirect pages
give them, the wiki's `prop=redirects`. Links to other namespaces (files, categories, templates)
and to other wikis are left out; a link's `text` is what the page shows for it (a dump only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Protocol

import mwparserfromhell

from freshrag.builders.sources.pages import REDIRECT, Page
from freshrag.core.titles import title_form

# Namespaces and interwiki prefixes a link title may start with: none is an article.
NAMESPACES = {"file", "image", "media", "category", "template", "wikipedia", "wp", "help",
              "portal", "user", "talk", "special", "draft", "module", "mediawiki", "wikt",
              "wiktionary", "w", "commons", "meta", "project", "timedtext", "book"}
INTERWIKI = re.compile(r"^[a-z]{2,3}(-[a-z]+)?$")  # a language prefix: en:, de:, zh-yue:


@dataclass(frozen=True)
class Link:
    title: str  # the linked page's title, as the wiki writes it (first letter upper, spaces)
    text: str | None = None  # what the linking page shows for it, where the source says

    def record(self) -> dict[str, Any]:
        return {"title": self.title, "text": self.text}


class LinkSource(Protocol):
    """A source that can say what its pages link to (the dump sources, the wiki's API)."""

    description: str

    def links(self, titles: list[str]) -> dict[str, list[Link]]:
        """Each of `titles`' main-namespace links, in page order, each target once; a page the
        source does not have is left out."""
        ...


def link_title(target: str) -> str | None:
    """A link target as a main-namespace title (`[[tarnholt_bridge#History]]` is "Tarnholt
    bridge"), None for a link to another namespace, another wiki or the page itself (`#x`)."""
    title = " ".join(target.split("#", 1)[0].replace("_", " ").split()).lstrip(":").strip()
    if not title:
        return None
    prefix, colon, _ = title.partition(":")
    if colon and (prefix.strip().lower() in NAMESPACES or INTERWIKI.match(prefix.strip())):
        return None
    return title_form(title[0].upper() + title[1:])


def wikilinks(wikitext: str) -> list[Link]:
    """The article links of a page's wikitext, each target once, in order."""
    found: dict[str, Link] = {}
    for node in mwparserfromhell.parse(wikitext).filter_wikilinks():
        title = link_title(str(node.title))
        if title is not None and title not in found:
            text = node.text.strip_code().strip() if node.text is not None else title
            found[title] = Link(title, " ".join(text.split()) or title)
    return list(found.values())


def redirect_target(wikitext: str) -> str | None:
    """The page a `#REDIRECT [[Target]]` page leads to."""
    links = mwparserfromhell.parse(wikitext).filter_wikilinks()
    return link_title(str(links[0].title)) if links else None


def resolved(title: str, links: Iterable[Link], redirects: dict[str, str]) -> list[Link]:
    """`links` with each redirect replaced by its target; self-links and repeats dropped."""
    found: dict[str, Link] = {}
    for link in links:
        target = redirects.get(link.title, link.title)
        if target != title and target not in found:
            found[target] = Link(target, link.text)
    return list(found.values())


def dump_links(pages: Iterable[Page], titles: list[str]) -> dict[str, list[Link]]:
    """The links of `titles` from a dump's pages (read once), redirects to any of `titles`
    resolved: only those are kept, so memory follows the pages asked about, not the dump.
    Titles compare in NFC, the first page of a title kept (as A_r keeps it)."""
    wanted = {title_form(title) for title in titles}
    found: dict[str, list[Link]] = {}
    redirects: dict[str, str] = {}
    for page in pages:
        title = title_form(page.title)
        if page.discard == REDIRECT and page.wikitext:
            target = redirect_target(page.wikitext)
            if target in wanted:
                redirects.setdefault(title, target)
        elif title in wanted and title not in found and page.wikitext is not None:
            found[title] = wikilinks(page.wikitext)
    return {title: resolved(title, found[title], redirects)
            for title in map(title_form, titles) if title in found}


def pages_titled(pages: Iterator[Page], titles: list[str]) -> Iterator[Page]:
    """The pages of a dump that `titles` name (in NFC, the first page of each), read once,
    stopping when all were found."""
    wanted = {title_form(title) for title in titles}
    for page in pages:
        if title_form(page.title) in wanted:
            wanted.discard(title_form(page.title))
            yield page
            if not wanted:
                return
