"""Stage `facts` (builders/styles/facts.py): infobox fields parsed from wikitext into facts.sqlite, from a
dump of the example articles (which carry infoboxes) through `freshrag build`."""

import json
import sqlite3

import pytest

from freshrag.builders.styles.facts import FACTS, infobox_facts
from freshrag.cli.commands.demo import write_example_dump
from freshrag.cli.main import main
from freshrag.core.dataset import example_dir


def facts_of(wikitext):
    return {(f.infobox, f.field): f.value for f in infobox_facts("T", None, wikitext)}


@pytest.mark.parametrize("wikitext, expected", [
    pytest.param("{{Infobox bridge\n| crosses = [[Sallow Firth]]\n}}\nText.",
                 {("bridge", "crosses"): "Sallow Firth"}, id="link-as-text"),
    pytest.param("{{Infobox bridge|opened={{Start date|2026|3|14|df=y}}}}",
                 {("bridge", "opened"): "2026-03-14"}, id="date-template"),
    pytest.param("{{Infobox person|death_date={{Death date and age|1891|11|9|1823|2|17}}}}",
                 {("person", "death_date"): "1891-11-09"}, id="death-date-and-age"),
    pytest.param("{{Infobox person|known_for=A map<ref>Published 1654.</ref> <!-- x -->}}",
                 {("person", "known_for"): "A map"}, id="ref-and-comment-dropped"),
    pytest.param("{{Infobox person|image=A.jpg|caption=Him|name=}}", {}, id="ignored-and-empty"),
    pytest.param("{{Infobox rail line|Line Length=14.6 km}}",
                 {("rail line", "line_length"): "14.6 km"}, id="field-name-normalised"),
    pytest.param("{{infobox_Film|director=X}}", {("film", "director"): "X"}, id="type-case"),
    pytest.param("{{Infobox bridge|positional}}", {}, id="positional-parameter"),
    pytest.param("{{Cite web|title=Infobox}} no infobox here", {}, id="not-an-infobox"),
    pytest.param("{{Quote|{{Infobox film|director=X}}}}", {}, id="nested-not-top-level"),
    pytest.param("{{Infobox film|director=X}}{{Infobox person|occupation=Y}}",
                 {("film", "director"): "X", ("person", "occupation"): "Y"}, id="two-infoboxes"),
])
def test_infobox_facts(wikitext, expected):
    assert facts_of(wikitext) == expected


def test_normalised_value_is_stored_beside_the_value():
    fact, = infobox_facts("T", "2026-01-01", "{{Infobox event|finishers=4,812}}")
    assert (fact.article, fact.created, fact.value, fact.normalised) == \
        ("T", "2026-01-01", "4,812", "4812")


def test_build_writes_the_fact_table_of_the_example_dump(tmp_path, capsys):
    dump = write_example_dump(tmp_path / "example.xml")
    out = tmp_path / "dataset"
    assert main(["build", "--dump", str(dump), "--cutoff", "2025-12-31", "--out", str(out),
                 "--stage", "A_r"]) == 0
    assert not (out / FACTS).exists()
    # the facts stage of a resumed build reads the source the manifest names
    assert main(["build", "--cutoff", "2025-12-31", "--out", str(out), "--stage", "facts"]) == 0
    infoboxes = json.loads((example_dir() / "infoboxes.json").read_text())
    with sqlite3.connect(out / FACTS) as db:
        rows = db.execute("SELECT article, created, infobox, field, value, normalised "
                          "FROM facts").fetchall()
    assert {row[0] for row in rows} == set(infoboxes)
    assert ("Marrowgate Tidal Crossing", "2026-04-22T10:15:00Z", "bridge", "opened",
            "2026-03-14", "2026-03-14") in rows
    assert ("2026 Tarnholt Marathon", "finishers", "4,812", "4812") in \
        {(r[0], r[3], r[4], r[5]) for r in rows}
    counts = json.loads((out / "manifest.json").read_text())["funnel"]["facts"]
    assert counts == {"articles_read": 40, "articles_with_infobox": len(infoboxes),
                      "fields": len({r[3] for r in rows}), "values": len(rows)}
    assert "facts: 40 articles_read" in capsys.readouterr().out


def test_the_facts_stage_refuses_another_source_than_the_sample(tmp_path, capsys):
    dump = write_example_dump(tmp_path / "example.xml")
    other = write_example_dump(tmp_path / "other.xml")
    out = tmp_path / "dataset"
    assert main(["build", "--dump", str(dump), "--cutoff", "2025-12-31", "--out", str(out),
                 "--stage", "A_r"]) == 0
    assert main(["build", "--dump", str(other), "--cutoff", "2025-12-31", "--out", str(out),
                 "--stage", "facts"]) == 2
    err = capsys.readouterr().err
    assert f"sampled from {dump}, not {other}" in err
    assert not (out / FACTS).exists()
