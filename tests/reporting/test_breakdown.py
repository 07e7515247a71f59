"""`freshrag report --by FIELD`: every table broken down by a question field, in markdown, JSON
(summary.json, analysis.json), the HTML page (parsed here, and rendered by headless Chromium in
the integration test) and the per-field histograms."""

from __future__ import annotations

import contextlib
import io
import json
import re
from typing import Any

import pytest

from freshrag.cli.main import main
from freshrag.core.jsonl import JsonlWriter
from freshrag.core.samples import SAMPLES
from freshrag.reporting import breakdown
from freshrag.reporting.table import tables
from tests.support.dom import chromium, dump_dom, parse, viewer_samples
from tests.support.rows import summaries
from tests.support.runs import sample_rows

LABELS = {"q1": "fact_single", "q2": "fact_single", "q3": "summary"}  # q4 and A_r: none
NEEDS = {"r1": "dates", "r2": "people"}


def labelled_rows() -> list[dict[str, Any]]:
    """The HTML report's rows (baseline, naive, boolean on A_f q1..q4 and A_r r1..r2) with the
    question fields a labelled set gives, null where it gives none, as the runner writes them."""
    return [{**r, "label": LABELS.get(r["question_id"]),
             "information_need": NEEDS.get(r["question_id"]),
             "need": r["question_id"] != "q2"} for r in sample_rows()]


def table(document, key, **match):
    return [entry for entry in document["tables"][key]
            if all(entry.get(k) == v for k, v in match.items())]


def test_groups_in_label_order_with_the_unlabelled_last():
    document = breakdown.breakdown(summaries(labelled_rows()), "label")
    assert document["groups"] == {"fact_single": 2, "summary": 1, "unlabelled": 3}
    summary = table(document, "summary", system="baseline", dataset="A_f")
    assert [(e["label"], e["n"], e["truthfulness"]) for e in summary] == [
        ("fact_single", 2, 3.0), ("summary", 1, 3.0), ("unlabelled", 1, 4.0)]  # q1 2, q2 4; q3 3


def test_every_table_of_the_report_is_broken_down():
    document = breakdown.breakdown(summaries(labelled_rows()), "label")
    assert [table.key for table in breakdown.broken_down()] == ["summary"] + [
        table.key for table in tables()]
    for key in ("summary", "intervals", "retrieval", "attribution", "decisions", "cost"):
        assert {e["label"] for e in document["tables"][key]} >= {"fact_single", "unlabelled"}, key
    assert all(next(iter(e)) == "label" for t in document["tables"].values() for e in t)


def test_scores_tokens_and_hit_rates_carry_intervals():
    document = breakdown.breakdown(summaries(labelled_rows()), "label")
    [naive] = table(document, "intervals", label="fact_single", system="naive")
    assert naive["truthfulness"] == [5.0, 5.0, 5.0] and naive["input_tokens"] == [1000, 1000, 1000]
    [boolean] = table(document, "retrieval", label="fact_single", system="boolean")
    assert boolean["retrieved"] == 1 and boolean["hit@1"] == [0.0, 0.0, 0.0]
    assert boolean["hit@k"] == [1.0, 1.0, 1.0] and boolean["mrr"] == [0.5, 0.5, 0.5]
    [mixed] = table(document, "retrieval", label="unlabelled", system="naive", dataset="A_r")
    assert mixed["hit@1"] == [1.0, 1.0, 1.0]
    [lows] = table(document, "attribution", label="fact_single", system="baseline")
    assert (lows["fine"], lows["knowledge_gap"]) == (1, 1)  # q1 scored 2+2, q2 4+4


def test_decisions_are_judged_within_each_group():
    document = breakdown.breakdown(summaries(labelled_rows()), "label")
    router = table(document, "decisions", label="fact_single", system="oracle-router")
    assert [(e["questions"], e["needed"]) for e in router] == [(2, 2)]  # naive beat baseline
    [boolean] = table(document, "decisions", label="fact_single", system="boolean")
    assert (boolean["needed"], boolean["retrieved"], boolean["recall"]) == (2, 1, 0.5)


def test_a_boolean_field_is_named_yes_and_no():
    document = breakdown.breakdown(summaries(labelled_rows()), "need")
    assert document["groups"] == {"yes": 5, "no": 1}


def test_a_field_no_row_carries_gives_a_note_and_no_tables():
    document = breakdown.breakdown(summaries(sample_rows()), "label")  # rows from before the fields
    assert document["groups"] == {} and not any(document["tables"].values())
    assert document["notes"] == ["no question of these runs carries `label`: nothing to break down"]
    assert breakdown.render(document) == ("## By label\n\n### Notes\n\n- no question of these "
                                          "runs carries `label`: nothing to break down")


def test_render_has_a_section_per_table_with_the_field_first():
    text = breakdown.render(breakdown.breakdown(summaries(labelled_rows()), "information_need"))
    assert text.startswith("## By information_need: dates (1 questions), people (1 questions), "
                           "unlabelled (4 questions)")
    assert "### Means and token totals with 95% bootstrap intervals (tokens: answered pairs), " \
           "by information_need\n\n| information_need | dataset | system |" in text
    assert re.search(r"\| dates \| A_r \| naive \| 1 \| 3 \| 1\.00 \[1\.00, 1\.00\]", text)


# --------------------------------------------------------------------------- the command


@pytest.fixture(scope="module")
def reported(tmp_path_factory) -> dict[str, Any]:
    run_dir = tmp_path_factory.mktemp("run")
    writer = JsonlWriter(run_dir / SAMPLES)
    for r in labelled_rows():
        writer.write(r)
    writer.close()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["report", str(run_dir), "--by", "label", "--by", "information_need",
                     "--html", str(run_dir / "report.html")])
    return {"code": code, "stdout": out.getvalue(), "dir": run_dir,
            "page": (run_dir / "report.html").read_text(encoding="utf-8")}


def test_the_report_prints_each_breakdown_after_the_analysis(reported):
    stdout = reported["stdout"]
    assert reported["code"] == 0
    assert stdout.index("### Paired comparisons") < stdout.index("## By label") \
        < stdout.index("## By information_need")
    assert "### Scores, tokens and failures, by label\n\n| label | dataset | system | n |" in stdout


def test_summary_and_analysis_json_hold_the_breakdowns(reported):
    summary = json.loads((reported["dir"] / "summary.json").read_text())
    assert set(summary["breakdowns"]) == {"label", "information_need"}
    assert {e["label"] for e in summary["breakdowns"]["label"]} == {
        "fact_single", "summary", "unlabelled"}
    assert len(summary["rows"]) == 6  # the whole report's rows are unchanged
    details = json.loads((reported["dir"] / "analysis.json").read_text())
    assert details["breakdowns"]["information_need"]["groups"] == {
        "dates": 1, "people": 1, "unlabelled": 4}


def test_histograms_per_label_are_written(reported):
    names = sorted(p.name for p in reported["dir"].glob("hist-by-label-*.png"))
    assert names == ["hist-by-label-A_f-baseline.png", "hist-by-label-A_f-boolean.png",
                     "hist-by-label-A_f-naive.png", "hist-by-label-A_r-baseline.png",
                     "hist-by-label-A_r-boolean.png", "hist-by-label-A_r-naive.png"]


def test_json_and_csv_formats(tmp_path, capsys):
    writer = JsonlWriter(tmp_path / SAMPLES)
    for r in labelled_rows():
        writer.write(r)
    writer.close()
    assert main(["report", str(tmp_path), "--by", "label", "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert {e["label"] for e in printed["breakdowns"]["label"]} == {
        "fact_single", "summary", "unlabelled"}
    assert main(["report", str(tmp_path), "--by", "kind", "--format", "csv"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("dataset,system,n,")
    assert "the tables by kind are in" in captured.err


def test_an_unknown_field_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["report", str(tmp_path), "--by", "reference"])
    assert exit_.value.code == 2 and "argument --by: invalid choice: 'reference'" in \
        capsys.readouterr().err


def check_breakdown_page(dom) -> None:
    nav = [a.attrs["href"] for a in dom.find_all("nav")[0].find_all("a")]
    assert "#by-label" in nav and "#by-information_need" in nav
    summary = dom.by_id("by-label-summary").rows()
    assert [tuple(cells[:3]) for cells in summary][:3] == [
        ("fact_single", "A_f", "baseline"), ("fact_single", "A_f", "naive"),
        ("fact_single", "A_f", "boolean")]
    for cells in dom.by_id("by-label-intervals").rows():
        if cells[3] != "–":
            assert re.fullmatch(r"[\d.,]+ \[[\d.,]+, [\d.,]+\]", cells[3]), cells
    assert dom.by_id("by-information_need-retrieval").tag == "table"
    fields = viewer_samples(dom)[0]["record"]["question_fields"]  # shown with each answer
    assert fields == {"label": "fact_single", "need": "yes"}


def test_the_page_has_a_section_per_field(reported):
    check_breakdown_page(parse(reported["page"]))


@pytest.mark.integration
def test_chromium_renders_the_breakdown_sections(reported, tmp_path):
    page = tmp_path / "page.html"
    page.write_text(reported["page"], encoding="utf-8")
    stdout, stderr, code = dump_dom(chromium(), page, tmp_path / "profile")
    assert code == 0, stderr[-2000:]
    check_breakdown_page(parse(stdout))


def test_a_group_s_value_in_the_heading_is_escaped():
    text = breakdown.render({"field": "information_need", "groups": {"<b>votes</b>\n| x": 2},
                             "tables": {}, "notes": []})
    heading, empty = text.split("\n\n")
    assert heading == "## By information_need: &lt;b&gt;votes&lt;/b&gt; \\| x (2 questions)"
    assert empty.startswith("Nothing to show in: intervals, retrieval, failure attribution")
