"""The gate's verdicts as a pull request's comment body (docs/ci.md#the-pull-request-comment):
`freshrag gate --format github` prints it, and the documented workflow posts it with `gh pr
comment --body-file`. A headline with the verdict, the two runs, a table of every rule (its
metric, the baseline's and the candidate's figure, the difference with its 95% interval, the
verdict), why each failing rule failed; when the gate refuses the runs, the reason instead.

Everything in the body that the gate did not word itself (a system's or a rule's name, a run
directory, a reason quoting them, a figure) is written as a code span: GitHub renders no
markdown, HTML, link or `@mention` inside one, so a name cannot ping a team, forge a table row,
hide text or link anywhere. A value's control and invisible format characters (line breaks,
bidirectional overrides) are shown as U+FFFD, it is cut at `MAX_VALUE` characters, and the body
at `MAX_BODY`, below GitHub's limit of 65,536 characters for a comment.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Any

from freshrag.reporting.gate import GateResult, Verdict
from freshrag.reporting.gate_report import headline

MAX_VALUE = 300  # characters of one value (a name, a reason) shown
MAX_BODY = 60_000  # characters of the whole body; GitHub refuses a comment over 65,536
NONE = "–"
_TICKS = re.compile("`+")
WHAT = {"difference": None, "failed": "failed pairs", "judge_probes": "judge probes",
        "tokens_per_correct": "tokens per correct answer",
        "cost_per_correct": "dollars per correct answer"}


def comment(result: GateResult) -> str:
    """The comment on a gate that ran: every rule's verdict, and why each failing one failed."""
    lines = ["## " + headline(result), "", _runs(result.baseline, result.candidate), "",
             "| rule | metric | baseline | candidate | difference [95% interval] | verdict |",
             "|---|---|---:|---:|---|---|"]
    lines += [_row(verdict) for verdict in result.verdicts]
    if result.failed:
        lines += ["", "### Why", ""]
        lines += [f"- {literal(v.says)}: {literal(v.why)} ({literal(v.rule.where)})"
                  for v in result.failed]
    return _bounded(lines)


def refused(baseline: Path, candidate: Path, reason: str) -> str:
    """The comment on a gate that refused the runs (other question sets, other judges, a run
    not ended, a bad rules file): no rule was checked, and why."""
    return _bounded(["## freshrag gate: refused", "", _runs(baseline, candidate), "",
                     "No rule was checked: the gate cannot hold these runs against each other "
                     "as asked.", "", f"- {literal(reason)}",
                     "", "The reasons and the ways out: freshrag's docs/ci.md, *What the gate "
                     "refuses*."])


def _runs(baseline: Path, candidate: Path) -> str:
    return (f"Baseline {literal(baseline)}, candidate {literal(candidate)}; differences are "
            f"candidate - baseline.")


def _row(verdict: Verdict) -> str:
    metric, base, cand, difference = columns(verdict)
    cells = [literal(verdict.says, table=True), metric, base, cand, difference,
             "pass" if verdict.passed else "**FAIL**"]
    return "| " + " | ".join(cells) + " |"


def columns(verdict: Verdict) -> tuple[str, str, str, str]:
    """The metric, baseline, candidate and difference cells of a rule; a rule measured on no
    figure (a run without the system's answers) shows its figure as the difference."""
    rule, values = verdict.rule, verdict.values
    metric = WHAT.get(rule.kind) or rule.metric
    if rule.kind == "difference" and "interval" in values:
        low, high = values["interval"]
        return (metric, _number(values["baseline"]), _number(values["candidate"]),
                f"{values['mean_difference']:+.2f} [{low:+.2f}, {high:+.2f}], "
                f"{values['questions']} questions")
    if rule.kind == "failed" and "share" in values:
        return (metric, NONE, f"{values['share']:.1%} ({values['failed']} failed, "
                f"{values['missing']} missing, of {values['pairs']})", NONE)
    if rule.kind == "judge_probes":
        return (metric, literal(values.get("baseline", NONE), table=True),
                literal(values.get("candidate", NONE), table=True), NONE)
    if rule.kind.endswith("_per_correct") and "candidate" in values:
        shown = (lambda v: f"{v:,.1f}") if rule.kind == "tokens_per_correct" else (
            lambda v: f"${v:.6f}")
        change = values["change"]
        return (metric, shown(values["baseline"]), shown(values["candidate"]),
                NONE if change is None else f"{change:+.1%}")
    return metric, NONE, NONE, literal(verdict.figure, table=True)


def _number(value: Any) -> str:
    return NONE if value is None else f"{value:.2f}"


def literal(value: object, table: bool = False, limit: int = MAX_VALUE) -> str:
    """`value` as a code span that shows it as written (cut at `limit` characters); in a table
    cell, its `|` escaped as GitHub's tables need even inside code."""
    text = "".join("\ufffd" if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c
                   for c in str(value))
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    if not text.strip():
        return NONE
    fence = "`" * (max((len(run) for run in _TICKS.findall(text)), default=0) + 1)
    if text.startswith("`") or text.endswith("`"):
        text = f" {text} "  # one space each side is stripped when rendered
    if table:
        text = text.replace("|", "\\|")
    return f"{fence}{text}{fence}"


def _bounded(lines: list[str]) -> str:
    """The body, whole lines only, within MAX_BODY characters."""
    kept, size = [], 0
    for number, line in enumerate(lines):
        if size + len(line) + 1 > MAX_BODY - 200:
            kept.append(f"\n*{len(lines) - number} more lines cut: a comment holds at most "
                        f"{MAX_BODY:,} characters; the gate's text summary and its JUnit file "
                        f"hold every rule.*")
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept) + "\n"
