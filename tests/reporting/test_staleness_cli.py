"""A changed-facts set end to end with the fake server as every model: `freshrag build --style
changed` from a history dump, `freshrag run` of baseline, naive and boolean (whose answer model
gives the value now when its context states it, else the value it remembers, the value then),
`freshrag score --scorers staleness`, and `freshrag report --by change`, which prints the staleness
section (and again by tag): the baseline stale, naive current, its memory never winning over the
passage, and the decider judged against what the baseline knew."""

from __future__ import annotations

import html
import json

from freshrag.cli.main import main
from freshrag.core.jsonl import read_jsonl
from freshrag.reporting import staleness
from tests.support.builds import listed_build
from tests.support.changed_pages import CUTOFF, write_pages
from tests.support.fake_openai_server import default_reply, forced_tool_name


def answering(request: dict) -> dict:
    """The answer model: the value now if the request shows it, else the value then (a text
    reply to a decider's unforced call: it answers without searching)."""
    if forced_tool_name(request) is not None or "input" in request:
        return default_reply(request)
    shown = " ".join(str(message.get("content")) for message in request["messages"])
    return {"content": "It has 5,020 inhabitants." if "5,020" in shown
            else "It has 4,812 inhabitants."}


def test_build_run_score_and_report_a_changed_facts_set(tmp_path, fake_server, capsys,
                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    fake_server(reply=answering)
    dump = write_pages(tmp_path / "history.xml")
    data, run = tmp_path / "changed", tmp_path / "run"
    assert listed_build(["--dump", str(dump), "--history-dump", str(dump), "--style", "changed",
                         "--questions-from", "A_r", "--cutoff", CUTOFF, "--out", str(data)]) == 0
    assert main(["run", "--dataset", str(data), "--systems", "baseline,naive,boolean",
                 "--out",
                 str(run), "--no-probe"]) == 0
    rows = list(read_jsonl(run / "samples.jsonl"))
    assert {(row["value_then"], row["reference"], row["change"]) for row in rows} == {
        ("4,812", "5,020", "slow")}
    assert main(["score", str(run), "--scorers", "staleness"]) == 0
    capsys.readouterr()
    page = tmp_path / "report.html"
    assert main(["report", str(run), "--out", str(tmp_path / "report"), "--html", str(page),
                 "--by", "change"]) == 0
    printed = capsys.readouterr().out
    assert "### Changed facts: answers giving the value now" in printed
    assert "answered current; memory over context: stale among answers whose context states " \
           "the value now, by change\n\n| change | dataset | system |" in printed
    shown = page.read_text(encoding="utf-8")  # the page shows the section too, with its note
    assert '<section id="changed">' in shown and 'id="changed-staleness"' in shown
    assert html.escape(staleness.NOTE) in shown and 'id="by-change-staleness"' in shown
    analysis = json.loads((tmp_path / "report" / "analysis.json").read_text())
    table = {row["system"]: row for row in analysis["staleness"]}
    assert table["baseline"]["stale"][0] == 1.0 and table["naive"]["current"][0] == 1.0
    assert table["naive"]["fixed"][0] == 1.0
    assert table["naive"]["new_retrieved"] == 1 and table["naive"]["memory_over_context"][0] == 0
    # one slow fact: its group's table is the whole one, the tag first
    by_change = analysis["breakdowns"]["change"]["tables"]["staleness"]
    assert by_change == [{"change": "slow", **row} for row in analysis["staleness"]]
    # the decider answers from memory what the baseline did not know: a stale answer given
    # without retrieving
    [boolean] = analysis["known_decisions"]
    assert (boolean["system"], boolean["known"], boolean["retrieved"]) == ("boolean", 0, 0)
    assert boolean["recall"][0] == 0 and boolean["stale_unretrieved"] == 1
