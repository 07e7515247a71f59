"""The order a run's plan asks its pairs in (docs/running.md#the-plan): epoch by epoch, each
question in its place in the dataset, each system in its place in --systems. A run at
--concurrency above 1, on Ray or resumed writes its rows in the order the pairs finished; merge
writes them in this order, and a report reads them in it, so that what a report computes over
its answers in turn (the bootstrap's resamples) does not depend on which pair finished first
(docs/reports.md#how-sure-the-numbers-are).

The questions' places come from the dataset's questions file the manifest records, read only if
its hash is the one recorded; where that file moved or changed, questions go by id (as text),
which no completion order changes either.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from freshrag.core.dataset import DatasetError, dataset_rows, question_id, sha256_file


@dataclass(frozen=True)
class PlanOrder:
    """A run's order of pairs, as a sort key (`key`)."""

    systems: Mapping[str, int]  # a system's place in the manifest's `systems`
    questions: Mapping[str, int] = field(default_factory=dict)  # {}: by question id

    def key(self, epoch: int, question: str, system: str) -> tuple[Any, ...]:
        """Where the pair stands: a question the dataset does not list, and a system --systems
        does not name, after the others, by id and name (no two pairs of a run tie)."""
        return (epoch, self.questions.get(question, len(self.questions)), question,
                self.systems.get(system, len(self.systems)), system)


def plan_order(manifest: Mapping[str, Any]) -> PlanOrder:
    """The order of the run `manifest` records; its questions by id where the dataset's
    questions file is not the one it ran on (`dataset_file_problem`) or cannot be read."""
    places = system_places(manifest)
    record = manifest.get("dataset")
    if not isinstance(record, Mapping) or dataset_file_problem(record, "questions"):
        return PlanOrder(places)
    try:
        return PlanOrder(places, question_places(Path(record["files"]["questions"])))
    except (DatasetError, OSError):
        return PlanOrder(places)


def system_places(manifest: Mapping[str, Any]) -> dict[str, int]:
    """Each system's place in the manifest's `systems` (as --systems named them)."""
    systems = manifest.get("systems")
    named = [name for name in systems if isinstance(name, str)] if isinstance(systems, list) \
        else []
    return {name: place for place, name in enumerate(dict.fromkeys(named))}


def dataset_file_problem(record: Mapping[str, Any], kind: str) -> str | None:
    """Why the dataset's `kind` file ("questions", "articles") a manifest's `dataset` record
    names is not the file the run read: "missing" or "changed" (its hash another); None if it
    is."""
    files, hashes = record.get("files"), record.get("sha256")
    path = files.get(kind) if isinstance(files, Mapping) else None
    if not isinstance(path, str) or not Path(path).is_file():
        return "missing"
    try:
        same = isinstance(hashes, Mapping) and sha256_file(Path(path)) == hashes.get(kind)
    except OSError:
        return "missing"
    return None if same else "changed"


def question_places(path: Path) -> dict[str, int]:
    """Each question's place in the questions file at `path`, by its id as the dataset reads
    it (core/dataset.py), without reading its articles."""
    return {question_id(row, path, line_no): place
            for place, (line_no, row) in enumerate(dataset_rows(path))}
