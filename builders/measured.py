"""Fresh for a model, by measurement (docs/building.md#fresh-for-a-model-by-measurement): a
question set cut down to the questions a named model fails closed-book.

The paper's A_f (docs/methods.md#dataset-workflow) asks an LLM whether an article is about events
after the cutoff: an opinion. This stage reads what a run measured instead: the grades the judge
gave a system's answers (`baseline` answers with no retrieval) in the run's samples.jsonl. A
question whose answer was graded below `known_at` for truthfulness is one the model does not
know, and is kept; the others are known to that model, so not fresh for it.

A question with no usable grade (the judge gave none, the pair failed, the run never asked it)
is not kept, since nothing says the model fails it, and is counted. Only the run's own grade is
read (a grade that a later `freshrag score --scorers judge` pass gave a row the run left ungraded
is not: this stage reads nothing above core). The articles are copied whole: the retrieval
database stays the one the set was built with.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from freshrag.builders.traffic.mix import raw_rows
from freshrag.core.dataset import Dataset, load_dataset_dir, sha256_file
from freshrag.core.errors import UserError
from freshrag.core.files import replacing
from freshrag.core.jsonl import now, replace_jsonl
from freshrag.core.manifest import MANIFEST, read_manifest, write_manifest
from freshrag.core.records import Manifest
from freshrag.core.samples import SAMPLES, read_summaries
from freshrag.core.summary import AnswerSummary
from freshrag.core.wording import counted

KNOWN_AT = 4  # truthfulness from which an answer counts as known (as the report's share)
SYSTEM = "baseline"  # the system that answers with no retrieval
WRITTEN = ("questions.jsonl", "articles.jsonl", MANIFEST)


class MeasuredError(UserError, ValueError):
    """A run or dataset this stage cannot filter by; the message names the input."""


@dataclass(frozen=True)
class Measured:
    """The run's verdict on each question of the dataset: kept ids in the dataset's order, and
    the ids of the others by why they went."""

    kept: list[str]
    known: list[str]
    unscored: list[str]
    failed: list[str]
    not_in_run: list[str]
    model: str | None
    matched_by: str

    def counts(self) -> dict[str, int]:
        return {name: len(getattr(self, name))
                for name in ("kept", "known", "unscored", "failed", "not_in_run")}


def measure(dataset: Dataset, run_dir: Path, system: str = SYSTEM,
            known_at: int = KNOWN_AT) -> Measured:
    """Which questions of `dataset` the run's `system` answered below `known_at` (kept)."""
    rows = _system_rows(run_dir, system)
    manifest: Manifest = read_manifest(run_dir) or {}
    matched_by = _check_same_dataset(dataset, run_dir, manifest, rows)
    by_id = {row.question_id: row for row in rows}
    verdicts: dict[str, list[str]] = {name: [] for name in
                                      ("kept", "known", "unscored", "failed", "not_in_run")}
    for question in dataset.questions:
        verdicts[_verdict(by_id.get(question.id), known_at)].append(question.id)
    return Measured(**verdicts, model=_answer_model(run_dir, manifest, rows, system),
                    matched_by=matched_by)


def _verdict(row: AnswerSummary | None, known_at: int) -> str:
    if row is None:
        return "not_in_run"
    if row.status == "failed":
        return "failed"
    grade = row.grade
    truthfulness = None if grade is None else grade.truthfulness
    if grade is None or grade.unscored_reason is not None or truthfulness is None:
        return "unscored"
    return "known" if truthfulness >= known_at else "kept"


def _system_rows(run_dir: Path, system: str) -> list[AnswerSummary]:
    """The run's rows of `system`, or the reason there are none."""
    if not (run_dir / SAMPLES).is_file():
        raise MeasuredError(f"{run_dir}: no {SAMPLES}; is this a run directory?")
    rows = read_summaries(run_dir / SAMPLES)
    mine = [row for row in rows if row.system == system]
    if not mine:
        ran = ", ".join(sorted({row.system for row in rows})) or "none"
        raise MeasuredError(f"{run_dir}: no answers of system {system!r} (it holds: {ran}); run "
                            f"it with --systems {system}, or name one it holds with --system")
    return mine


def _check_same_dataset(dataset: Dataset, run_dir: Path, manifest: Manifest,
                        rows: list[AnswerSummary]) -> str:
    """How the run was matched to the dataset: the questions file's SHA-256 the run recorded,
    else every answered question found in the dataset with the same text (a set labelled
    since, or a run imported without hashes); refused otherwise."""
    recorded = (manifest.get("dataset") or {}).get("sha256") or {}
    if recorded.get("questions") == sha256_file(dataset.files["questions"]):
        return "questions sha256"
    texts = {question.id: question.text for question in dataset.questions}
    for row in rows:
        if row.question_id not in texts:
            raise MeasuredError(f"{run_dir}: made on another dataset than "
                                f"{dataset.files['questions']}: question {row.question_id!r} "
                                f"is not in it; give the dataset the run answered")
        if row.question is not None and row.question != texts[row.question_id]:
            raise MeasuredError(f"{run_dir}: made on another dataset than "
                                f"{dataset.files['questions']}: question {row.question_id!r} "
                                f"reads otherwise there; give the dataset the run answered")
    return "question ids"


def _answer_model(run_dir: Path, manifest: Manifest, rows: list[AnswerSummary],
                  system: str) -> str | None:
    """The one model that answered the rows (their calls, or an import's `models`), else the
    run manifest's answer role; rows from two models are refused: their grades measure two."""
    seen = set()
    for row in rows:
        model = row.models.get("answer")  # its calls', or an import's (core/summary.py)
        if model:
            seen.add(model)
    if len(seen) > 1:
        raise MeasuredError(f"{run_dir}: the {system!r} answers come from "
                            f"{len(seen)} answer models ({', '.join(sorted(seen))}): a filter "
                            f"measures one; give a run of one model")
    roles = ((manifest.get("llm") or {}).get("roles") or {})
    return next(iter(seen), None) or (roles.get("answer") or {}).get("model")


def write_measured(dataset_dir: Path, run_dir: Path, out: Path, system: str = SYSTEM,
                   known_at: int = KNOWN_AT) -> str:
    """Write the kept questions, the articles and a manifest into `out`; a line saying so."""
    taken = [out / name for name in WRITTEN if (out / name).exists()]
    if taken:
        raise MeasuredError(f"{out}: holds {taken[0].name} already, which the filter would "
                            f"overwrite; give a new --out")
    dataset = load_dataset_dir(dataset_dir)  # checked whole before anything is written
    measured = measure(dataset, run_dir, system, known_at)
    counts = measured.counts()
    if not measured.kept:
        raise MeasuredError(f"{run_dir}: no question of {dataset_dir} was graded below "
                            f"{known_at} for {system!r} ({_shown(counts)}): nothing to keep")
    raw = raw_rows(dataset.files["questions"])
    out.mkdir(parents=True, exist_ok=True)
    # the ids as the source gave or numbered them, so that runs on both sets line up
    replace_jsonl(out / "questions.jsonl", ({**raw[qid], "id": qid} for qid in measured.kept))
    with replacing(out / "articles.jsonl") as copy:  # never through a link (core/files.py)
        shutil.copyfile(dataset.files["articles"], copy)
    write_manifest(out, {"kind": "dataset", "created_at": now(),
                         "source": {"dataset": str(dataset_dir),
                                    "sha256": dataset.file_hashes()},
                         "measured": _record(measured, run_dir, system, known_at)})
    return (f"{out}: {counts['kept']} of {counted(len(dataset.questions), 'question')} kept, those "
            f"{measured.model or 'the model'} answered below truthfulness {known_at} without "
            f"retrieval ({_shown(counts)}); run it with: freshrag run --dataset {out}")


def _record(measured: Measured, run_dir: Path, system: str, known_at: int) -> dict[str, Any]:
    """What the manifest says was kept and why."""
    return {"run": str(run_dir), "system": system, "answer_model": measured.model,
            "known_at": known_at, "matched_by": measured.matched_by,
            "rule": f"kept: questions whose {system} answer the judge graded below {known_at} "
                    f"for truthfulness; questions with no usable grade (unscored, failed, not "
                    f"in the run) are not kept",
            "counts": measured.counts()}


def _shown(counts: dict[str, int]) -> str:
    return (f"{counts['known']} known, {counts['unscored']} unscored, {counts['failed']} failed, "
            f"{counts['not_in_run']} not in the run")
