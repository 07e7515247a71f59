"""What every article source yields: one page of a wiki, already plain text, with its creation
date, or the reason it cannot be an article of the random sample."""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any, Generator, Generic, Iterator, Protocol, TypeVar

from freshrag.core.dates import parse_timestamp
from freshrag.core.errors import UserError
from freshrag.core.titles import title_form

# Why a sampled page is not in A_r; the manifest counts each.
REDIRECT = "redirect"
DISAMBIGUATION = "disambiguation"
TOO_SHORT = "too_short"
VANISHED = "vanished"  # sampled, then gone (deleted or moved) when its content was fetched
NO_CONTENT = "no_content"
# What a run's dataset reader refuses (harness/core/dataset.py) is never written: a second page of
# a title read already in this pass (articles are keyed by title, in NFC), and a title that is blank or
# holds a line break, which the stage lists (one title a line) cannot hold. Other characters,
# U+2028 and U+0085 among them, are kept (docs/faults.md#files-freshrag-reopens).
DUPLICATE_TITLE = "duplicate_title"
UNUSABLE_TITLE = "unusable_title"
# A page whose title differs from one read already in this pass only by Unicode normalisation:
# one title to MediaWiki, which stores NFC (harness/core/titles.py), so one article here.
TITLE_TWIN = "title_twin"

MIN_CHARS = 1000  # the paper keeps articles of more than 1,000 characters


class BuildError(UserError, ValueError):
    """A build that cannot go on as asked; the message says which file or option."""


@dataclass(frozen=True)
class Page:
    title: str
    content: str  # plain text, section headings as `== Heading ==`
    created: str | None  # ISO-8601 timestamp of the first revision; None if the source lacks it
    revision_id: int | None  # the revision the content was taken from
    url: str | None = None
    discard: str | None = None  # one of the reasons above, or None for a page that is kept
    # the revision's wikitext where the source read it anyway (a dump); not an articles.jsonl field
    wikitext: str | None = field(default=None, repr=False)

    def article_row(self) -> dict[str, Any]:
        """The `articles.jsonl` row, the format `freshrag.core.dataset` reads."""
        return {"title": self.title, "url": self.url, "created": self.created,
                "month": self.month(), "revision_id": self.revision_id, "content": self.content}

    def month(self) -> str | None:
        """The "YYYY-MM" (UTC) the page was created in; None when its creation is unknown."""
        return parse_timestamp(self.created).strftime("%Y-%m") if self.created else None

    def record(self) -> dict[str, Any]:
        return asdict(self)


def classify(page: Page, read: dict[str, str] | None = None) -> Page:
    """The page, its title in NFC (`title_form`), with `discard` set by the A_r rules where the
    source did not set it already; `read` maps the title of every page read before it in this
    pass to the form its source gave, and gains its own: a second page of that form is a
    duplicate, of another form a twin."""
    title = title_form(page.title)
    why = page.discard
    if why is None and (not title.strip() or "\n" in title):
        why = UNUSABLE_TITLE
    elif why is None and read is not None and title in read:
        why = DUPLICATE_TITLE if read[title] == page.title else TITLE_TWIN
    elif why is None and len(page.content) <= MIN_CHARS:
        why = TOO_SHORT
    if read is not None:
        read.setdefault(title, page.title)
    if why == page.discard and title == page.title:
        return page
    return Page(**{**page.record(), "title": title, "discard": why})


Item = TypeVar("Item")


class Reservoir(Generic[Item]):
    """A uniform random sample of `size` items from a stream read once (Algorithm R), holding
    only the sample: a dump's A_r, whole or a month of it."""

    def __init__(self, size: int, rng: random.Random):
        self.size = size
        self.rng = rng
        self.items: list[Item] = []
        self.seen = 0

    def offer(self, item: Item) -> Item | None:
        """Take the stream's next item; the item this leaves out of the sample (the one offered,
        or the one it replaced), None while the sample is still filling."""
        self.seen += 1
        if len(self.items) < self.size:
            self.items.append(item)
            return None
        slot = self.rng.randrange(self.seen)
        if slot < self.size:
            self.items[slot], item = item, self.items[slot]
        return item


class PageSource(Protocol):
    """Where pages come from: a MediaWiki API (random order) or an XML dump (dump order)."""

    description: str  # what the manifest and error messages name: the API URL or the dump path
    random_order: bool  # True if any prefix of `pages()` is a random sample of the wiki

    def pages(self, seen: set[str]) -> Generator[Page, None, None]:
        """Main-namespace pages whose titles are not in `seen`, each once, until the source is
        exhausted; the caller stops iterating when it has enough."""
        ...

    def wikitexts(self, articles: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
        """(title, wikitext) of the given articles' sampled revisions, for the facts stage
        (builders/styles/facts.py `WikitextSource`)."""
        ...
