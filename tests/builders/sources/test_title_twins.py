"""Titles in NFC (docs/building.md#titles): two pages of a dump whose titles differ only by
Unicode normalisation are one title to MediaWiki, so the builder keeps one article, in NFC, and
counts the other as `title_twin` in the funnel; links, the facts stage's wikitexts and a later
pass compare titles the same way."""

import unicodedata
from datetime import date

import pytest

from freshrag.builders.manifest import funnel
from freshrag.builders.sources.dump import DumpSource
from freshrag.builders.sources.pages import DUPLICATE_TITLE, TITLE_TWIN
from freshrag.builders.stages import ARTICLES, SAMPLE, BuildConfig, read_titles, sample_articles
from freshrag.core.jsonl import read_jsonl
from tests.support.wikidump import DumpPage, Revision, write_dump

NFC = "Café Mörtel"
NFD = unicodedata.normalize("NFD", NFC)
# each page links to the café in NFD, as a hand-typed link may write it
TEXT = ("The {0} opened in 2024 beside the [[" + NFD + "]] after a long debate in town. ") * 20


def dump(path, titles):
    pages = [DumpPage(i + 1, title, [Revision(10 * i + 1, "2024-03-01T12:00:00Z",
                                              TEXT.format(i))])
             for i, title in enumerate(titles)]
    return write_dump(path, pages)


def test_the_forms_differ_but_are_one_title():
    assert NFC != NFD and unicodedata.normalize("NFC", NFD) == NFC


@pytest.mark.parametrize("n", [None, 2], ids=["every-article", "reservoir"])
@pytest.mark.parametrize("order", [(NFD, NFC), (NFC, NFD)], ids=["nfd-first", "nfc-first"])
def test_twin_pages_give_one_article_and_a_counted_drop(tmp_path, order, n):
    source = DumpSource(dump(tmp_path / "wiki.xml", [*order, "Tarnholt Bridge"]))
    config = BuildConfig(out=tmp_path / "out", cutoff=date(2020, 1, 1), n=n)
    kept = sample_articles(source, config)
    assert sorted(kept) == [NFC, "Tarnholt Bridge"]  # the NFC form, whichever came first
    assert sorted(row["title"] for row in read_jsonl(config.out / ARTICLES)) == sorted(kept)
    counts = funnel(config.out)
    assert counts["n_r"] == 2 and counts["discarded_r"].get(TITLE_TWIN) == 1
    assert counts["sampled"] == 3
    assert read_titles(config.out, "A_r") == kept


def test_an_exact_second_page_is_still_a_duplicate_not_a_twin(tmp_path):
    source = DumpSource(dump(tmp_path / "wiki.xml", [NFD, NFD, NFC]))
    config = BuildConfig(out=tmp_path / "out", cutoff=date(2020, 1, 1),
                         n=None)
    assert sample_articles(source, config) == [NFC]
    discards = [row["discard"] for row in read_jsonl(config.out / SAMPLE)]
    assert discards == [None, DUPLICATE_TITLE, TITLE_TWIN]


def test_a_later_pass_finds_the_kept_page_by_its_nfc_title(tmp_path):
    source = DumpSource(dump(tmp_path / "wiki.xml", [NFD, "Tarnholt Bridge", NFC]))
    assert [title for title, _ in source.wikitexts([{"title": NFC}])] == [NFC]
    links = source.links([NFC, "Tarnholt Bridge"])
    assert [link.title for link in links["Tarnholt Bridge"]] == [NFC]  # the link's target in NFC
    assert links[NFC] == []  # its link to itself in NFD is a link to itself: no pair of twins
    assert [page.title for page in source.fetch_titles([NFC])] == [NFD]  # the first, as A_r kept
    assert [page.title for page in source.pages({NFC})] == ["Tarnholt Bridge"]
