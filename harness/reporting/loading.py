"""The answers of a report, read from its run directories (docs/reports.md): their summaries,
which every table reads (`load_summaries`), or the whole rows, where whole rows are shown
(`load_runs`), each marked with its run, its scores beyond the judge and its embedding model (a
summary also with its system's declared kind), in the order of its `--systems`
(`in_systems_order`); and the notes on runs with nothing to report or pairs missing
(`run_notes`). A report reads each run's manifest once (`read_runs`) and hands the `Run`s to
what else asks it (`summaries_of`, `rows_of`, `run_notes`, the judge's checks).

Rows come run directory by run directory as given, each in the order of its `--systems`, and
each system's in the order of the run's plan (core/plan_order.py), never the order the pairs
finished in: every table and figure made from them lists the systems as the user named them,
and what is computed over a system's answers in turn (a bootstrap) is the same however the run
was walked. A run directory with no rows, or with failed rows only, is named in a note rather
than left to look like a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

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
from freshrag.core.plan_order import PlanOrder, plan_order
from freshrag.core.records import SampleRow
from freshrag.core.samples import SAMPLES, epoch_of, read_samples, read_summaries
from freshrag.core.summary import AnswerSummary
from freshrag.core.types import SYSTEM_KINDS, SystemKind
from freshrag.reporting.identity import RUN, retriever_model
from freshrag.scoring.store import Found, answer_scores, judged, scores_of, with_judge_pass

READING = {  # the arguments of the loads and of summarise (core/arguments.py)
    "run_dirs": Argument(f"a run directory or a list of them, each {PATH}", paths()),
    "every_epoch": Argument("True or False", flag),
    "answers": Argument("a list of answer summaries, as load_summaries gives them",
                        lambda value: refused(isinstance(value, list) and all(
                            isinstance(answer, AnswerSummary) for answer in value))),
    "prices": Argument("a mapping of model to (input, output) dollars per million tokens, or "
                       "None", kind(Mapping, type(None))),
    "correct_at": Argument("a whole number from 1 to 5", whole(1, 5)),
}


@dataclass(frozen=True)
class Run:
    """A run directory as a report reads it: by the name it was first given, with its manifest
    ({} when it has none), read once."""

    name: str  # the directory as given
    manifest: Mapping[str, Any]

    @property
    def path(self) -> Path:
        return Path(self.name)


def read_runs(run_dirs: str | Path | Sequence[str | Path]) -> list[Run]:
    """The given run directories (one, or a list; str or Path), each once (one named twice is
    read by its first name), with their manifests; a directory without samples is an error."""
    runs: dict[Path, Run] = {}
    for run_dir in map(Path, [run_dirs] if isinstance(run_dirs, (str, Path)) else run_dirs):
        if not (run_dir / SAMPLES).exists():
            raise ResultsError(f"{run_dir}: no {SAMPLES}; is this a run directory?")
        if run_dir.resolve() not in runs:
            runs[run_dir.resolve()] = Run(str(run_dir), read_manifest(run_dir) or {})
    return list(runs.values())


def load_summaries(run_dirs: str | Path | Sequence[str | Path],
                   every_epoch: bool = False) -> list[AnswerSummary]:
    """The answer summaries of the given run directories (one, or a list; str or Path; a
    directory without samples is an error), as every table reads them (core/summary.py, made
    by the light read: core/samples.py read_summaries): each marked with its `run` (the
    directory as given; one named twice is read once), its `scores` from scores.jsonl (scorer ->
    repeat 0, for this answer; a judge pass is the grade of an answer the run left ungraded:
    scoring/store.py judged), its `system_kind` as the run's manifest records it and, if it
    retrieved, the run's embedding model in `models` (see harness/reporting/identity.py). The
    first epoch's only (what the tables read) unless `every_epoch`
    (harness/reporting/epochs.py)."""
    check_arguments({"run_dirs": run_dirs, "every_epoch": every_epoch}, READING)
    return summaries_of(read_runs(run_dirs), every_epoch)


def summaries_of(runs: Sequence[Run], every_epoch: bool = False) -> list[AnswerSummary]:
    """`load_summaries` of runs already read (`read_runs`)."""
    def complete(answer: AnswerSummary, run: _Adds) -> AnswerSummary:
        answer.dataset, answer.run = answer.dataset or run.dataset, run.name
        answer.system_kind = run.kinds.get(answer.system)
        answer.scores = scores_of(run.scores, answer.dataset, answer.question_id,
                                  answer.system, answer.answer)
        answer = judged(answer)
        if run.embedder and answer.retrievals:
            answer.models = {"embeddings": run.embedder, **answer.models}
        return answer

    return _loaded(runs, lambda path: read_summaries(path, every_epoch), complete,
                   lambda answer: (answer.dataset, answer.system),
                   lambda answer: (answer.epoch, answer.question_id, answer.system))


def load_runs(run_dirs: str | Path | Sequence[str | Path],
              every_epoch: bool = False) -> list[SampleRow]:
    """The whole rows of the given run directories, for what shows whole rows (the HTML page's
    answers, the labelling page, exports), marked and ordered as `load_summaries` marks and
    orders their summaries (the judge pass: scoring/store.py with_judge_pass)."""
    check_arguments({"run_dirs": run_dirs, "every_epoch": every_epoch}, READING)
    return rows_of(read_runs(run_dirs), every_epoch)


def rows_of(runs: Sequence[Run], every_epoch: bool = False) -> list[SampleRow]:
    """`load_runs` of runs already read (`read_runs`)."""
    def complete(row: SampleRow, run: _Adds) -> SampleRow:
        row.update({"dataset": row.get("dataset") or run.dataset, RUN: run.name})
        row["scores"] = scores_of(run.scores, row.get("dataset"), row["question_id"],
                                  row["system"], row.get("answer"))
        row = with_judge_pass(row)
        if run.embedder and row.get("retrievals"):
            row["models"] = {"embeddings": run.embedder, **(row.get("models") or {})}
        return row

    return _loaded(runs, lambda path: read_samples(path, every_epoch=every_epoch), complete,
                   lambda row: (row.get("dataset"), row["system"]),
                   lambda row: (epoch_of(row), row["question_id"], row["system"]))


@dataclass(frozen=True)
class _Adds:
    """What a run directory adds to each of its answers on reading."""

    name: str  # the directory as given
    dataset: str | None  # the manifest's, for rows that name none
    embedder: str | None  # identity.retriever_model
    scores: Found  # scorers beyond the run's judge (harness/scoring/store.py)
    kinds: Mapping[str, SystemKind]  # as the manifest records each system's (`system_kinds`)
    order: PlanOrder  # the run's plan's


def _adds(run: Run) -> _Adds:
    """What `run` adds to its answers, from its manifest."""
    manifest = run.manifest
    kinds = manifest.get("system_kinds")
    return _Adds(run.name, manifest.get("dataset", {}).get("name"),
                 retriever_model(manifest.get("index")), answer_scores(run.path),
                 {name: value for name, value in kinds.items() if value in SYSTEM_KINDS}
                 if isinstance(kinds, dict) else {}, plan_order(manifest))


Made = TypeVar("Made")


def _loaded(runs: Sequence[Run], read: Callable[[Path], list[Made]],
            complete: Callable[[Made, _Adds], Made], named: Callable[[Made], tuple[Any, str]],
            pair: Callable[[Made], tuple[int, str, str]]) -> list[Made]:
    """What `read` makes of each run's samples, each `complete`d with what its run adds, in
    the order of its `--systems` (`named`: its dataset and system), each system's in its plan's
    (`pair`: its epoch, question id and system)."""
    made: list[Made] = []
    for run in runs:
        adds = _adds(run)
        mine = read(run.path / SAMPLES)
        with collector_paused():  # what the report keeps to its end (core/light.py)
            mine = [complete(one, adds) for one in mine]
        systems = run.manifest.get("systems")
        made += in_systems_order(mine, systems if isinstance(systems, list) else [], named,
                                 lambda one: adds.order.key(*pair(one)))
    return made


def in_systems_order(made: list[Made], order: Sequence[Any],
                     named: Callable[[Made], tuple[Any, str]],
                     within: Callable[[Made], Any] | None = None) -> list[Made]:
    """One run's answers (`named`: each one's dataset and system) by dataset (as first met),
    then system in `order` (the manifest's `systems`, as given to --systems; a system it does
    not name, as an import's, after them as first met); within each, by `within` (the plan's
    order: core/plan_order.py), else as read."""
    names = [name for name in order if isinstance(name, str)]
    keys = [named(one) for one in made]
    ranks = {name: i for i, name in enumerate(dict.fromkeys(
        [*names, *(system for _, system in keys)]))}
    datasets = {name: i for i, name in enumerate(dict.fromkeys(key[0] for key in keys))}
    places = [within(one) for one in made] if within else [0] * len(made)
    ordered = sorted(range(len(made)),
                     key=lambda i: (datasets[keys[i][0]], ranks[keys[i][1]], places[i]))
    return [made[i] for i in ordered]


def run_notes(runs: Sequence[Run], answers: list[AnswerSummary]) -> list[str]:
    """A line for each run that has no rows, or only failed ones (what an unreachable endpoint
    leaves behind), and for each its manifest says is incomplete (merged from too few shards,
    or capped by --max-cost)."""
    notes = []
    for run in runs:
        mine = [answer for answer in answers if answer.run == run.name]
        failed = [answer for answer in mine if answer.status == "failed"]
        if not mine:
            notes.append(f"{run.name}: no rows ({SAMPLES} is empty): nothing to report")
        elif len(failed) == len(mine):
            notes.append(f"{run.name}: all {len(mine)} pairs failed (first error: "
                         f"{(failed[0].error or 'none recorded')[:200]})")
        if note := _merge_note(run.manifest.get("merged")):
            notes.append(f"{run.name}: {note}")
        capped = run.manifest.get("capped")
        if capped:  # written by a run that --max-cost stopped (harness/cost/budget.py)
            notes.append(f"{run.name}: CAPPED by --max-cost ${capped['max_cost']:,.4f} after "
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
