"""The dump source on export files the test writes from the paper's released articles: creation
date from the first revision, text from the last, every compression, the pages that are not
articles, and dumps that break off part-way."""

import bz2
import json

import mwparserfromhell
import pytest

from freshrag.builders.sources.dump import DumpError, DumpSource, plain_text
from freshrag.builders.sources.pages import DISAMBIGUATION, REDIRECT
from freshrag.builders.sources.split_dump import read_pages
from freshrag.core.files import SymlinkError
from tests import WIKIRAG
from tests.support.links import PRECIOUS
from tests.support.wikidump import (
    STAND_IN_CREATED,
    DumpPage,
    Revision,
    article_pages,
    redirect_page,
    write_dump,
)

DATA = WIKIRAG
N = 12


def released(limit=N):
    with (DATA / "articles.jsonl").open(encoding="utf-8") as lines:
        return [json.loads(line) for _, line in zip(range(limit), lines)]


def collect(source, seen=()):
    """Every page the source yields, and the DumpError it ended with (or None)."""
    pages = []
    try:
        for page in source.pages(set(seen)):
            pages.append(page)
    except DumpError as err:
        return pages, err
    return pages, None


@pytest.mark.parametrize("suffix", [".xml", ".xml.bz2", ".xml.gz"])
def test_creation_date_is_the_first_revision_and_text_the_last(tmp_path, suffix):
    dump = write_dump(tmp_path / f"wiki{suffix}", article_pages(DATA / "articles.jsonl", N))
    pages, error = collect(DumpSource(dump))
    assert error is None
    rows = released()
    assert [p.title for p in pages] == [r["title"] for r in rows]
    for page_id, (page, row) in enumerate(zip(pages, rows), start=1):
        expected = (row["created"] or STAND_IN_CREATED).replace("+00:00", "Z")
        assert page.created == expected, page.title
        assert page.revision_id == 2 * page_id + 1  # the later, full revision
        last_sentence = row["content"].strip().split("\n")[-1].strip()
        assert last_sentence and last_sentence in page.content  # only the full revision has it
        assert page.discard is None
        assert page.url == "http://127.0.0.1/index.php/" + row["title"].replace(" ", "_")


def test_headings_survive_as_in_the_api_source(tmp_path):
    dump = write_dump(tmp_path / "wiki.xml", article_pages(DATA / "articles.jsonl", N))
    pages, _ = collect(DumpSource(dump))
    rows = {r["title"]: r for r in released()}
    with_headings = [p for p in pages if "\n== " in rows[p.title]["content"]]
    assert with_headings
    for page in with_headings:
        headings = [line for line in rows[page.title]["content"].split("\n")
                    if line.startswith("==")]
        assert all(heading.strip() in page.content.split("\n") for heading in headings)


def test_seen_titles_are_skipped(tmp_path):
    dump = write_dump(tmp_path / "wiki.xml", article_pages(DATA / "articles.jsonl", N))
    seen = {r["title"] for r in released()[::2]}
    pages, _ = collect(DumpSource(dump), seen)
    assert [p.title for p in pages] == [r["title"] for r in released()[1::2]]


def test_redirects_and_disambiguation_pages_are_discarded_other_namespaces_skipped(tmp_path):
    when = "2022-01-01T00:00:00Z"
    dab = DumpPage(900, "Mercury", [Revision(1800, when, "'''Mercury''' may refer to:\n"
                                                        "* [[Mercury (planet)]]\n"
                                                        "* [[Mercury (element)]]\n"
                                                        "{{Disambiguation}}")])
    template = DumpPage(901, "Template:Disambiguation", [Revision(1802, when, "dab box")], ns=10)
    pages = [*article_pages(DATA / "articles.jsonl", 2), redirect_page(902, "Old name", "X", when),
             dab, template]
    found, _ = collect(DumpSource(write_dump(tmp_path / "wiki.xml", pages)))
    discards = {p.title: p.discard for p in found}
    assert discards["Old name"] == REDIRECT and discards["Mercury"] == DISAMBIGUATION
    assert "Template:Disambiguation" not in discards
    assert [discards[r["title"]] for r in released(2)] == [None, None]


def test_a_current_only_dump_leaves_the_creation_date_unknown(tmp_path):
    text = "Body text. " * 200
    pages = [DumpPage(1, "Edited since", [Revision(55, "2023-02-02T00:00:00Z", text, parent_id=54)]),
             DumpPage(2, "Never edited", [Revision(60, "2023-03-03T00:00:00Z", text)])]
    found, _ = collect(DumpSource(write_dump(tmp_path / "current.xml.bz2", pages)))
    created = {p.title: p.created for p in found}
    # a revision with a parent is not the first one: the page's creation is not in this dump
    assert created == {"Edited since": None, "Never edited": "2023-03-03T00:00:00Z"}


def test_wikitext_becomes_prose():
    wikitext = ("{{Infobox settlement|name=Town|population=12}}\n"
                "'''Town''' is a [[Municipality|municipality]] in [[Norway]].<ref>Census 2020</ref>"
                "\n[[File:Town.jpg|thumb|The harbour]]\n\n\n\n== History ==\nFounded in 1850."
                "<!-- hidden note -->\n[[Category:Towns]]")
    text = plain_text(mwparserfromhell.parse(wikitext))
    assert "Town is a municipality in Norway." in text
    assert "\n== History ==\nFounded in 1850." in text
    for markup in ("Infobox", "population", "Census", "thumb", "harbour", "Category", "hidden",
                   "[[", "'''", "\n\n\n"):
        assert markup not in text, markup


def test_a_truncated_dump_keeps_complete_pages_and_says_where_it_broke(tmp_path):
    whole = write_dump(tmp_path / "whole.xml", article_pages(DATA / "articles.jsonl", N))
    xml = whole.read_bytes()
    eighth = xml.index(b"<title>" + released()[7]["title"].encode())
    cut = xml.rfind(b"<page>", 0, eighth) + 300  # inside the eighth page
    broken = write_dump(tmp_path / "broken.xml", article_pages(DATA / "articles.jsonl", N),
                        truncate_at=cut)
    pages, error = collect(DumpSource(broken))
    assert [p.title for p in pages] == [r["title"] for r in released(7)]
    message = str(error)
    assert str(broken) in message and "line" in message
    assert repr(released()[6]["title"]) in message  # the last complete page


def test_a_bz2_dump_cut_off_mid_stream_keeps_complete_pages(tmp_path):
    whole = write_dump(tmp_path / "whole.xml.bz2", article_pages(DATA / "articles.jsonl", 300))
    data = whole.read_bytes()
    broken = tmp_path / "broken.xml.bz2"
    broken.write_bytes(data[: len(data) * 2 // 3])  # a download that stopped
    pages, error = collect(DumpSource(broken))
    assert error is not None and str(broken) in str(error) and "bytes" in str(error)
    titles = [r["title"] for r in released(300)]
    assert 0 < len(pages) < 300
    assert [p.title for p in pages] == titles[: len(pages)]
    assert repr(pages[-1].title) in str(error)
    assert len(bz2.decompress(data)) > 0  # the whole file was a valid dump


@pytest.mark.parametrize("name, content, message", [
    ("notes.xml", b"just some notes\n", "broken"),
    ("other.xml", b"<rss><channel/></rss>", "not a MediaWiki export"),
    ("fake.xml.gz", b"not gzip at all", "broken"),
    ("wiki.json", b"{}", "expected a MediaWiki XML dump"),
])
def test_a_file_that_is_not_a_dump_is_named(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DumpError) as raised:
        collect_or_raise(DumpSource(path))
    assert str(path) in str(raised.value) and message in str(raised.value)


def test_a_missing_dump_is_named(tmp_path):
    with pytest.raises(DumpError, match="no such dump file"):
        DumpSource(tmp_path / "absent.xml.bz2")


def collect_or_raise(source):
    return list(source.pages(set()))


def test_a_split_dump_spool_planted_as_a_link_is_replaced(tmp_path, target):
    dump = write_dump(tmp_path / "wiki.xml", [DumpPage(1, "Bridge", [
        Revision(1, "2024-01-01T00:00:00Z", "A bridge over the river, long enough to keep.")])])
    spool = tmp_path / "pages-0.jsonl"
    spool.symlink_to(target)
    summary = read_pages(str(dump), str(spool))
    assert summary["error"] is None and not spool.is_symlink()
    assert target.read_text(encoding="utf-8") == PRECIOUS


def test_a_dump_written_over_a_link_is_refused(tmp_path, target):
    link = tmp_path / "wiki.xml.bz2"
    link.symlink_to(target)
    with pytest.raises(SymlinkError):
        write_dump(link, [])
    assert target.read_text(encoding="utf-8") == PRECIOUS
