"""`freshrag report --html`: the whole report as one self-contained HTML file.

One file that can be mailed, attached to an issue or opened from an archive years later, so it
depends on nothing: CSS inline, figures inlined as base64 `data:image/png` URIs, no JavaScript
(question details fold with `<details>`, which works without scripts). Sections, in order:

- notes on the runs (one with no rows, or with failed rows only), if any,
- the summary table (`report.summarise`, the paper's Tables II–III), one row per run identity
  (harness/reporting/identity.py) with its models, and its run directory when two rows need it,
- the analysis tables (`analysis.analyse`), intervals shown as `value [low, high]`, then the
  analysis's notes (what was not compared, and why),
- the scorers beyond the judge (harness/reporting/scorers.py), when a run has any,
- with `--by FIELD`, every table again broken down by that question field
  (harness/reporting/breakdown.py), one section per field (`by-label`, ...),
- every figure `plots.write_figures` returned, captioned with its file name,
- one folded entry per (dataset, question): the question, its gold title, and per run identity
  (headed by its label, e.g. `naive [answer: gpt-4o-mini]` when two runs of naive differ) the
  answer, retrieved titles, scores (or why unscored / failed), tokens, retrievals and the
  judge's raw output.

Answers, titles and judge output are model or dataset text: every piece of text goes through
`html.escape`, so an answer containing markup shows as text and never runs.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any, Iterable, Sequence

from freshrag.core.fields import value_name
from freshrag.core.files import write_text
from freshrag.core.samples import answer_tokens
from freshrag.core.types import QUESTION_FIELDS
from freshrag.reporting import breakdown
from freshrag.reporting.analysis import LOW_SCORE
from freshrag.reporting.identity import group_rows, labels
from freshrag.reporting.outcomes import is_scored
from freshrag.reporting.report import ANALYSIS_TABLES as PRINTED_TABLES
from freshrag.reporting.report import (
    COLUMNS,
    columns_for,
    format_value,
    is_interval,
)
from freshrag.reporting.scorers import SCORER_TABLES

Row = dict[str, Any]

DECISION_COLUMNS = (
    "dataset", "system", "questions", "needed", "retrieved", "true_positive", "false_positive",
    "false_negative", "true_negative", "precision", "recall", "truthfulness", "relevance",
    "input_tokens", "output_tokens", "retrievals", "models")
# The printed report's tables (harness/reporting/report.py), with the decision confusion matrix, which
# has room here.
ANALYSIS_TABLES: tuple[tuple[str, str, tuple[str, ...]], ...] = tuple(
    (key, title, DECISION_COLUMNS if key == "decisions" else columns)
    for key, title, columns in PRINTED_TABLES)

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px;
       padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td { white-space: nowrap; } td.num { text-align: right; }
.scroll { overflow-x: auto; }
tr.router td { font-style: italic; background: #fafaf0; }
.figures { display: flex; flex-wrap: wrap; gap: 1em; }
figure { margin: 0; border: 1px solid #ddd; padding: 0.5em; }
figure img { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 12px; color: #555; text-align: center; }
details.question { border: 1px solid #ddd; margin: 0.3em 0; padding: 0.3em 0.6em; }
details.question > summary { cursor: pointer; }
.scores { color: #555; font-size: 12px; margin-left: 0.5em; }
.answer { border-left: 3px solid #4c72b0; margin: 0.8em 0; padding-left: 0.8em; }
.answer.unscored { border-color: #dd8452; } .answer.failed { border-color: #c44e52; }
.text, pre { white-space: pre-wrap; word-wrap: break-word; background: #f8f8f8;
             padding: 0.4em; margin: 0.3em 0; font: 13px/1.4 ui-monospace, monospace; }
.meta { color: #444; } .gold { font-weight: bold; background: #e6f2e6; }
.muted { color: #888; }
.judge { border: 1px solid #ccc; padding: 0.4em 1em; margin: 1em 0; }
.judge.warning { border: 2px solid #c44e52; background: #fdf0f0; }
"""


def write_html(rows: list[Row], summary: list[Row], analysis: dict[str, Any],
               figures: Sequence[Path], path: Path, sources: Sequence[str] = (),
               notes: Sequence[str] = (), breakdowns: dict[str, dict[str, Any]] | None = None
               ) -> Path:
    """Write the report to `path` (parents created) and return it. `sources` (the run
    directories) are named under the title so a saved page says where it came from; `notes`
    (e.g. a run with no rows) are listed below them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text(path, render_html(rows, summary, analysis, figures, sources, notes,
                                         breakdowns))


def render_html(rows: list[Row], summary: list[Row], analysis: dict[str, Any],
                figures: Sequence[Path], sources: Sequence[str] = (),
                notes: Sequence[str] = (),
                breakdowns: dict[str, dict[str, Any]] | None = None) -> str:
    """The page as a string; see the module docstring for its sections."""
    questions = questions_of(rows)
    names = row_labels(rows)
    fields = list(breakdowns or {})
    body = [
        "<h1>freshrag report</h1>",
        f"<p class=\"meta\">{_e(', '.join(sources))}</p>" if sources else "",
        _judge_verdict(analysis.get("judge")),
        _notes("run-notes", notes),
        "<nav><a href=\"#summary\">Summary</a><a href=\"#analysis\">Analysis</a>"
        + "".join(f"<a href=\"#by-{_e(f)}\">By {_e(f)}</a>" for f in fields)
        + "<a href=\"#figures\">Figures</a><a href=\"#questions\">Questions</a></nav>",
        _section("summary", "Summary",
                 _table("summary-table", summary, columns_for(COLUMNS, summary))),
        _section("analysis", "Analysis", _analysis(analysis)),
        _section("scorers", "Scorers", scored) if (scored := _scorers(analysis)) else "",
        *(_section(f"by-{field}", f"By {field}", _breakdown(breakdowns[field]))
          for field in fields),
        _section("figures", f"Figures ({len(figures)})", _figures(figures)),
        _section("questions", f"Questions ({len(questions)})",
                 "\n".join(_question(key, group, names) for key, group in questions.items())),
    ]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>freshrag report</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            + "\n".join(part for part in body if part) + "\n</body>\n</html>\n")


# --------------------------------------------------------------------------- formatting


def _e(value: Any) -> str:
    """Escaped text; the one way any value reaches the page."""
    return html.escape(str(value), quote=True)


def _cell(value: Any, column: str) -> str:
    """A `<td>`; numbers (and intervals) right-aligned so columns can be compared by eye."""
    numeric = ((isinstance(value, (int, float)) and not isinstance(value, bool))
               or (isinstance(value, list) and is_interval(value)))
    attrs = ' class="num"' if numeric else ""
    return f"<td{attrs}>{_e(format_value(value, column))}</td>"


# --------------------------------------------------------------------------- tables and figures


def _section(anchor: str, title: str, content: str) -> str:
    return f"<section id=\"{anchor}\">\n<h2>{_e(title)}</h2>\n{content}\n</section>"


def _table(table_id: str, rows: Iterable[Row], columns: Sequence[str]) -> str:
    """A table with one `<tbody>` row per row; the oracle router is marked (class `router`)
    because it is a bound, not a system that ran."""
    # keys stay as in summary.json / analysis.json, but may break after "_" to keep tables narrow
    head = "".join(f"<th>{_e(column).replace('_', '_<wbr>')}</th>" for column in columns)
    lines = []
    for row in rows:
        marker = " class=\"router\"" if row.get("system") == "oracle-router" else ""
        cells = "".join(_cell(row.get(column), column) for column in columns)
        lines.append(f"<tr{marker}>{cells}</tr>")
    return (f"<div class=\"scroll\"><table id=\"{_e(table_id)}\">\n"
            f"<thead><tr>{head}</tr></thead>\n<tbody>\n"
            + "\n".join(lines) + "\n</tbody>\n</table></div>")


def _analysis(analysis: dict[str, Any]) -> str:
    """Every analysis table that has rows; an empty one (e.g. no decisions without a baseline and
    a naive run) says so rather than vanishing, so a reader knows it was looked for. The notes
    (what was not compared, and why) follow."""
    parts = []
    for key, title, columns in ANALYSIS_TABLES:
        heading = title.format(low_score=analysis.get("low_score", "?"))
        rows = analysis.get(key) or []
        content = (_table(f"analysis-{key}", rows, columns_for(columns, rows)) if rows
                   else f"<p class=\"muted\" id=\"analysis-{key}\">nothing to show</p>")
        parts.append(f"<h3>{_e(heading)}</h3>\n{content}")
    if analysis.get("notes"):
        parts.append("<h3>Notes</h3>\n" + _notes("analysis-notes", analysis["notes"]))
    return "\n".join(parts)


def _scorers(analysis: dict[str, Any]) -> str:
    """The tables of harness/reporting/scorers.py that have rows (none: no section)."""
    return "\n".join(
        f"<h3>{_e(title.format(correct_at=analysis.get('correct_at')))}</h3>\n"
        + _table(f"scorers-{key}", analysis[key], columns_for(columns, analysis[key]))
        for key, title, columns in SCORER_TABLES if analysis.get(key))


def _breakdown(document: dict[str, Any]) -> str:
    """One question field's tables (harness/reporting/breakdown.py): its groups, then each
    table with the field's value as its first column, then its notes."""
    field = document["field"]
    parts = [f"<p class=\"meta\">{_e(value)}: {n:,} questions</p>"
             for value, n in document["groups"].items()]
    for key, title, columns in breakdown.TABLES:
        entries = document["tables"].get(key) or []
        if entries:
            heading = title.format(low_score=LOW_SCORE)
            parts.append(f"<h3>{_e(heading)}, by {_e(field)}</h3>\n" + _table(
                f"by-{field}-{key}", entries, columns_for((field, *columns), entries)))
    if document["notes"]:
        parts.append(_notes(f"by-{field}-notes", document["notes"]))
    return "\n".join(parts)


def _judge_verdict(checks: dict[str, Any] | None) -> str:
    """The judge's verdict (harness/reporting/judge_check.py) at the top of the page, framed in red when
    its grades are not to be trusted."""
    if not checks:
        return ""
    kind = "judge" if checks["informative"] else "judge warning"
    return (f"<div class=\"{kind}\" id=\"judge\"><strong>Judge</strong><ul>"
            + "".join(f"<li>{_e(line)}</li>" for line in checks["lines"]) + "</ul></div>")


def _notes(ident: str, notes: Sequence[str]) -> str:
    if not notes:
        return ""
    return (f"<ul class=\"notes\" id=\"{ident}\">"
            + "".join(f"<li>{_e(note)}</li>" for note in notes) + "</ul>")


def _figures(figures: Sequence[Path]) -> str:
    """Each PNG inlined as a data URI, so the page needs no files beside it."""
    items = []
    for figure in figures:
        figure = Path(figure)
        data = base64.b64encode(figure.read_bytes()).decode("ascii")
        items.append(f"<figure><img src=\"data:image/png;base64,{data}\" alt=\"{_e(figure.name)}\">"
                     f"<figcaption>{_e(figure.name)}</figcaption></figure>")
    return "<div class=\"figures\">\n" + "\n".join(items) + "\n</div>"


# --------------------------------------------------------------------------- per question


def questions_of(rows: list[Row]) -> dict[tuple[str, str], list[Row]]:
    """Rows by (dataset, question_id), in order of first appearance (systems likewise)."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((str(row["dataset"]), str(row["question_id"])), []).append(row)
    return groups


def row_labels(rows: list[Row]) -> dict[int, str]:
    """id(row) -> the label of its run identity (harness/reporting/identity.py): the system's name, plus
    what tells it from another run of that system when the report holds several."""
    groups = group_rows(rows)
    names = labels(groups)
    return {id(row): names[key] for key, group in groups.items() for row in group}


def _question(key: tuple[str, str], rows: list[Row], names: dict[int, str]) -> str:
    """One folded entry: the summary line carries each system's score so the folded list can be
    skimmed; the answers are inside."""
    dataset, question_id = key
    first = rows[0]
    scores = " · ".join(f"{names[id(row)]} {_short_score(row)}" for row in rows)
    return (f"<details class=\"question\" id=\"q-{_e(dataset)}-{_e(question_id)}\">\n"
            f"<summary><b>{_e(dataset)} / {_e(question_id)}</b> {_e(first.get('question'))}"
            f"<span class=\"scores\">{_e(scores)}</span></summary>\n"
            f"<p><b>Question:</b> {_e(first.get('question'))}<br>"
            f"<b>Gold title:</b> {_e(first.get('gold_title') or 'none (a general query)')}"
            + "".join(f"<br><b>{_e(name)}:</b> {_e(value_name(first[name]))}"
                      for name in QUESTION_FIELDS
                      if first.get(name) is not None) + "</p>\n"
            + "\n".join(_answer(row, names[id(row)]) for row in rows) + "\n</details>")


def _short_score(row: Row) -> str:
    if row["status"] == "failed":
        return "failed"
    if not is_scored(row):
        return "unscored"
    return f"{row['grade']['truthfulness']}+{row['grade']['relevance']}"


def _verdict(row: Row) -> tuple[str, str]:
    """(css class, text) for the scores, or why there are none."""
    if row["status"] == "failed":
        return "failed", f"failed: {row.get('error') or 'no reason recorded'}"
    grade = row.get("grade") or {}
    if not is_scored(row):
        return "unscored", f"unscored: {grade.get('unscored_reason') or 'no grade'}"
    return "scored", f"truthfulness {grade['truthfulness']} · relevance {grade['relevance']}"


def _answer(row: Row, label: str) -> str:
    """One system's answer with everything needed to see why it scored as it did."""
    kind, verdict = _verdict(row)
    tokens_in, tokens_out = answer_tokens(row)
    decision = (row.get("details") or {}).get("decision")
    unknown = (row.get("details") or {}).get("unknown") or ()
    tokens = "tokens unknown" if "input_tokens" in unknown or "output_tokens" in unknown else \
        f"tokens {tokens_in:,} in / {tokens_out:,} out"
    retrievals = row.get("retrievals", 0)
    meta = [verdict, tokens, f"retrievals {'unknown' if retrievals is None else retrievals}"]
    if decision is not None:
        meta.append(f"decision {decision}")
    meta += [f"{name} " + (", ".join(f"{m} {format_value(v)}" for m, v in score["metrics"].items())
                           if score["status"] == "scored" else score["status"].replace("_", " "))
             for name, score in (row.get("scores") or {}).items()]
    answer = row.get("answer")
    text = (f"<div class=\"text\">{_e(answer)}</div>" if answer is not None
            else "<div class=\"text muted\">(no answer)</div>")
    return (f"<div class=\"answer {kind}\" data-system=\"{_e(row['system'])}\">\n"
            f"<h4>{_e(label)}</h4>\n<p class=\"meta\">{_e(' · '.join(meta))}</p>\n"
            f"{text}\n{_retrieved(row)}\n{_judge(row)}\n</div>")


def _retrieved(row: Row) -> str:
    """Retrieved titles in rank order, the gold article highlighted (a hit is visible at once)."""
    chunks = (row.get("details") or {}).get("retrieved")
    if not chunks:
        return "<p class=\"muted\">nothing retrieved</p>"
    items = []
    for chunk in chunks:
        title = chunk.get("title") if isinstance(chunk, dict) else chunk
        gold = " class=\"gold\"" if title == row.get("gold_title") else ""
        items.append(f"<li{gold}>{_e(title)}</li>")
    return "<p>Retrieved:</p><ol class=\"retrieved\">" + "".join(items) + "</ol>"


def _judge(row: Row) -> str:
    """The judge's raw replies (one per attempt), folded: needed only when a score looks wrong."""
    raw = (row.get("grade") or {}).get("raw") or []
    if not raw:
        return "<p class=\"muted\">no judge output</p>"
    replies = "".join(f"<pre>{_e(reply if reply is not None else '(no tool call)')}</pre>"
                      for reply in raw)
    return (f"<details class=\"judge\"><summary>judge output ({len(raw)})</summary>"
            f"{replies}</details>")
