"""What the builder writes, the runner reads (docs/faults.md#files-freshrag-reopens): small XML
dumps with generated titles (repeated, repeated in NFD, blank, holding U+2028, U+0085, tabs or
line breaks), built whole by `freshrag build --dump`, give a dataset the run's reader accepts, and
every page of the dump is either an article or a counted discard, never lost without a word."""

from __future__ import annotations

import json
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from freshrag.builders.sources.export import DumpPage, Revision, write_dump
from freshrag.core.dataset import load_dataset_dir
from freshrag.core.titles import title_form
from tests.fuzz.support import budget, invoke, scratch

# Characters XML 1.0 allows in text, and the separators and blanks a title may hold besides.
XML_TEXT = st.characters(codec="utf-8", exclude_categories=["Cc", "Cs"],
                         exclude_characters="<&\ufffe\uffff")
SEPARATORS = st.sampled_from(["\u2028", "\u2029", "\u0085", "\n", "\t", " ", "\u00a0", "\r"])
TITLES = st.text(st.one_of(XML_TEXT, SEPARATORS), min_size=1, max_size=12)
LONG = "The {0} opened in 2024 after a long debate in the town council. " * 30  # > 1,000 chars


def page(i: int, title: str, long: bool) -> DumpPage:
    text = LONG.format(i) if long else f"A stub about page {i}."
    return DumpPage(i + 1, title, [Revision(10 * i + 1, "2024-03-01T12:00:00Z", text[:500]),
                                   Revision(10 * i + 2, "2024-03-20T12:00:00Z", text,
                                            parent_id=10 * i + 1)])


@settings(max_examples=budget(25))
@given(pages=st.lists(st.tuples(TITLES, st.booleans()), min_size=1, max_size=6),
       repeat=st.lists(st.integers(0, 5), max_size=3), twins=st.lists(st.integers(0, 5),
                                                                      max_size=2))
def test_a_built_dump_is_a_dataset_the_run_reads(server, pages, repeat, twins):
    titles = [title for title, _ in pages] + [pages[i % len(pages)][0] for i in repeat] + [
        unicodedata.normalize("NFD", "Café " + pages[i % len(pages)][0]) for i in twins] + [
        "Café " + pages[i % len(pages)][0] for i in twins]
    longs = [long for _, long in pages] + [True] * (len(repeat) + 2 * len(twins))
    with scratch(server) as (tmp, _):
        dump = write_dump(tmp / "wiki.xml", [page(i, t, long) for i, (t, long)
                                              in enumerate(zip(titles, longs))])
        result = invoke("build", "--dump", dump, "--cutoff", "2020-01-01", "--out", tmp / "out")
        assert "Traceback" not in result.err, result.err
        # as the XML parser returns them, in NFC: twins are one title (docs/building.md#titles)
        read_back = [title_form(p.title) for p in _dump_titles(dump)]
        usable = [t for i, t in enumerate(read_back) if t.strip() and "\n" not in t
                  and t not in read_back[:i]]
        long_ones = [t for t in usable if longs[read_back.index(t)]]
        if not long_ones:  # nothing to build on: refused by name (2), or no question written (1)
            assert result.status in (1, 2), result
            return
        assert result.status == 0, result
        funnel = json.loads((tmp / "out" / "manifest.json").read_text())["funnel"]
        assert funnel["n_r"] + sum(funnel["discarded_r"].values()) == len(titles)
        dataset = load_dataset_dir(tmp / "out")  # the run's reader: raises on what it refuses
        assert sorted(dataset.articles) == sorted(long_ones)
        assert sorted(q.gold_title for q in dataset.questions) == sorted(long_ones)


def _dump_titles(dump):
    from freshrag.builders.sources.dump import DumpSource

    return list(DumpSource(dump).pages(set()))
