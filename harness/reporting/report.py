"""Tables in the shape of the paper's Tables II and III, recomputed from samples.jsonl.

One row per run identity (harness/reporting/identity.py: dataset, system, the model of every role, and the
run directory, which is shown only when two rows would otherwise look alike), with:

- `n`, `scored`, `unscored` (failed pairs included);
- mean `truthfulness` and `relevance` over the scored answers;
- `input_tokens`, `output_tokens`: what the answered (ok) pairs spent, every role but the judge,
  as in the paper (the judge's cost is in the token chart by role);
- `retrievals`, and `no_decision`: answers an adaptive system gave with no usable retrieval
  decision (no tool call or unparseable arguments);
- `failed` (pairs that ended in an error), and `failed_input_tokens`, `failed_output_tokens`:
  what they spent before failing (every role but the judge), counted apart so that the answered
  pairs' figures are never inflated by failures;
- `tokens_per_correct`, `cost_per_correct`: the answered pairs' tokens and dollars (every role
  but the judge; dollars from the report's prices, null when a model has none) over their
  correct answers (truthfulness >= 4, `--correct-at`), and `correct_per_search` over the answers
  that recorded their steps (harness/reporting/trajectory.py);
- `searches_per_answer`, `repeated_search_share`, `stopped_max_steps`, `stopped_budget`: from
  the answers' trajectories (`steps`, docs/run-format.md#steps): search steps per answered pair
  that recorded its steps, the share of those searches that repeat an earlier query of the same
  answer (null when none was made or none recorded), answers an agent stopped, by reason;
- `models`: role -> model (shown as `answer, decision: m1; judge: m2`), and `run` when needed.

Unscored answers are counted, never averaged in. A run directory with no rows, or with failed
rows only, is named in a note (`run_notes`) rather than left to look like a crash.

Rows come run directory by run directory as given, each in the order of its `--systems`
(`in_systems_order`), not the order the pairs finished in, so that every table and figure made
from them lists the systems as the user named them. The summary is printed narrow, to be read
at 80 columns (render/terminal.py); the whole table is written beside summary.json as summary.md
(`write_summary`). Under the table, each: how much of the set the answer model knows without
retrieval (`known`, harness/reporting/freshness.py). The JSON printed (`render`) can hold every
answer's trajectory too (`trajectories`: its steps and why it stopped), which summary.json leaves
out.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import msgspec
from msgspec import Struct

from freshrag.core import tables
from freshrag.core.arguments import (
    PATH,
    Argument,
    check_arguments,
    flag,
    kind,
    paths,
    refused,
    whole,
)
from freshrag.core.files import dumps, write_text
from freshrag.core.jsonl import ResultsError
from freshrag.core.light import collector_paused
from freshrag.core.light_steps import whole_steps
from freshrag.core.manifest import read_manifest
from freshrag.core.records import SampleRow
from freshrag.core.runfiles import SUMMARY, SUMMARY_MD
from freshrag.core.samples import SAMPLES, is_scored, judge_scores, read_samples
from freshrag.core.stats import mean
from freshrag.core.types import STOPS
from freshrag.core.wording import counted
from freshrag.reporting.freshness import known_lines
from freshrag.reporting.identity import (
    RUN,
    group_rows,
    labels,
    models_label,
    retriever_model,
    row_labels,
)
from freshrag.reporting.outcomes import CORRECT_AT, MIN_PAIRED, retrievals, spent, unreported
from freshrag.reporting.render.terminal import cell_value, format_value, terminal_table
from freshrag.reporting.retrieval_metrics import repeated_count, search_count
from freshrag.reporting.trajectory import Prices, per_correct
from freshrag.scoring.store import answer_scores, scores_of, with_judge_pass

COLUMNS = ("dataset", "system", "n", "scored", "unscored", "truthfulness", "relevance",
           "input_tokens", "output_tokens", "retrievals", "no_decision", "failed",
           "failed_input_tokens", "failed_output_tokens", "searches_per_answer",
           "repeated_search_share", *(f"stopped_{reason}" for reason in STOPS),
           "tokens_per_correct", "cost_per_correct", "correct_per_search", "models")


READING = {  # the arguments of load_runs and summarise (core/arguments.py)
    "run_dirs": Argument(f"a run directory or a list of them, each {PATH}", paths()),
    "light": Argument("True or False", flag), "every_epoch": Argument("True or False", flag),
    "rows": Argument("a list of rows (mappings), as load_runs gives them", lambda value: refused(
        isinstance(value, list) and all(isinstance(row, Mapping) for row in value))),
    "prices": Argument("a mapping of model to (input, output) dollars per million tokens, or "
                       "None", kind(Mapping, type(None))),
    "correct_at": Argument("a whole number from 1 to 5", whole(1, 5)),
}


def load_runs(run_dirs: str | Path | Sequence[str | Path], light: bool = False,
              every_epoch: bool = False) -> list[SampleRow]:
    """All rows of the given run directories (one, or a list; str or Path; a directory
    without samples is an error), each
    marked with its `run` (the directory as given; one named twice is read once), its `scores`
    from scores.jsonl (scorer -> repeat 0, for this answer; a judge pass is the grade of a row
    the run left ungraded: scoring/store.py with_judge_pass) and, if it retrieved, the run's
    embedding model in `models` (see harness/reporting/identity.py). `light`: calls without
    their messages and text, which no table reads (core/samples.py read_samples). Rows of the
    first epoch only (what the tables read) unless `every_epoch` (harness/reporting/epochs.py)."""
    check_arguments({"run_dirs": run_dirs, "light": light, "every_epoch": every_epoch}, READING)
    rows, seen = [], set()
    for run_dir in map(Path, [run_dirs] if isinstance(run_dirs, (str, Path)) else run_dirs):
        if not (run_dir / SAMPLES).exists():
            raise ResultsError(f"{run_dir}: no {SAMPLES}; is this a run directory?")
        if run_dir.resolve() in seen:
            continue
        seen.add(run_dir.resolve())
        manifest = read_manifest(run_dir) or {}
        name = manifest.get("dataset", {}).get("name")
        embedder = retriever_model(manifest.get("index"))
        scores = answer_scores(run_dir)  # scorers beyond the run's judge (harness/scoring/store.py)
        mine = read_samples(run_dir / SAMPLES, light=light, every_epoch=every_epoch)
        with collector_paused():  # rows the report keeps to its end (core/light.py)
            for i, row in enumerate(mine):  # each row a dict of its own: completed in place
                row.update({"dataset": row.get("dataset") or name, RUN: str(run_dir)})
                row["scores"] = scores_of(scores, row)
                row = mine[i] = with_judge_pass(row)
                if embedder and row.get("retrievals"):
                    row["models"] = {"embeddings": embedder, **(row.get("models") or {})}
        systems = manifest.get("systems")
        rows += in_systems_order(mine, systems if isinstance(systems, list) else [])
    return rows


def in_systems_order(rows: list[SampleRow], order: Sequence[Any]) -> list[SampleRow]:
    """One run's rows by dataset (as first met), then system in `order` (the manifest's
    `systems`, as given to --systems; a system it does not name, as an import's, after them as
    first met); within each, as read (the order the pairs finished in)."""
    names = [name for name in order if isinstance(name, str)]
    ranks = {name: i for i, name in enumerate(dict.fromkeys(
        [*names, *(row["system"] for row in rows)]))}
    datasets = {name: i for i, name in enumerate(dict.fromkeys(row.get("dataset") for row in rows))}
    return sorted(rows, key=lambda row: (datasets[row.get("dataset")], ranks[row["system"]]))


def run_notes(run_dirs: list[Path], rows: list[SampleRow]) -> list[str]:
    """A line for each run directory that has no rows, or only failed ones (what an unreachable
    endpoint leaves behind)."""
    notes = []
    read: dict[Path, str] = {}  # one name per directory, the first given, as in load_runs
    for given in run_dirs:
        read.setdefault(given.resolve(), str(given))
    for run_dir in read.values():
        mine = [row for row in rows if row.get(RUN) == run_dir]
        failed = [row for row in mine if row["status"] == "failed"]
        if not mine:
            notes.append(f"{run_dir}: no rows ({SAMPLES} is empty): nothing to report")
        elif len(failed) == len(mine):
            notes.append(f"{run_dir}: all {len(mine)} pairs failed (first error: "
                         f"{(failed[0].get('error') or 'none recorded')[:200]})")
        manifest = read_manifest(Path(run_dir)) or {}
        if note := _merge_note(manifest.get("merged")):
            notes.append(f"{run_dir}: {note}")
        capped = manifest.get("capped")
        if capped:  # written by a run that --max-cost stopped (harness/cost/budget.py)
            notes.append(f"{run_dir}: CAPPED by --max-cost ${capped['max_cost']:,.4f} after "
                         f"${capped['spent']:,.4f} spent: pairs are missing; run the same "
                         f"command without --max-cost to finish")
    return notes


def _merge_note(merged: Any) -> str | None:
    """What a run that `freshrag merge` joined from shards lacks (a merged run's manifest:
    docs/run-format.md#a-merged-run); None when every shard was merged and had finished: the
    run is then as the single one, and its report the same."""
    if not isinstance(merged, dict) or not (merged.get("missing") or merged.get("unfinished")):
        return None
    count = merged.get("count")
    lacking = [f"{what}: {', '.join(f'{i}/{count}' for i in merged.get(key) or [])}"
               for key, what in (("missing", "missing"), ("unfinished", "not finished"))
               if merged.get(key)]
    return (f"INCOMPLETE: {len(merged.get('shards') or [])} of {count} shards merged "
            f"({'; '.join(lacking)}): pairs are missing; merge again once every shard has "
            f"finished")


def finite(value: Any) -> Any:
    """`value` with every number that is not finite (NaN, ±infinity) made None: what JSON can
    hold (core/files.py writes it strictly). A mean of imported scores near 1e308 overflows to
    infinity; it is written as null, and `non_finite_notes` says so."""
    if isinstance(value, (dict, list)) and _strict(value):
        return value
    return _finite(value)


def made_finite(what: str, document: Any) -> tuple[Any, list[str]]:
    """`finite(document)` and `non_finite_notes(what, document)`, the document encoded once to
    find it finite (twice, the analysis of 100,000 answers took near a second)."""
    if _strict(document):
        return document, []
    return _finite(document), non_finite_notes(what, document)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    # a container copied only where something in it changes: the analysis of 100,000 answers
    # holds a dict per answer, and nearly always nothing to change
    if isinstance(value, dict):
        changed = {key: new for key, item in value.items() if (new := _finite(item)) is not item}
        return {**value, **changed} if changed else value
    if isinstance(value, list) or type(value) is tuple:  # a tuple kept a tuple: an interval
        made = [_finite(item) for item in value]  # is shown as a list only
        if all(new is old for new, old in zip(made, value)):
            return value
        return made if isinstance(value, list) else tuple(made)
    return value


def non_finite_notes(what: str, document: Any) -> list[str]:
    """A line naming the statistics of `document` that are not finite numbers, if any."""
    found = [] if _strict(document) else list(_non_finite(document))
    if not found:
        return []
    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return [f"{what}: {counted(len(found), 'statistic')} not a finite number, written as null (a mean "
            f"overflows when imported scores are out of range): {shown}"]


def _strict(value: Any) -> bool:
    """Whether `value` holds only finite numbers, as json's C encoder finds (allow_nan=False
    refuses the others): the walks above, in Python, took seconds over the analysis of 100,000
    answers. A long list is encoded a slice at a time, never as one text. False too where the
    encoder takes something only the walks can (a key that is not text)."""
    parts = value.values() if isinstance(value, dict) else [value]
    try:
        for part in parts:
            for start in range(0, len(part), 1_000) if isinstance(part, list) else [None]:
                json.dumps(part if start is None else part[start:start + 1_000],
                           allow_nan=False, default=_builtins)
    except (ValueError, TypeError):
        return False
    return True


def _builtins(value: Any) -> Any:
    if isinstance(value, Struct):  # a light row's record (core/light.py)
        return msgspec.to_builtins(value)
    raise TypeError(type(value).__name__)


def _non_finite(value: Any, path: str = "") -> Iterator[str]:
    """The dotted path of every number that is not finite; a table's row by its dataset and
    system (`intervals.A_f/naive.truthfulness`), another list's item by its index."""
    if isinstance(value, float) and not math.isfinite(value):
        yield path or "the value"
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            named = isinstance(item, dict) and "system" in item
            step = f"{item.get('dataset')}/{item['system']}" if named else f"[{index}]"
            yield from _non_finite(item, f"{path}.{step}" if path else step)


def summarise(rows: list[SampleRow], prices: Prices | None = None,
              correct_at: int = CORRECT_AT) -> list[dict[str, Any]]:
    """One row per run identity (module docstring); dollars from `prices`, none: null."""
    check_arguments({"rows": rows, "prices": prices, "correct_at": correct_at}, READING)
    return [_summary_row(key.fields(), group, prices, correct_at)
            for key, group in group_rows(rows).items()]


def _summary_row(identity: dict[str, Any], rows: list[SampleRow], prices: Prices | None,
                 correct_at: int) -> dict[str, Any]:
    cost = per_correct(rows, prices, correct_at)
    scored = [scores for row in rows if (scores := judge_scores(row)) is not None]
    (ok_in, ok_out), (failed_in, failed_out) = spent(rows), spent(rows, "failed")
    return {
        "dataset": identity["dataset"], "system": identity["system"], "n": len(rows),
        "scored": len(scored), "unscored": len(rows) - len(scored),
        "truthfulness": mean([g["truthfulness"] for g in scored], places=4),
        "relevance": mean([g["relevance"] for g in scored], places=4),
        "input_tokens": None if unreported(rows, "input_tokens") else ok_in,
        "output_tokens": None if unreported(rows, "output_tokens") else ok_out,
        "retrievals": retrievals(rows),
        "no_decision": sum((row.get("details") or {}).get("decision") == "none" for row in rows),
        "failed": sum(row["status"] == "failed" for row in rows),
        "failed_input_tokens": failed_in, "failed_output_tokens": failed_out,
        **_trajectory_columns(rows),
        **{name: cost[name] for name in ("tokens_per_correct", "cost_per_correct",
                                         "correct_per_search")},
        **{k: v for k, v in identity.items() if k not in ("dataset", "system")},
    }


def _trajectory_columns(rows: list[SampleRow]) -> dict[str, Any]:
    """What the answers' steps say of an identity: searches per answered pair that recorded its
    steps (rows written before steps existed, and a system outside freshrag that reported none,
    have none: unknown, not 0), the share of them repeated, and the answers stopped by reason."""
    traced = [row["steps"] for row in rows if row["status"] == "ok" and row.get("steps")]
    made = [search_count(steps) for steps in traced]
    repeated = sum(repeated_count(steps) for steps in traced)
    return {
        "searches_per_answer": mean(made, places=4),
        # the mean of a flag per search, counted: the same figure (sums of 0s and 1s are exact)
        "repeated_search_share": round(repeated / sum(made), 4) if sum(made) else None,
        **{f"stopped_{reason}": sum(row.get("stopped") == reason for row in rows)
           for reason in STOPS},
    }


def trajectories(rows: list[SampleRow]) -> Iterator[dict[str, Any]]:
    """Every answer's trajectory, as the JSON report lists it (`answers`): its identity (the
    summary row's fields: dataset, system, models, and run when needed), question, status, why
    an agent stopped (null: it answered when it chose) and its steps as the row holds them (a
    light read's: retrieved chunks without text), read again from the run's file one answer at
    a time (core/light.py whole_steps: a light row keeps of its steps only what the tables
    read). Rows written before steps existed have no trajectory and are left out."""
    listed = [(fields, row) for key, group in group_rows(rows).items()
              for fields in [key.fields()] for row in group if "steps" in row]
    for (fields, row), steps in zip(listed, whole_steps([row["steps"] for _, row in listed])):
        yield {**fields, "question_id": row["question_id"], "status": row["status"],
               "stopped": row.get("stopped"), "steps": steps}


def unscored_reasons(rows: list[SampleRow]) -> tuple[Counter, Counter]:
    """The pairs without a grade, as two counts of (label, reason): the answers the judge did
    not score (why not), and the pairs that failed, answer or judge call (their error); the
    label names the run identity (harness/reporting/identity.py). Both are `unscored` in the
    summary, but a failed pair is never said to be an unscored answer."""
    unscored: Counter = Counter()
    failed: Counter = Counter()
    groups = group_rows(rows)
    names = labels(groups)
    for key, group in groups.items():
        for row in group:
            if is_scored(row):
                continue
            if row["status"] == "failed":
                failed[(names[key], row.get("error") or "none recorded")] += 1
            else:
                grade = row["grade"]
                unscored[(names[key], (grade["unscored_reason"] if grade else None)
                          or "not graded")] += 1
    return unscored, failed


def columns_for(columns: Sequence[str], rows: list[dict[str, Any]]) -> tuple[str, ...]:
    """The columns of a table, with `run` (and, in the decision table, `against`: the reference
    runs) when its rows carry them, i.e. when they are needed to tell rows apart, and in the cost
    table `batch_calls` when some calls were priced at the Batch API's rate."""
    optional = (RUN, "against", "batch_calls")
    return tuple(columns) + tuple(c for c in optional if any(row.get(c) for row in rows))


def render(summary: list[dict[str, Any]], fmt: str, judge: dict[str, Any] | None = None,
           breakdowns: dict[str, list[dict[str, Any]]] | None = None,
           known: list[dict[str, Any]] | None = None,
           answers: Iterable[dict[str, Any]] | None = None) -> str:
    """The summary table as printed: markdown, the narrow table of render/terminal.py; as JSON
    with the judge's checks (harness/reporting/judge_check.py), the summary broken down by
    question fields (harness/reporting/breakdown.py), what the answer model knows without
    retrieval (harness/reporting/freshness.py) and every answer's trajectory (`trajectories`)
    if given; CSV, every column. In markdown, the lines of `known` follow the table."""
    return "".join(rendered(summary, fmt, judge, breakdowns, known, answers))


def rendered(summary: list[dict[str, Any]], fmt: str, judge: dict[str, Any] | None = None,
             breakdowns: dict[str, list[dict[str, Any]]] | None = None,
             known: list[dict[str, Any]] | None = None,
             answers: Iterable[dict[str, Any]] | None = None) -> Iterator[str]:
    """`render`'s text in parts, each answer one: printed part by part, a report of 100,000
    trajectories is never one string of hundreds of megabytes."""
    columns = columns_for(COLUMNS, summary)
    if fmt == "json":  # strict JSON: a statistic that is no finite number is null (`finite`)
        yield from _with_answers(dumps(finite({
            "rows": summary, **({"judge": judge} if judge else {}),
            **({"breakdowns": breakdowns} if breakdowns else {}),
            **({"known": known} if known else {})}), indent=2), answers or [])
    elif fmt == "csv":  # through the csv module, formulas defused (core/tables.py)
        yield tables.csv_text([{k: models_label(v) if isinstance(v, dict) else v
                                for k, v in row.items()} for row in summary], columns)
    elif fmt == "markdown":
        yield (terminal_table(summary) + _known_text(known) + _few_text(summary)
               + f"\n\nthe whole table, with unscored and failed pairs, retrievals and models: "
               f"{SUMMARY_MD}")
    else:
        raise ValueError(f"unknown format {fmt!r}; choose markdown, json or csv")


def _few_text(summary: list[dict[str, Any]]) -> str:
    """Under the first screen's table, where some system has fewer than MIN_PAIRED scored
    answers: that its paired tests give no interval or p-value (outcomes.untested)."""
    few = [row for row in summary if (row.get("scored") or 0) < MIN_PAIRED]
    if not few:
        return ""
    return (f"\n\nfewer than {MIN_PAIRED} scored answers for {len(few)} of "
            f"{counted(len(summary), 'system')} (n above): too few for a paired test; their comparisons say so instead "
            f"of an interval or p-value")


def _with_answers(document: str, answers: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The JSON `document` with `answers` added, one answer a line, each made as it is
    written: a run's trajectories are most of the report, and JSON without indentation is
    written by json's C encoder, several times faster than its indenting one. Read from strict
    JSON rows, they hold no NaN."""
    listed = iter(answers)
    first = next(listed, None)
    if first is None:
        yield document
        return
    # `dumps`, made once; rows read from JSON hold no cycle for its check to find
    encode = json.JSONEncoder(allow_nan=False, check_circular=False, default=_builtins).encode
    yield f'{document[:-2]},\n  "answers": [\n    ' + encode(first)
    for answer in listed:
        yield ",\n    " + encode(answer)
    yield "\n  ]\n}"


def _known_text(known: list[dict[str, Any]] | None) -> str:
    """The lines on what the answer model knows, after a blank line; "" when there are none."""
    lines = known_lines(known or [], tables.cell)
    return "\n\n" + "\n".join(lines) if lines else ""


def markdown_table(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    """Every table of the printed report: each value as `format_value` shows it, escaped so that
    no value leaves its cell (core/tables.py)."""
    lines = tables.header(columns)
    # the system cell names the row as the figures do (identity.labels), as on the HTML page
    names = row_labels(rows) if "system" in columns and any(
        isinstance(row.get("models"), dict) for row in rows) else None
    lines += [tables.row(format_value(names[i] if names and c == "system"
                                      else cell_value(row, c), c)
                         for c in columns) for i, row in enumerate(rows)]
    return "\n".join(lines)


def write_summary(out_dir: Path, summary: list[dict[str, Any]],
                  breakdowns: dict[str, list[dict[str, Any]]] | None = None,
                  known: list[dict[str, Any]] | None = None, more: str = "") -> Path:
    """summary.json, and the whole table (every column) as markdown in summary.md, each with
    what the answer model knows without retrieval (`known`) if given; `more`, markdown sections
    after the table in summary.md (a run's Epochs section)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_text(out_dir / SUMMARY_MD, markdown_table(summary, columns_for(COLUMNS, summary))
               + _known_text(known) + (f"\n\n{more}" if more else "") + "\n")
    return write_text(out_dir / SUMMARY, render(summary, "json", breakdowns=breakdowns,
                                                known=known) + "\n")
