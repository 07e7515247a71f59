"""XML dumps: truncated (plain and compressed), wrong roots, bad timestamps, missing elements.
`freshrag build --dump F --stage A_r` stops with exit status 2 naming the file and the last
complete page, having kept exactly the complete pages before the break; never a traceback."""

import bz2
import gzip
import json
import re
from pathlib import Path
from xml.sax.saxutils import escape

import mwtypes
from hypothesis import given, settings
from hypothesis import strategies as st

from freshrag.builders.sources.export import DumpPage, Revision, write_dump
from tests.fuzz.support import assert_no_calls, assert_refused, budget, invoke, scratch

# Characters XML 1.0 allows in text (an illegal one is a parse error, tested by the junk tests).
XML_TEXT = st.characters(codec="utf-8", exclude_categories=["Cc", "Cs"],
                         exclude_characters="<&\ufffe\uffff")
TITLES = ["Alpha Bridge", "Beta Tower", "Gamma Festival", "Delta Station"]
TEXT = "The {0} opened in 2024 after a long debate in the town council. " * 30  # > 1,000 chars


def pages() -> list[DumpPage]:
    return [DumpPage(i + 1, title, [
        Revision(10 * i + 1, f"2024-0{i + 1}-01T12:00:00Z", TEXT.format(title)[:600]),
        Revision(10 * i + 2, f"2024-0{i + 1}-20T12:00:00Z", TEXT.format(title), parent_id=10 * i + 1)])
        for i, title in enumerate(TITLES)]


def whole_dump(directory: Path) -> bytes:
    return write_dump(directory / "whole.xml", pages()).read_bytes()


def build(directory: Path, dump: Path):
    return invoke("build", "--dump", dump, "--cutoff", "2020-01-01", "--out", directory / "out",
                  "--stage", "A_r")


def kept(directory: Path) -> list[str]:
    path = directory / "out" / "articles.jsonl"
    return [json.loads(line)["title"] for line in path.read_text().splitlines()] if path.exists() else []


def assert_stopped_keeping(directory: Path, result, dump: Path, complete: int) -> None:
    """Refused naming the dump and where it broke, the first `complete` pages kept, no more."""
    after = (f"the last complete page was {TITLES[complete - 1]!r}" if complete
             else "before its first complete page")
    assert_refused(result, dump, after)
    assert kept(directory) == TITLES[:complete]
    assert not (directory / "out" / "A_r.txt").exists()  # the stage did not finish


@settings(max_examples=budget(60))
@given(at=st.floats(0, 1))
def test_a_truncated_dump_keeps_exactly_the_complete_pages(server, at):
    with scratch(server) as (tmp, _):
        whole = whole_dump(tmp)
        cut = int(at * (len(whole) - 2))  # "</mediawiki>" itself cut at least by a byte
        dump = tmp / "cut.xml"
        dump.write_bytes(whole[:cut])
        complete = sum(m.end() <= cut for m in re.finditer(rb"</page>", whole))
        assert_stopped_keeping(tmp, build(tmp, dump), dump, complete)
        assert_no_calls(server)


@settings(max_examples=budget(20))
@given(suffix=st.sampled_from([".xml.bz2", ".xml.gz"]), at=st.floats(0, 1))
def test_a_truncated_compressed_dump_keeps_a_prefix_of_the_pages(server, suffix, at):
    with scratch(server) as (tmp, _):
        compressed = (bz2.compress if suffix.endswith("bz2") else gzip.compress)(whole_dump(tmp))
        dump = tmp / f"cut{suffix}"
        dump.write_bytes(compressed[:int(at * (len(compressed) - 1))])
        result = build(tmp, dump)
        assert_refused(result, dump)
        assert kept(tmp) == TITLES[:len(kept(tmp))]


@settings(max_examples=budget(30))
@given(root=st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True).filter(lambda r: r != "mediawiki"),
       inner=st.text(XML_TEXT, max_size=30))
def test_a_document_that_is_not_an_export_is_refused(server, root, inner):
    with scratch(server) as (tmp, _):
        dump = tmp / "other.xml"
        dump.write_text(f"<{root}>{escape(inner)}</{root}>", encoding="utf-8")
        assert_refused(build(tmp, dump), dump, f"not a MediaWiki export (root element <{root}>")
        assert kept(tmp) == []


@settings(max_examples=budget(40))
@given(junk=st.binary(max_size=300))
def test_bytes_that_are_not_xml_are_refused(server, junk):
    with scratch(server) as (tmp, _):
        dump = tmp / "junk.xml.gz"
        dump.write_bytes(junk)
        assert_refused(build(tmp, dump), dump)
        assert kept(tmp) == []


def not_a_timestamp(text: str) -> bool:
    try:
        mwtypes.Timestamp(text)
    except (ValueError, TypeError):
        return True
    return False


@settings(max_examples=budget(40))
@given(page=st.integers(0, len(TITLES) - 1), first=st.booleans(),
       stamp=st.text(XML_TEXT, max_size=25)
       .filter(not_a_timestamp))
def test_a_bad_timestamp_stops_at_its_page(server, page, first, stamp):
    with scratch(server) as (tmp, _):
        whole = whole_dump(tmp).decode()
        good = f"2024-0{page + 1}-{'01' if first else '20'}T12:00:00Z"
        dump = tmp / "stamp.xml"
        dump.write_text(whole.replace(f"<timestamp>{good}</timestamp>",
                                      f"<timestamp>{escape(stamp)}</timestamp>"), encoding="utf-8")
        result = build(tmp, dump)
        assert_stopped_keeping(tmp, result, dump, page)
        assert "malformed page" in result.err


ELEMENTS = ["title", "ns", "id", "revision", "timestamp", "text", "contributor", "siteinfo", "parentid"]


@settings(max_examples=budget(60))
@given(element=st.sampled_from(ELEMENTS), page=st.integers(0, len(TITLES) - 1),
       occurrence=st.integers(0, 1))
def test_a_missing_element_ends_in_a_named_error_or_a_dropped_page(server, element, page, occurrence):
    with scratch(server) as (tmp, _):
        whole = whole_dump(tmp).decode()
        start = whole.index(f"<title>{TITLES[page]}</title>") if element != "siteinfo" else 0
        matches = [m for m in re.finditer(rf"\s*<{element}[ >].*?</{element}>", whole[start:], re.S)]
        if not matches:
            return
        match = matches[min(occurrence, len(matches) - 1)]
        dump = tmp / "missing.xml"
        dump.write_text(whole[:start + match.start()] + whole[start + match.end():], encoding="utf-8")
        result = build(tmp, dump)
        assert result.status in (0, 2) and "Traceback" not in result.err, result
        titles = kept(tmp)
        if result.status == 2:
            assert_refused(result, dump)
            assert titles == TITLES[:len(titles)]
        else:
            assert [t for t in TITLES if t in titles] == titles  # in dump order, each once
            assert (tmp / "out" / "A_r.txt").exists()
