"""`freshrag gate --format github`: the pull request's comment body (docs/ci.md), rendered by a
CommonMark and GFM-table renderer (markdown-it-py, which inspect-ai's test dependency brings):
each rule a row of metric, baseline, candidate, difference with its interval and verdict; the
refusal's reason when the gate refuses; names that would inject markdown, HTML, links or
`@mentions`, or run very long, shown as written inside code spans and cut."""

import re

import markdown_it  # the test extra (through inspect-ai)
import pytest

from freshrag.cli.main import main
from freshrag.reporting import gate_github
from freshrag.reporting.gate import gate
from freshrag.reporting.gate_rules import rules_from_tables
from tests.support.gate_runs import PROBED, QUESTIONS, TRUTH, runs

RULES = [TRUTH, {"kind": "failed", "at_most": 0.5}, {"kind": "judge_probes", "runs": "both"},
         {"kind": "tokens_per_correct", "system": "naive", "at_most_increase": 0.1}]
EVIL = ("@freshrag/maintainers <img src=x onerror=alert(1)> [click](https://evil.example) "
        "https://evil.example | forged | row | `tick` **bold** \u202eeman\n# heading")


def rendered(body: str) -> str:
    return str(markdown_it.MarkdownIt("commonmark").enable("table").render(body))


def cells(html: str) -> list[list[str]]:
    """The table's body rows as lists of cell HTML."""
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in body.split("</tr>")
            if "<td" in row]


def outside_code(html: str) -> str:
    return re.sub(r"<code>.*?</code>", "", html, flags=re.S)


def test_each_rule_is_a_row_of_metric_sides_difference_and_verdict(tmp_path):
    result = gate(*runs(tmp_path, worse=8), rules_from_tables(RULES))
    body = gate_github.comment(result)
    assert body.startswith("## freshrag gate: FAILED (2 of 4 rules fail)\n")
    rows = cells(rendered(body))
    assert [row[1:] for row in rows] == [
        ["truthfulness", "5.00", "3.40", f"-1.60 [{result.verdicts[0].values['interval'][0]:+.2f}"
         f", {result.verdicts[0].values['interval'][1]:+.2f}], {QUESTIONS} questions",
         "<strong>FAIL</strong>"],
        ["failed pairs", "–", "0.0% (0 failed, 0 missing, of 20)", "–", "pass"],
        ["judge probes", "<code>discrimination truthfulness 1.00, relevance 0.90 (threshold "
         "0.7)</code>", "<code>discrimination truthfulness 1.00, relevance 0.90 (threshold "
         "0.7)</code>", "–", "pass"],
        ["tokens per correct answer", "110.0", "183.3", "+66.6%", "<strong>FAIL</strong>"]]
    assert rows[0][0].startswith("<code>naive: truthfulness, candidate - baseline")
    assert "<h3>Why</h3>" in rendered(body) and "is not above -0.2" in body


def test_a_passing_gate_has_no_why(tmp_path):
    body = gate_github.comment(gate(*runs(tmp_path), rules_from_tables([TRUTH])))
    assert body.startswith("## freshrag gate: passed (1 of 1 rules hold)") and "Why" not in body


def test_names_that_would_inject_are_shown_as_written_in_code(tmp_path):
    result = gate(*runs(tmp_path, worse=8), rules_from_tables([{**TRUTH, "name": EVIL}]))
    html = rendered(gate_github.comment(result))
    (row,) = cells(html)
    assert len(row) == 6 and row[5] == "<strong>FAIL</strong>"  # no forged cell or row
    assert row[0].startswith("<code>@freshrag/maintainers &lt;img src=x") and "\ufffdeman" in row[0]
    assert "| forged | row |" in row[0] and "`tick`" in row[0]
    rest = outside_code(html)
    for injected in ("@", "<img", "<a ", "evil.example", "<h1>", "<strong>bold", "\u202e"):
        assert injected not in rest


def test_very_long_values_and_many_rules_stay_within_a_comment(tmp_path):
    base, cand = runs(tmp_path, worse=8)
    rules = rules_from_tables([{**TRUTH, "name": f"{n} " + "x" * 5000} for n in range(300)])
    body = gate_github.comment(gate(base, cand, rules))
    assert len(body) <= gate_github.MAX_BODY
    assert re.search(r"\*\d+ more lines cut: a comment holds at most 60,000 characters", body)
    assert max(len(line) for line in body.splitlines()) < 2 * gate_github.MAX_VALUE + 200


@pytest.mark.parametrize("value, shown", [
    pytest.param("plain", "`plain`", id="plain"),
    pytest.param("a `b` c", "``a `b` c``", id="backticks-need-a-longer-fence"),
    pytest.param("`edge`", "`` `edge` ``", id="backtick-at-an-end-padded"),
    pytest.param("a|b", "`a|b`", id="pipe-outside-a-table-as-is"),
    pytest.param("line\nbreak", "`line\ufffdbreak`", id="line-break"),
    pytest.param("", "–", id="empty"),
])
def test_a_literal_is_one_code_span(value, shown):
    assert gate_github.literal(value) == shown


def test_a_refusal_is_a_comment_naming_why_and_exits_2(tmp_path, capsys, monkeypatch):
    base, cand = runs(tmp_path, questions="a1" * 32)
    (tmp_path / "gate.toml").write_text('[[gate.rule]]\nkind = "failed"\nat_most = 0.1\n')
    monkeypatch.chdir(tmp_path)
    assert main(["gate", str(base), str(cand), "--rules", "gate.toml", "--format",
                 "github"]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("## freshrag gate: refused\n")
    assert "answered other question sets" in out and "No rule was checked" in out
    assert err.startswith("freshrag: error: ") and len(err.splitlines()) == 1
    assert re.search(r"<code>[^<]*answered other question sets", rendered(out))


def test_a_bad_rules_file_is_a_refusal_too(tmp_path, capsys):
    base, cand = runs(tmp_path)
    (tmp_path / "gate.toml").write_text('[[gate.rule]]\nkind = "failed"\nat_most = "1%"\n')
    assert main(["gate", str(base), str(cand), "--rules", str(tmp_path / "gate.toml"),
                 "--format", "github"]) == 2
    out = capsys.readouterr().out
    assert out.startswith("## freshrag gate: refused") and "at_most" in out


def test_the_probe_rule_shows_each_side(tmp_path):
    result = gate(*runs(tmp_path, probe=None), rules_from_tables([
        {"kind": "judge_probes", "runs": "both"}]))
    assert gate_github.columns(result.verdicts[0])[1:3] == (
        f"`discrimination truthfulness 1.00, relevance 0.90 (threshold "
        f"{PROBED['threshold']})`", "`not probed`")
