"""`freshrag build --style changed` on a history dump of pages with dated revisions: the field that
changed after the cutoff becomes a question with both values and revisions, the vandalised and
reverted one, the unchanged one, the value written otherwise, the infobox that does not parse and
the page created after the cutoff are dropped and counted; bad histories (missing, truncated,
cut off, a revision without a timestamp) are counted drops, never a traceback; a history of
100,000 revisions is read with flat memory."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date, datetime, timezone

import pytest

from freshrag.builders.sources.history import Revision, api_revision, dump_histories
from freshrag.builders.styles.changed import CHANGES
from freshrag.builders.styles.changes import Window, compare, infobox_text
from freshrag.core.jsonl import read_jsonl
from tests import ROOT
from tests.support.builds import listed_build
from tests.support.changed_pages import CUTOFF, PAGES, text, write_long_history, write_pages
from tests.support.wikidump import write_dump


@pytest.fixture
def built(tmp_path, fake):
    dump = write_pages(tmp_path / "history.xml")
    out = tmp_path / "changed"
    code = listed_build(["--dump", str(dump), "--history-dump", str(dump), "--style", "changed",
                         "--questions-from", "A_r", "--cutoff", CUTOFF, "--out", str(out),
                         "--questions-per-article", "3"])
    assert code == 0
    return out


def test_a_changed_field_becomes_a_question_with_both_values_and_revisions(built):
    [question] = read_jsonl(built / "questions.jsonl")
    assert question["title"] == "Springfield" and question["field"] == "population_total"
    assert question["question"] == "What is the current population total of Springfield?"
    assert (question["value_then"], question["value_now"], question["reference"]) == (
        "4,812", "5,020", "5,020")
    assert question["then_revision"] == {"id": 102, "timestamp": "2023-06-29T10:00:00Z"}
    assert question["now_revision"] == {"id": 105, "timestamp": "2024-03-01T10:00:00Z"}
    assert question["changed_at"] == "2024-01-15T10:00:00Z"  # the revision that set 5,020
    assert question["change"] == "slow" and question["changes"] == 1


def test_every_other_page_and_field_is_dropped_and_counted(built):
    funnel = json.loads((built / "manifest.json").read_text())["funnel"]["changed"]
    assert funnel["pages"] == len(PAGES)
    assert funnel["pages_dropped"] == {"infobox_unparsed": 1, "created_after_cutoff": 1}
    assert funnel["dropped"] == {"reverted": 1, "same_value": 1}
    assert funnel["questions"] == {"slow": 1} and funnel["unparsed_revisions"] == 1
    rows = {row["title"]: row for row in read_jsonl(built / CHANGES)}
    [reverted] = rows["Springfield"]["changed"][:1]
    assert (reverted["field"], reverted["value_then"], reverted["value_now"]) == (
        "leader_name", "Ann Smith", "Ann Smith")
    assert rows["Shelbyville"]["changed"] == []  # vandalised after the cutoff, reverted
    assert rows["Shelbyville"]["unchanged"] == 4
    [same] = rows["Ogdenville"]["changed"]
    assert (same["value_then"], same["value_now"], same["dropped"]) == ("3,100", "3100",
                                                                        "same_value")


def test_another_style_source_without_histories_is_refused_naming_the_option(tmp_path, fake,
                                                                               capsys):
    dump = write_pages(tmp_path / "pages.xml")
    code = listed_build(["--dump", str(dump), "--style", "changed", "--questions-from", "A_r",
                         "--cutoff", CUTOFF, "--out", str(tmp_path / "d")])
    assert code != 0
    assert "--history-dump" in capsys.readouterr().err


def test_a_history_dump_with_another_style_is_refused(tmp_path, fake, capsys):
    dump = write_pages(tmp_path / "pages.xml")
    code = listed_build(["--dump", str(dump), "--history-dump", str(dump), "--cutoff", CUTOFF,
                         "--out", str(tmp_path / "d")])
    assert code != 0 and "goes with --style changed" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_questions_from_a_stage_after_the_cutoff_is_refused(tmp_path, fake, capsys):
    dump = write_pages(tmp_path / "pages.xml")
    code = listed_build(["--dump", str(dump), "--history-dump", str(dump), "--style", "changed",
                         "--cutoff", CUTOFF, "--out", str(tmp_path / "d")])
    assert code != 0
    assert "--questions-from A_r" in capsys.readouterr().err


WINDOW = Window(date(2023, 6, 30))


def revision(number: int, stamp: str | None, wikitext: str, parent: int | None = None
             ) -> Revision:
    moment = datetime.fromisoformat(stamp).replace(tzinfo=timezone.utc) if stamp else None
    return Revision(number, parent, moment, wikitext)


def test_a_value_vandalised_at_the_cutoff_is_the_value_it_hid():
    revisions = [revision(1, "2020-01-01", text("10", "Ann Smith")),
                 revision(2, "2023-06-29", text("10", "Joe Vandal"), 1),
                 revision(3, "2023-07-02", text("10", "Ann Smith"), 2),
                 revision(4, "2024-01-01", text("10", "Bob Jones"), 3)]
    [leader] = compare("T", revisions, WINDOW)["changed"]
    assert (leader["value_then"], leader["value_now"], leader["dropped"]) == (
        "Ann Smith", "Bob Jones", None)
    assert leader["changes"] == 1  # the vandalism and its revert are no change


def test_a_field_that_changes_often_is_fast():
    revisions = [revision(n, f"2023-{n:02d}-15", text(str(n), "Ann Smith"), n - 1 or None)
                 for n in range(1, 13)]
    [population] = compare("T", revisions, WINDOW)["changed"]
    assert population["change"] == "fast" and population["changes"] == 11


@pytest.mark.parametrize("revisions, reason", [
    pytest.param([], "history_missing", id="missing"),
    pytest.param([revision(7, "2024-01-01", text("1", "A"), parent=6)], "history_truncated",
                 id="starts-after-the-cutoff-with-a-parent"),
    pytest.param([revision(1, "2020-01-01", text("1", "A")), revision(2, None, text("2", "A"), 1)],
                 "revision_without_timestamp", id="no-timestamp"),
    pytest.param([revision(1, "2020-01-01", text("1", "A")),
                  revision(2, "2024-01-01", "{{Infobox settlement | population_total = 2", 1)],
                 "infobox_unparsed", id="infobox-never-closes"),
    pytest.param([revision(1, "2020-01-01", "No box."), revision(2, "2024-01-01", "None.", 1)],
                 "no_infobox", id="no-infobox"),
    pytest.param([revision(1, "2020-01-01", text("1", "A"))], "no_edit_after_cutoff",
                 id="not-edited-since"),
])
def test_a_bad_history_is_a_counted_drop(revisions, reason):
    row = compare("Page", revisions, WINDOW)
    assert row["dropped"] == reason and row["changed"] == []


def test_an_api_revision_without_timestamp_or_content_is_read_as_such():
    read = api_revision({"revid": 5, "parentid": 4, "slots": {"main": {"texthidden": True}}})
    assert read == Revision(5, 4, None, None)


def test_a_history_dump_cut_off_mid_page_truncates_that_page_and_misses_the_rest(tmp_path):
    path = write_dump(tmp_path / "cut.xml", PAGES, truncate_at=9_000)
    window = Window(date(2023, 6, 30))
    rows = [compare(title, revisions, window) for title, revisions in
            _until_broken(dump_histories(path, {page.title for page in PAGES}))]
    assert rows[-1]["dropped"] == "history_truncated"
    assert "breaks off" in rows[-1]["detail"] and rows[-1]["title"] in rows[-1]["detail"]


def _until_broken(histories):
    from freshrag.builders.sources.history import HistoryBroken
    try:
        yield from histories
    except HistoryBroken:
        return


def test_infobox_text_cuts_out_nested_templates_and_knows_an_open_one():
    wikitext = "{{Infobox x\n| a = {{Start date|2020|1|2}}\n}}\nText {{cite|y}}"
    assert infobox_text(wikitext) == "{{Infobox x\n| a = {{Start date|2020|1|2}}\n}}"
    assert infobox_text("{{Infobox x | a = {{b}}") is None
    assert infobox_text("No box.") == ""


LONG = 100_000
MEASURE = """
import resource, sys
from datetime import date
from pathlib import Path
from freshrag.builders.sources.history import dump_histories
from freshrag.builders.styles.changes import Window, compare
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for title, revisions in dump_histories(Path(sys.argv[1]), {"Long Town"}):
    row = compare(title, revisions, Window(date(2020, 1, 1), history_days=3650))
[field] = row["changed"]
print(row["revisions"], field["changes"], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


def test_a_history_of_100000_revisions_is_read_in_flat_memory(tmp_path):
    """Memory grows by less than a tenth of the history's text (about 50 MB as XML)."""
    path = tmp_path / "long.xml"
    with path.open("w", encoding="utf-8") as out:
        write_long_history(out, LONG)
    done = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    revisions, changes, grown_kib = map(int, done.stdout.split())
    assert revisions == LONG and changes == LONG // 1000
    assert grown_kib * 1024 < path.stat().st_size / 10, (grown_kib, path.stat().st_size)
