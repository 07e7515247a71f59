import json

import pytest

from freshrag.reporting import report, summary_table
from tests.support.rows import summaries


def row(system, t=None, r=None, status="ok", reason=None, retrievals=0, answer=(100, 10), judge=(500, 5),
        decision=None):
    grade = None if status == "failed" else {"truthfulness": t, "relevance": r, "unscored_reason": reason}
    usage = {"answer": {"input": answer[0], "output": answer[1], "estimated": False},
             "judge": {"input": judge[0], "output": judge[1], "estimated": False}}
    return {"dataset": "A_f", "system": system, "status": status, "grade": grade, "usage": usage,
            "retrievals": retrievals, "error": "HTTP 500" if status == "failed" else None,
            "details": {"decision": decision}}


ROWS = [row("naive", 5, 4, retrievals=1), row("naive", 3, 2, retrievals=1),
        row("naive", reason="invalid JSON", retrievals=1), row("naive", status="failed"),
        row("baseline", 1, 1), row("boolean", 2, 2, decision="none"),
        row("boolean", 4, 4, retrievals=1, decision="retrieve"), row("boolean", 3, 3, decision="none")]


def test_means_are_over_scored_answers_and_unscored_are_counted():
    naive = next(r for r in summary_table.summarise(summaries(ROWS)) if r["system"] == "naive")
    assert naive["n"] == 4 and naive["scored"] == 2 and naive["unscored"] == 2
    assert naive["truthfulness"] == pytest.approx((5 + 3) / 2)
    assert naive["relevance"] == pytest.approx((4 + 2) / 2)
    assert naive["retrievals"] == 3


def test_tokens_are_what_the_system_spent_not_the_judge():
    naive = next(r for r in summary_table.summarise(summaries(ROWS)) if r["system"] == "naive")
    assert (naive["input_tokens"], naive["output_tokens"]) == (300, 30)  # the 3 answered pairs
    assert (naive["failed_input_tokens"], naive["failed_output_tokens"]) == (100, 10)


def test_answers_without_a_usable_decision_are_counted():
    by_system = {r["system"]: r for r in summary_table.summarise(summaries(ROWS))}
    assert by_system["boolean"]["no_decision"] == 2 and by_system["boolean"]["retrievals"] == 1
    assert by_system["naive"]["no_decision"] == 0


def test_failed_pairs_are_counted_apart_from_unscored_answers():
    unscored, failed = summary_table.unscored_reasons(summaries(ROWS))
    assert unscored == {("naive", "invalid JSON"): 1} and failed == {("naive", "HTTP 500"): 1}


def test_all_unscored_group_has_no_mean():
    [summary] = summary_table.summarise(summaries([row("x", reason="no call")]))
    assert summary["truthfulness"] is None and summary["scored"] == 0


def test_formats_carry_the_same_rows(tmp_path):
    summary = summary_table.summarise(summaries(ROWS))
    assert json.loads(report.render(summary, "json")) == {"rows": summary}
    csv_lines = report.render(summary, "csv").splitlines()
    assert csv_lines[0].split(",") == list(summary_table.COLUMNS) and len(csv_lines) == 4
    report.write_summary(tmp_path, summary)  # the whole table: summary.md beside summary.json
    wide = (tmp_path / report.SUMMARY_MD).read_text().splitlines()
    assert wide[0] == "| " + " | ".join(summary_table.COLUMNS) + " |"
    assert wide[2].startswith("| A_f | naive | 4 | 2 | 2 | 4.00 | 3.00 | 300 | 30 | 3 | 0 | 1 |")
    narrow = report.render(summary, "markdown").splitlines()  # as printed: the key columns
    assert [cell.strip() for cell in narrow[2].strip("|").split("|")] == [
        "naive", "4", "4.00", "3.00", "300 / 30"]
    assert narrow[-1].endswith(report.SUMMARY_MD)
    with pytest.raises(ValueError, match="unknown format"):
        report.render(summary, "xml")
