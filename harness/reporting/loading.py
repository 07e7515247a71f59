"""The rows of a report, read from its run directories (docs/reports.md): each run's rows marked
with its run, its scores beyond the judge and its embedding model (`load_runs`), in the order of
its `--systems` (`in_systems_order`), and the notes on runs with nothing to report or pairs
missing (`run_notes`).

Rows come run directory by run directory as given, each in the order of its `--systems`, not
the order the pairs finished in, so that every table and figure made from them lists the
systems as the user named them. A run directory with no rows, or with failed rows only, is named
in a note rather than left to look like a crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

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
from freshrag.core.jsonl import ResultsError
from freshrag.core.light import collector_paused
from freshrag.core.manifest import read_manifest
from freshrag.core.records import SampleRow
from freshrag.core.samples import SAMPLES, read_samples
from freshrag.reporting.identity import RUN, retriever_model
from freshrag.scoring.store import answer_scores, scores_of, with_judge_pass

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
