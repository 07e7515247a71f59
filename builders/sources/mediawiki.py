"""Pages from a live wiki through its MediaWiki API (English Wikipedia by default, or any api.php).

`mwclient` samples random main-namespace titles (up to 500 a request) and reads each page's first
revision, whose timestamp is the creation date; a set dated by month takes its candidates from
the wiki's creation log instead (`created_titles`, docs/living.md). `wikipedia-api` fetches the
plain text through TextExtracts. Both send the User-Agent that Wikimedia's policy asks for (the
tool and a contact), `maxlag`, and retry with backoff on their own (mwclient on 5xx, connection
errors and lag; wikipedia-api on 429, 5xx and timeouts). Pages are fetched `concurrency` at a
time, never more.
"""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generator, Iterator
from urllib.parse import quote, urlsplit

from freshrag.builders.sources.links import Link, resolved
from freshrag.builders.sources.pages import DISAMBIGUATION, REDIRECT, VANISHED, Page
from freshrag.builders.styles.facts import batches
from freshrag.core.config import config_table
from freshrag.core.errors import UserError

# The wiki clients are imported where they are used: `freshrag build --help` names WIKIPEDIA_API.
if TYPE_CHECKING:
    import mwclient
    import wikipediaapi

    from freshrag.builders.sources import Source
    from freshrag.builders.sources.history import Revision

WIKIPEDIA_API = "https://en.wikipedia.org/w/api.php"
DEFAULT_USER_AGENT = "freshrag/0.1 (https://github.com/freshrag/freshrag; set --user-agent)"
BATCH = 500  # random titles per request: the API's limit for ordinary clients
CONTENT_BATCH = 50  # revisions whose content one request may ask for: the API's limit
# A small wiki runs out of unseen titles: stop after this many random batches bring none new.
EXHAUSTED_AFTER = 3
ONE_SECOND = timedelta(seconds=1)  # the log's `leend` is inclusive, to the second
# Templates that mark a disambiguation page where the Disambiguator extension (which sets the
# `disambiguation` page property on Wikipedia) is not installed.
DISAMBIGUATION_TEMPLATES = ("Template:Disambiguation", "Template:Disambig", "Template:Dab")


class SourceError(UserError, RuntimeError):
    """The wiki cannot be used; the message names its API URL."""


class MediaWikiSource:
    random_order = True

    def __init__(self, api_url: str = WIKIPEDIA_API, user_agent: str = DEFAULT_USER_AGENT,
                 concurrency: int = 4, max_lag: int = 5, max_retries: int = 5,
                 timeout_s: float = 30.0):
        parts = urlsplit(api_url)
        if parts.scheme not in ("http", "https") or not parts.path.endswith("api.php"):
            raise SourceError(f"--wiki-api {api_url!r}: expected an http(s) URL ending in api.php")
        self.api_url = api_url
        self.description = api_url
        self.user_agent = user_agent
        self.max_lag = max_lag
        self.concurrency = max(1, concurrency)
        self._site_args = dict(host=parts.netloc, path=parts.path[: -len("api.php")],
                               scheme=parts.scheme, clients_useragent=user_agent,
                               max_lag=max_lag, max_retries=max_retries, retry_timeout=2,
                               connection_options={"timeout": timeout_s})
        self._wiki_args = dict(user_agent=user_agent, extra_api_params={"maxlag": max_lag},
                               max_retries=max_retries, retry_wait=2.0, timeout=timeout_s)
        self._local = threading.local()
        self.content_requests = 0  # prop=revisions&rvprop=content requests made (the facts stage)
        self.site()  # fail now, naming the URL, if the wiki cannot be reached

    def pages(self, seen: set[str]) -> Generator[Page, None, None]:
        seen = set(seen)
        idle = 0
        while idle < EXHAUSTED_AFTER:
            titles = [title for title in self.random_titles() if title not in seen]
            seen.update(titles)
            idle = 0 if titles else idle + 1
            yield from self._fetch_in_order(titles)

    def random_titles(self) -> list[str]:
        result = self._api("query", list="random", rnnamespace=0, rnlimit=BATCH,
                           rnfilterredir="nonredirects")
        return list(dict.fromkeys(item["title"] for item in result["query"]["random"]))

    def created_titles(self, start: datetime, end: datetime) -> list[str]:
        """The main-namespace titles the creation log names from `start` up to (not including)
        `end`, oldest first, each once; a page moved since appears under the title it was made
        with, and the fetch of its first revision decides."""
        if start >= end:  # a --since window that begins where its month ends
            return []
        params: dict[str, Any] = dict(list="logevents", letype="create", lenamespace=0,
                                      lestart=_api_time(start), leend=_api_time(end - ONE_SECOND),
                                      ledir="newer", lelimit=BATCH, leprop="title|timestamp")
        titles: list[str] = []
        while True:
            result = self._api("query", **params)
            titles += [item["title"] for item in result.get("query", {}).get("logevents", [])
                       if "title" in item]
            if "continue" not in result:
                return list(dict.fromkeys(titles))
            params.update(result["continue"])

    def page_ids(self, titles: list[str]) -> dict[str, int]:
        """The page id of each of `titles` that exists (50 a request), by the title asked for:
        a background corpus keys its passages by page id (builders/corpus/wiki.py)."""
        found: dict[str, int] = {}
        for batch in batches(titles, CONTENT_BATCH):
            result = self._api("query", titles="|".join(batch), prop="info", formatversion=2)
            query = result.get("query", {})
            asked = {item["to"]: item["from"] for item in query.get("normalized", [])}
            for page in query.get("pages", []):
                if "pageid" in page:
                    found[asked.get(page["title"], page["title"])] = page["pageid"]
        return found

    def fetch_titles(self, titles: list[str]) -> Iterator[Page]:
        """`fetch` over `titles`, `concurrency` at a time, in order; stops when the caller does."""
        return self._fetch_in_order(titles)

    def fetch(self, title: str) -> Page:
        """One page: its first revision, latest revision id, kind and plain text."""
        result = self._api("query", titles=title, prop="info|pageprops|templates|revisions",
                           ppprop="disambiguation", tltemplates="|".join(DISAMBIGUATION_TEMPLATES),
                           tllimit=len(DISAMBIGUATION_TEMPLATES), rvdir="newer", rvlimit=1,
                           rvprop="ids|timestamp")
        info: dict[str, Any] = next(iter(result["query"].get("pages", {}).values()), {})
        url = _page_url(self.api_url, title)
        if "missing" in info or "invalid" in info or not info.get("revisions"):
            return Page(title, "", None, None, url, discard=VANISHED)
        first = info["revisions"][0]
        created, revision_id = first["timestamp"], info.get("lastrevid")
        if "redirect" in info:
            return Page(title, "", created, revision_id, url, discard=REDIRECT)
        if "disambiguation" in info.get("pageprops", {}) or info.get("templates"):
            return Page(title, "", created, revision_id, url, discard=DISAMBIGUATION)
        text = self._plain_text(title)
        if text is None:
            return Page(title, "", created, revision_id, url, discard=VANISHED)
        return Page(title, text, created, revision_id, url)

    def wikitexts(self, articles: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
        """(title, wikitext) of the given articles.jsonl rows: the revision each was read at
        (`revids`, 50 a request, one request at a time), or the latest for a row without one.
        A request the API continues (a reply too large) is followed until complete."""
        by_revision = [row for row in articles if row.get("revision_id")]
        by_title = [row for row in articles if not row.get("revision_id")]
        for batch in batches(by_revision, CONTENT_BATCH):
            yield from self._contents(revids="|".join(str(row["revision_id"]) for row in batch))
        for batch in batches(by_title, CONTENT_BATCH):
            yield from self._contents(titles="|".join(row["title"] for row in batch))

    def history(self, title: str, since: datetime) -> Iterator[Revision]:
        """The page's revisions oldest first (docs/building.md#changed-facts): the one current
        at `since` (`rvdir=older` from `rvstart`, one revision), then every later one
        (`rvdir=newer`), content included, 50 a request, continued until complete."""
        asked: dict[str, Any] = dict(prop="revisions", titles=title, rvslots="main",
                                     rvprop="ids|timestamp|content", formatversion=2)
        yield from self._revisions(dict(asked, rvdir="older", rvstart=_api_time(since),
                                        rvlimit=1), once=True)
        yield from self._revisions(dict(asked, rvdir="newer", rvlimit=CONTENT_BATCH,
                                        rvstart=_api_time(since + ONE_SECOND)))

    def _revisions(self, params: dict[str, Any], once: bool = False) -> Iterator[Revision]:
        from freshrag.builders.sources.history import api_revision  # mwxml: not for --help

        while True:
            result = self._api("query", **params)
            for page in result.get("query", {}).get("pages", []):
                yield from map(api_revision, page.get("revisions", []))
            if once or "continue" not in result:
                return
            params.update(result["continue"])

    def links(self, titles: list[str]) -> dict[str, list[Link]]:
        """What each of `titles` links to in the main namespace, from the wiki's link table
        (`prop=links`, 50 titles a request, continued until complete), a link to a redirect
        that leads to one of `titles` counted as a link to its target (`prop=redirects`)."""
        found: dict[str, list[Link]] = {}
        redirects: dict[str, str] = {}
        for batch in batches(titles, CONTENT_BATCH):
            for page in self._continued(prop="links", titles="|".join(batch), plnamespace=0,
                                        pllimit="max"):
                if "missing" not in page and "invalid" not in page:
                    found.setdefault(page["title"], []).extend(
                        Link(link["title"]) for link in page.get("links", []))
            for page in self._continued(prop="redirects", titles="|".join(batch),
                                        rdnamespace=0, rdlimit="max"):
                redirects.update((item["title"], page["title"])
                                 for item in page.get("redirects", []))
        return {title: resolved(title, found[title], redirects) for title in titles
                if title in found}

    def _continued(self, **params: Any) -> Iterator[dict[str, Any]]:
        """The pages of a query, a page once for each reply it appears in, the query continued
        until the API says it is complete."""
        params = dict(params, formatversion=2)
        while True:
            result = self._api("query", **params)
            yield from result.get("query", {}).get("pages", [])
            if "continue" not in result:
                return
            params.update(result["continue"])

    def _contents(self, **which: str) -> Iterator[tuple[str, str]]:
        params: dict[str, Any] = dict(prop="revisions", rvprop="ids|content", rvslots="main",
                                      formatversion=2, **which)
        while True:
            self.content_requests += 1
            result = self._api("query", **params)
            for page in result.get("query", {}).get("pages", []):
                for revision in page.get("revisions", []):
                    content = revision.get("slots", {}).get("main", {}).get("content")
                    if isinstance(content, str):
                        yield page["title"], content
            if "continue" not in result:
                return
            params.update(result["continue"])

    def site(self) -> mwclient.Site:
        """This thread's mwclient connection (a requests session is not shared across threads)."""
        import mwclient
        import requests

        if getattr(self._local, "site", None) is None:
            try:
                self._local.site = mwclient.Site(**self._site_args)
            except (requests.RequestException, mwclient.errors.MwClientError, ValueError) as err:
                raise SourceError(f"{self.api_url}: cannot reach the wiki "
                                  f"({type(err).__name__}: {err})") from None
        return self._local.site

    def _api(self, action: str, **params: Any) -> dict[str, Any]:
        import mwclient
        import requests

        try:
            # mwclient adds maxlag to index.php calls only; the API calls carry it from here
            return self.site().get(action, maxlag=self.max_lag, **params)
        except (requests.RequestException, mwclient.errors.MwClientError) as err:
            raise SourceError(f"{self.api_url}: {action} request failed "
                              f"({type(err).__name__}: {err})") from None

    def _plain_text(self, title: str) -> str | None:
        """The page's plain text from TextExtracts, headings as `== Heading ==`; None if gone."""
        import wikipediaapi

        wiki = self._wiki()
        try:
            page = wiki.page(title)
            if not page.exists():
                return None
            return _page_text(page)
        except wikipediaapi.WikipediaException as err:
            raise SourceError(f"{self.api_url}: fetching {title!r} failed "
                              f"({type(err).__name__}: {err})") from None

    def _wiki(self) -> wikipediaapi.Wikipedia:
        if getattr(self._local, "wiki", None) is None:
            self._local.wiki = _wikipedia_at(self.api_url)(**self._wiki_args)
        return self._local.wiki

    def _fetch_in_order(self, titles: list[str]) -> Iterator[Page]:
        """`fetch` over titles, `concurrency` at a time, in order. Lazy: when the caller stops
        iterating, at most `concurrency` fetches are still in flight, and nothing more starts."""
        with ThreadPoolExecutor(self.concurrency) as pool:
            pending: deque = deque()
            for title in titles:
                pending.append(pool.submit(self.fetch, title))
                if len(pending) >= self.concurrency:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()


def _api_time(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _wikipedia_at(api_url: str) -> type[wikipediaapi.Wikipedia]:
    """`wikipediaapi.Wikipedia` pointed at `api_url`.

    wikipedia-api builds its endpoint from the language (`https://{lang}.wikipedia.org/w/api.php`)
    in the HTTP client's `_build_url`; this subclass returns the given URL instead, so that the
    same library reads any MediaWiki with TextExtracts (the test wiki, a mirror, another project).
    """
    import wikipediaapi

    if not hasattr(wikipediaapi.Wikipedia, "_build_url"):
        raise SourceError(f"this wikipedia-api version ({wikipediaapi.__version__}) has no "
                          f"_build_url to point it at {api_url}; install wikipedia-api>=0.16")

    class WikipediaAt(wikipediaapi.Wikipedia):
        @staticmethod
        def _build_url(language: str) -> str:
            return api_url

    return WikipediaAt


def _page_text(page: Any) -> str:
    """Summary, then every section as `== Title ==` (deeper levels with more `=`) and its text."""
    parts = [page.summary.strip()]

    def add(section: Any, level: int) -> None:
        marks = "=" * level
        parts.append(f"{marks} {section.title} {marks}")
        if section.text.strip():
            parts.append(section.text.strip())
        for child in section.sections:
            add(child, level + 1)

    for section in page.sections:
        add(section, 2)
    return "\n\n".join(part for part in parts if part)


def _page_url(api_url: str, title: str) -> str:
    """The article's address: `/wiki/Title` on Wikipedia, `index.php?title=` elsewhere."""
    parts = urlsplit(api_url)
    root = f"{parts.scheme}://{parts.netloc}"
    slug = quote(title.replace(" ", "_"), safe="()/,:'!")
    if parts.path == "/w/api.php":
        return f"{root}/wiki/{slug}"
    return f"{root}{parts.path[: -len('api.php')]}index.php?title={slug}"


class Wiki:
    """A wiki's api.php (`--wiki-api URL`, else [build] wiki_api of freshrag.toml, else
    Wikipedia's), sampled at random through the MediaWiki API."""

    name = "mediawiki"

    def recognises(self, given: Source) -> bool:
        return not given.dump

    def open(self, given: Source, out: Path) -> MediaWikiSource:
        table = config_table(given.config_file, "build")
        return MediaWikiSource(given.wiki_api or table.get("wiki_api", WIKIPEDIA_API),
                               user_agent=given.user_agent or table.get("user_agent",
                                                                        DEFAULT_USER_AGENT),
                               concurrency=given.concurrency, max_lag=given.max_lag)

    def reopens(self, recorded: str) -> bool:
        return recorded.lower().startswith(("http://", "https://"))

    def reopen(self, recorded: str, given: Source, out: Path) -> MediaWikiSource:
        return self.open(replace(given, wiki_api=recorded), out)


MEDIAWIKI = Wiki()
