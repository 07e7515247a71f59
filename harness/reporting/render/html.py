"""`freshrag report --html`: the whole report as one self-contained HTML file.

One file that can be mailed, attached to an issue or opened from an archive years later, so it
depends on nothing: CSS and script inline, figures inlined as base64 `data:image/png` URIs, no
request to any server (it works from `file://`). Sections, in order:

- notes on the runs (one with no rows, or with failed rows only), if any,
- the summary table (`summary_table.summarise`, the paper's Tables II–III), one row per run
  identity (harness/reporting/identity.py) with its models (said once above it instead, and in
  no table's column, when every row has the same: `one_models`), and its run directory when two
  rows need it,
  in a box of its own that scrolls sideways when the page is narrower than the table, and
  under it what the answer model knows without retrieval (harness/reporting/freshness.py),
- the analysis tables (`analysis.analyse`) that have rows, intervals shown as `value [low,
  high]`; the tables with nothing to show are named together on one line, so a reader knows
  they were looked for; then the analysis's notes (what was not compared, and why),
- with `--human`, the judge against people's labels (harness/reporting/human.py): its tables,
  the means the labels correct beside the judge's own, and its notes,
- the scorers beyond the judge (harness/reporting/scorers.py), when a run has any,
- the changed facts' staleness tables (harness/reporting/staleness.py), when answers have
  its verdicts,
- the spread across epochs (harness/reporting/epochs.py), when a run asked a pair twice,
- with `--by FIELD`, every table again broken down by that question field
  (harness/reporting/breakdown.py), one section per field (`by-label`, ...), the changed
  facts' staleness tables among them where answers have verdicts,
- every figure `plots.write_figures` returned, captioned with its file name,
- the sample viewer (viewer.py): every answer in a sortable, filterable, searchable list, each
  opened with its whole record (prompts, calls, chunks, grade and the judge's reason, scorers,
  its steps as a timeline and why an agent stopped), two answers to one question side by side.

Tables and figures keep the order of the rows the caller passes. Answers, titles and judge
output are model or dataset text: every piece of text in the markup goes through `html.escape`,
and the viewer's data is escaped JSON that its script puts on the page as text only, so an
answer containing markup shows as text and never runs.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any, Iterable, Sequence

from freshrag.core.files import write_text
from freshrag.core.records import SampleRow
from freshrag.reporting import breakdown, epochs, human, staleness
from freshrag.reporting.analysis import LOW_SCORE
from freshrag.reporting.empty import needs
from freshrag.reporting.freshness import known_lines
from freshrag.reporting.identity import row_labels
from freshrag.reporting.render.terminal import cell_value, format_value, is_interval
from freshrag.reporting.render.viewer import viewer_section
from freshrag.reporting.report import columns_for
from freshrag.reporting.summary_table import COLUMNS
from freshrag.reporting.table import tables

WIDE_PX = 700  # a figure wider than this (in pixels) spans the whole row of the grid
CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1600px;
       padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td { white-space: nowrap; } td.num { text-align: right; }
.scroll { overflow-x: auto; max-width: 100%; margin: 0.5em 0 1.5em; }
.scroll > table { margin: 0; }
tr.router td { font-style: italic; background: #fafaf0; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 560px), 1fr));
           gap: 1em; }
figure { margin: 0; border: 1px solid #ddd; padding: 0.5em; }
figure.wide { grid-column: 1 / -1; }
figure img { max-width: 100%; height: auto; display: block; margin: 0 auto; }
figcaption { font-size: 12px; color: #555; text-align: center; }
.text, pre { white-space: pre-wrap; word-wrap: break-word; background: #f8f8f8;
             padding: 0.4em; margin: 0.3em 0; font: 13px/1.4 ui-monospace, monospace; }
.meta { color: #444; } .muted { color: #888; }
.judge { border: 1px solid #ccc; padding: 0.4em 1em; margin: 1em 0; }
.judge.warning { border: 2px solid #c44e52; background: #fdf0f0; }
"""


def write_html(rows: list[SampleRow], summary: list[dict[str, Any]], analysis: dict[str, Any],
               figures: Sequence[Path], path: Path, sources: Sequence[str] = (),
               notes: Sequence[str] = (), breakdowns: dict[str, dict[str, Any]] | None = None,
               known: list[dict[str, Any]] | None = None) -> Path:
    """Write the report to `path` (parents created) and return it. `sources` (the run
    directories) are named under the title so a saved page says where it came from; `notes`
    (e.g. a run with no rows) are listed below them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text(path, render_html(rows, summary, analysis, figures, sources, notes,
                                         breakdowns, known))


def render_html(rows: list[SampleRow], summary: list[dict[str, Any]], analysis: dict[str, Any],
                figures: Sequence[Path], sources: Sequence[str] = (),
                notes: Sequence[str] = (),
                breakdowns: dict[str, dict[str, Any]] | None = None,
                known: list[dict[str, Any]] | None = None) -> str:
    """The page as a string; see the module docstring for its sections. `known`: what the
    answer model knows without retrieval (harness/reporting/freshness.py), under the summary."""
    breakdowns = breakdowns or {}
    fields = list(breakdowns)
    models = one_models(summary)  # said once above the tables, not in a column of each
    body = [
        "<h1>freshrag report</h1>",
        f"<p class=\"meta\">{_e(', '.join(sources))}</p>" if sources else "",
        _judge_verdict(analysis.get("judge")),
        _notes("run-notes", notes),
        "<nav><a href=\"#summary\">Summary</a><a href=\"#analysis\">Analysis</a>"
        + "".join(f"<a href=\"#by-{_e(f)}\">By {_e(f)}</a>" for f in fields)
        + "<a href=\"#figures\">Figures</a><a href=\"#answers\">Answers</a></nav>",
        _section("summary", "Summary", _models_line(models)
                 + _table("summary-table", summary, columns_for(COLUMNS, summary), models)
                 + _known(known)),
        _section("analysis", "Analysis", _analysis(analysis, models)),
        _people((analysis.get("judge") or {}).get("human"), models),
        _section("scorers", "Scorers", scored) if (scored := _tables_of("scorers", analysis, models))
        else "",
        _section("changed", "Changed facts", changed + f"\n<p>{_e(staleness.NOTE)}</p>")
        if (changed := _tables_of(staleness.SECTION, analysis, models)) else "",
        _section("epochs", "Epochs", f"<p>{_e(epochs.TITLE)}</p>\n" + _table(
            "epochs-table", spread, columns_for(epochs.COLUMNS, spread), models))
        if (spread := analysis.get(epochs.KEY)) else "",
        *(_section(f"by-{field}", f"By {field}", _breakdown(breakdowns[field], models))
          for field in fields),
        _section("figures", f"Figures ({len(figures)})", _figures(figures)),
        _section("answers", f"Answers ({len(rows):,})", viewer_section(rows)),
    ]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>freshrag report</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            + "\n".join(part for part in body if part) + "\n</body>\n</html>\n")


# --------------------------------------------------------------------------- formatting


def _e(value: Any) -> str:
    """Escaped text; the one way any value reaches the markup (the viewer's data goes through
    viewer.json_script)."""
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


def _table(table_id: str, rows: Iterable[dict[str, Any]], columns: Sequence[str],
           models: Any = None) -> str:
    """A table with one `<tbody>` row per row; the oracle router is marked (class `router`)
    because it is a bound, not a system that ran. `models`: the page's one `models` value
    (`one_models`), left out of a table whose rows all have it."""
    rows = list(rows)
    if models is not None and all(row.get("models") in (None, models) for row in rows):
        columns = [column for column in columns if column != "models"]
    # keys stay as in summary.json / analysis.json, but may break after "_" to keep tables narrow
    head = "".join(f"<th>{_e(column).replace('_', '_<wbr>')}</th>" for column in columns)
    # the system cell names the row as the figures do (identity.labels): two runs of a system
    # are told apart where the eye reads, not only in a `run` column off to the right
    names = row_labels(rows) if "system" in columns and any(
        isinstance(row.get("models"), dict) for row in rows) else None
    lines = []
    for i, row in enumerate(rows):
        marker = " class=\"router\"" if row.get("system") == "oracle-router" else ""
        cells = "".join(_cell(names[i] if names and column == "system"
                              else cell_value(row, column), column) for column in columns)
        lines.append(f"<tr{marker}>{cells}</tr>")
    return (f"<div class=\"scroll\"><table id=\"{_e(table_id)}\">\n"
            f"<thead><tr>{head}</tr></thead>\n<tbody>\n"
            + "\n".join(lines) + "\n</tbody>\n</table></div>")


def one_models(summary: list[dict[str, Any]]) -> Any:
    """The `models` every summary row has (every system run on the same models), else None."""
    found = [row.get("models") for row in summary]
    return found[0] if found and found[0] and all(value == found[0] for value in found) else None


def _models_line(models: Any) -> str:
    """The page's one `models` value, said once (no table repeats it in a column)."""
    if models is None:
        return ""
    shown = format_value(models, "models")
    return f"<p class=\"meta\" id=\"models\">Models of every row: {_e(shown)}</p>\n"


def _analysis(analysis: dict[str, Any], models: Any = None) -> str:
    """Every analysis table that has rows (with its note, if it has one), then one line naming
    those with nothing to show (e.g. no decisions without a baseline and a naive run), then the
    notes (what was not compared, and why)."""
    parts, empty = [], []
    for table in tables():  # the printed report's, each with the page's columns
        heading = table.title.format(low_score=analysis.get("low_score", "?"))
        rows = analysis.get(table.key) or []
        if rows:
            columns = table.page_columns or table.columns
            parts.append(f"<h3>{_e(heading)}</h3>\n"
                         + _table(f"analysis-{table.key}", rows, columns_for(columns, rows),
                                  models))
            if table.note:  # what the table's words mean, as the printed report says it
                parts.append(f"<p class=\"meta\">{_e(table.note_in(analysis))}</p>")
        else:
            empty.append(needs(table, heading.split(" (")[0].split(":")[0]))
    if empty:
        parts.append("<p class=\"muted\" id=\"analysis-empty\">Nothing to show: "
                     + _e("; ".join(empty)) + ".</p>")
    if analysis.get("notes"):
        parts.append("<h3>Notes</h3>\n" + _notes("analysis-notes", analysis["notes"]))
    return "\n".join(parts)


def _tables_of(section: str, analysis: dict[str, Any], models: Any = None) -> str:
    """The tables of a report section shown apart (the scorers', harness/reporting/scorers.py;
    the changed facts', harness/reporting/staleness.py) that have rows ("": no section)."""
    return "\n".join(
        f"<h3>{_e(table.title.format(correct_at=analysis.get('correct_at')))}</h3>\n"
        + _table(f"{section}-{table.key}", rows, columns_for(table.columns, rows), models)
        for table in tables(section) if (rows := analysis.get(table.key)))


def _breakdown(document: dict[str, Any], models: Any = None) -> str:
    """One question field's tables (harness/reporting/breakdown.py): its groups, then each
    table with the field's value as its first column (the changed facts' with their note),
    then its notes."""
    field = document["field"]
    parts = [f"<p class=\"meta\">{_e(value)}: {n:,} questions</p>"
             for value, n in document["groups"].items()]
    changed = breakdown.changed_tables()
    for table in breakdown.broken_down() + changed:
        entries = document["tables"].get(table.key) or []
        if entries:
            heading = table.title.format(low_score=LOW_SCORE)
            parts.append(f"<h3>{_e(heading)}, by {_e(field)}</h3>\n" + _table(
                f"by-{field}-{table.key}", entries,
                columns_for((field, *table.columns), entries), models))
    if any(document["tables"].get(table.key) for table in changed):
        parts.append(f"<p>{_e(staleness.NOTE)}</p>")
    if document["notes"]:
        parts.append(_notes(f"by-{field}-notes", document["notes"]))
    return "\n".join(parts)


def _judge_verdict(checks: dict[str, Any] | None) -> str:
    """The judge's verdict (harness/reporting/judge_check.py) at the top of the page, framed in
    red when its grades are not to be trusted."""
    if not checks:
        return ""
    kind = "judge" if checks["informative"] else "judge warning"
    return (f"<div class=\"{kind}\" id=\"judge\"><strong>Judge</strong><ul>"
            + "".join(f"<li>{_e(line)}</li>" for line in checks["lines"]) + "</ul></div>")


def _people(document: dict[str, Any] | None, models: Any = None) -> str:
    """The section of people's labels (harness/reporting/human.py: its tables, then its notes)
    when the report was given any; "" when not."""
    if not document:
        return ""
    parts = [f"<p class=\"meta\">{_e(human.heading(document))}</p>"]
    parts += [f"<h3>{_e(title)}</h3>\n" + _table(f"people-{name}", rows, columns, models)
              for name, title, rows, columns in human.tables(document)]
    if document["notes"]:
        parts.append(_notes("people-notes", document["notes"]))
    return _section("people", "The judge against people", "\n".join(parts))


def _known(known: list[dict[str, Any]] | None) -> str:
    """The lines of freshness.known_lines as a list under the summary table ("" for none)."""
    lines = known_lines(known or [])
    return "\n" + _notes("known", lines) if lines else ""


def _notes(ident: str, notes: Sequence[str]) -> str:
    if not notes:
        return ""
    return (f"<ul class=\"notes\" id=\"{ident}\">"
            + "".join(f"<li>{_e(note)}</li>" for note in notes) + "</ul>")


def _figures(figures: Sequence[Path]) -> str:
    """Each PNG inlined as a data URI, so the page needs no files beside it; one wider than a
    grid cell (side-by-side histograms, the Pareto plot) takes a row of its own, so that it is
    never shrunk to a thumbnail."""
    items = []
    for figure in figures:
        figure = Path(figure)
        png = figure.read_bytes()
        data = base64.b64encode(png).decode("ascii")
        wide = " class=\"wide\"" if png_width(png) > WIDE_PX else ""
        name = _e(figure.name)
        items.append(f"<figure{wide}><img src=\"data:image/png;base64,{data}\" alt=\"{name}\">"
                     f"<figcaption>{name}</figcaption></figure>")
    return "<div class=\"figures\">\n" + "\n".join(items) + "\n</div>"


def png_width(png: bytes) -> int:
    """Width from the IHDR chunk, which directly follows the 8-byte signature."""
    return int.from_bytes(png[16:20], "big")
