"""The local MediaWiki behaves as the builder's live-wiki source needs: checked over plain HTTP
against its api.php (the same queries `freshrag.builders.sources.mediawiki` makes through mwclient and
wikipedia-api), then through `MediaWikiSource.fetch` itself."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import pytest
import requests

from freshrag.builders.sources.mediawiki import DISAMBIGUATION_TEMPLATES, MediaWikiSource
from freshrag.builders.sources.pages import DISAMBIGUATION, REDIRECT, VANISHED
from tests.support.wikidump import STAND_IN_CREATED, DumpPage

pytestmark = pytest.mark.integration


def query(api_url: str, **params: Any) -> dict[str, Any]:
    """One action=query GET, JSON format version 1 as mwclient asks for it; API errors fail."""
    answer = requests.get(api_url, params={"action": "query", "format": "json", **params},
                          timeout=30)
    answer.raise_for_status()
    result = answer.json()
    assert "error" not in result, result["error"]
    return result["query"]


def only_page(result: dict[str, Any]) -> dict[str, Any]:
    pages = list(result["pages"].values())
    assert len(pages) == 1, pages
    return pages[0]


def moment(timestamp: str) -> datetime:
    """`2023-07-25T15:04:03Z` and `2023-07-25T15:04:03+00:00` as the same instant."""
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


def opening(page: DumpPage) -> str:
    """The start of the article's first line, which every extract should reproduce verbatim."""
    return page.revisions[-1].text.split("\n", 1)[0][:100]


def sample_articles(articles: dict[str, DumpPage]) -> list[DumpPage]:
    """One article dated by the released data, one with the stand-in date, one with a non-ASCII
    title and one with an apostrophe (both need escaping on their way through the API)."""
    pages = list(articles.values())
    return [next(p for p in pages if p.revisions[0].timestamp != STAND_IN_CREATED),
            next(p for p in pages if p.revisions[0].timestamp == STAND_IN_CREATED),
            next(p for p in pages if not p.title.isascii()),
            next(p for p in pages if "'" in p.title)]


def test_siteinfo_answers_and_textextracts_is_loaded(mediawiki):
    result = query(mediawiki.api_url, meta="siteinfo", siprop="general|extensions")
    assert result["general"]["sitename"] == "freshrag test wiki"
    assert result["general"]["generator"].startswith("MediaWiki 1.")
    assert "TextExtracts" in {extension["name"] for extension in result["extensions"]}


def test_random_nonredirects_are_seeded_articles_or_disambiguations(mediawiki):
    allowed = set(mediawiki.articles) | set(mediawiki.disambiguations)
    drawn: set[str] = set()
    for _ in range(3):
        batch = query(mediawiki.api_url, list="random", rnnamespace=0, rnlimit=500,
                      rnfilterredir="nonredirects")["random"]
        titles = [item["title"] for item in batch]
        assert len(titles) == 500
        assert set(titles) <= allowed, set(titles) - allowed
        drawn.update(titles)
    assert not drawn & set(mediawiki.redirects)


def test_random_redirects_are_exactly_the_seeded_redirects(mediawiki):
    batch = query(mediawiki.api_url, list="random", rnnamespace=0, rnlimit=10,
                  rnfilterredir="redirects")["random"]
    assert {item["title"] for item in batch} == set(mediawiki.redirects)


def test_first_revision_is_the_creation_and_the_page_was_edited_since(mediawiki):
    for page in sample_articles(mediawiki.articles):
        info = only_page(query(mediawiki.api_url, titles=page.title, prop="info|revisions",
                               rvdir="newer", rvlimit=1, rvprop="timestamp|ids"))
        assert info["title"] == page.title
        first = info["revisions"][0]
        assert moment(first["timestamp"]) == moment(page.revisions[0].timestamp), page.title
        assert info["lastrevid"] != first["revid"], page.title  # two revisions, newest last


def test_extracts_are_the_articles_plain_text(mediawiki):
    for page in sample_articles(mediawiki.articles):
        extract = only_page(query(mediawiki.api_url, titles=page.title, prop="extracts",
                                  explaintext=1))["extract"]
        assert opening(page) in extract, page.title
        # The latest revision, not the first (which holds only the first half of the text).
        assert page.revisions[-1].text.rstrip()[-40:] in extract, page.title


def test_extracts_render_headings_as_wikitext_markers(mediawiki):
    page = mediawiki.articles["(Im)Patient"]
    assert "\n== Synopsis ==\n" in page.revisions[-1].text
    extract = only_page(query(mediawiki.api_url, titles=page.title, prop="extracts",
                              explaintext=1))["extract"]
    assert "\n== Synopsis ==\n" in extract


def test_redirect_is_flagged_in_info(mediawiki):
    for title, page in mediawiki.redirects.items():
        info = only_page(query(mediawiki.api_url, titles=title, prop="info"))
        assert "redirect" in info, title
        resolved = query(mediawiki.api_url, titles=title, redirects=1)["redirects"]
        assert resolved == [{"from": title, "to": page.redirect}]


def test_disambiguation_page_lists_its_template_and_articles_none(mediawiki):
    for title in mediawiki.disambiguations:
        info = only_page(query(mediawiki.api_url, titles=title, prop="templates"))
        assert {item["title"] for item in info["templates"]} == {"Template:Disambiguation"}
    for page in sample_articles(mediawiki.articles):
        info = only_page(query(mediawiki.api_url, titles=page.title, prop="templates",
                               tltemplates="|".join(DISAMBIGUATION_TEMPLATES)))
        assert "templates" not in info, page.title


def test_concurrent_extract_requests_all_answer(mediawiki):
    """The builder fetches 4 pages at a time; SQLite and `php -S` workers must not refuse any."""
    titles = list(mediawiki.articles)[:24]

    def extract(title: str) -> str:
        return only_page(query(mediawiki.api_url, titles=title, prop="extracts",
                               explaintext=1))["extract"]

    with ThreadPoolExecutor(4) as pool:
        extracts = list(pool.map(extract, titles))
    assert all(extracts)


def test_source_fetches_an_article_with_its_creation_date_and_text(mediawiki):
    source = MediaWikiSource(mediawiki.api_url)
    for page in sample_articles(mediawiki.articles):
        fetched = source.fetch(page.title)
        assert fetched.discard is None, (page.title, fetched.discard)
        assert moment(fetched.created) == moment(page.revisions[0].timestamp), page.title
        assert opening(page) in fetched.content, page.title
        assert fetched.revision_id is not None


def test_source_discards_disambiguations_redirects_and_missing_pages(mediawiki):
    source = MediaWikiSource(mediawiki.api_url)
    for title in mediawiki.disambiguations:
        assert source.fetch(title).discard == DISAMBIGUATION, title
    for title in mediawiki.redirects:
        assert source.fetch(title).discard == REDIRECT, title
    assert source.fetch("No such page in the freshrag test wiki").discard == VANISHED


def test_fixture_started_well_within_five_minutes(mediawiki):
    """Install, import of 1,106 pages and server start took ~6 s here (2 cores); a regression
    to importDump's fsync-bound pace (4 minutes for the articles alone) should show."""
    assert mediawiki.startup_s < 120, f"local MediaWiki took {mediawiki.startup_s:.0f} s to start"
