"""Import the run files released with the paper into a run directory that `freshrag report` reads.

A released run is a pickled list of dicts, one per question: `title`, `content`, `url`, optional
`date`, `question`, `answer`, `n_input_tokens`, `n_output_tokens`, `retrieved`, `context`, and in
scored files `truthfulness` and `relevance`. In the released naive-RAG runs `retrieved` is always
false though every answer retrieved, so a retrieval is counted where `context` holds retrieved
chunks (each chunk starts with `Title: `), and the retrieved titles are read from those lines.

Given the dataset the run answered, each row takes the id and text of the dataset's question it
asks (systems/external/matching.py: by question text, whitespace and case aside), so that a report
puts it beside a freshrag run's row of the same question; a row that asks none of them, or a
question asked twice, is refused naming the row. Without it, rows are numbered by position
(`DATASET/legacy-00000`) and line up only with other imports of the same file order.

Pickles can run code when loaded. `load_pickle` accepts only what such a file needs — lists,
dicts, tuples, sets, strings, numbers, booleans and None — and refuses anything else, naming it.
Before anything is loaded, plain_pickle.py follows the opcodes and refuses a pickle whose shared
references would unfold to more than a released run of its size could hold, so that a few hundred
bytes cannot make the import run for hours and fill the memory.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import pickle
from collections import Counter
from pathlib import Path
from typing import Any

from freshrag.core.errors import UserError
from freshrag.core.jsonl import JsonlWriter, now
from freshrag.core.manifest import read_manifest, write_manifest
from freshrag.core.row_check import sample_problem
from freshrag.core.rundir import check_kind, locked
from freshrag.core.samples import SAMPLES, read_samples
from freshrag.core.textfile import lone_surrogate
from freshrag.core.titles import title_form
from freshrag.core.types import Question
from freshrag.run.plain_pickle import ALLOWED_CLASSES, check
from freshrag.systems.external.matching import NoMatch, QuestionMatcher, summary

PAPER_MODEL = "gpt-4-0613"  # every role of the paper's runs
REQUIRED = ("title", "question", "answer", "n_input_tokens", "n_output_tokens")
CHUNK_MARK = "Title: "


class LegacyError(UserError, ValueError):
    """The file is not a released run; the message names the file and, for a row, its index."""


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in ALLOWED_CLASSES:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refused to load {module}.{name}: only plain containers, "
                                     f"strings, numbers, booleans and None are accepted")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("refused a persistent id: not a plain pickle")


def load_pickle(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise LegacyError(f"{path}: no such file") from None
    except OSError as err:
        raise LegacyError(f"{path}: cannot read: {err.strerror}") from None
    try:
        check(data)  # plain data of bounded size, before the unpickler builds anything
        return _PlainUnpickler(io.BytesIO(data)).load()
    except Exception as err:  # any bytes reach the unpickler: it fails in many ways, all "not a run"
        raise LegacyError(f"{path}: not a plain pickle of a released run "
                          f"({type(err).__name__}: {str(err)[:200]})") from None


def retrieved_titles(context: Any) -> list[str]:
    """Titles of the retrieved chunks in a row's `context` (a string, or a list of chunks)."""
    if not context:
        return []
    text = "\n".join(map(str, context)) if isinstance(context, (list, tuple)) else str(context)
    # "\n" alone ends a line: splitlines() would also cut a title at U+2028 and the like
    return [title_form(line[len(CHUNK_MARK):].strip()) for line in text.split("\n")
            if line.startswith(CHUNK_MARK)]


def sample_rows(rows: Any, path: Path, dataset: str, system: str,
                model: str = PAPER_MODEL) -> list[dict[str, Any]]:
    """The rows of a released run as `samples.jsonl` rows (see harness/core/samples.py). They have no
    calls; `models` says which model answered, for the cost analysis."""
    if not isinstance(rows, list):
        raise LegacyError(f"{path}: expected a list of dicts, found {type(rows).__name__}")
    return [_checked({**_sample_row(row, index, path, dataset, system), "models": {"answer": model}},
                     f"{path}: row {index}") for index, row in enumerate(rows)]


def matched(rows: list[dict[str, Any]], path: Path,
            questions: list[Question]) -> tuple[list[dict[str, Any]], str]:
    """The rows, each with the id, text and fields of the dataset's question it asks, and the line
    saying how they matched; a row that asks none, or asks one again, is a LegacyError."""
    matcher = QuestionMatcher(questions)
    first: dict[str, int] = {}
    rules: Counter = Counter()
    placed = []
    for index, row in enumerate(rows):
        try:
            question, rule = matcher.match(None, row["question"])
        except NoMatch as err:
            raise LegacyError(f"{path}: row {index}: {err}") from None
        if question.id in first:
            raise LegacyError(f"{path}: row {index}: asks question {question.id!r} again (first "
                              f"at row {first[question.id]})")
        first[question.id] = index
        rules[rule] += 1
        placed.append({**row, "question_id": question.id, "question": question.text,
                       "gold_title": question.gold_title, **question.fields()})
    return placed, summary(str(path), rules, matcher.unanswered(set(first)))


def _checked(row: dict[str, Any], where: str) -> dict[str, Any]:
    """The row, if `freshrag report` can read it back once written: JSON text, valid Unicode, the
    fields of a samples.jsonl row."""
    try:
        field = _unwritable(row)
    except RecursionError:
        raise LegacyError(f"{where}: nested too deeply to be written as JSON") from None
    if field:
        raise LegacyError(f"{where}: {field} cannot be written as JSON (bytes, a set, NaN or "
                          f"infinity?)")
    problem = sample_problem(row) or (lone_surrogate(row) is not None and
                                      "holds text with a lone surrogate, which is not Unicode")
    if problem:
        raise LegacyError(f"{where}: {problem}")
    return row


def _unwritable(value: Any, path: str = "") -> str | None:
    """The dotted path of the first field that JSON cannot hold, or None."""
    if isinstance(value, dict):
        for key, item in value.items():
            found = _unwritable(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
        return None
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return path or "the row"
    return None


def _sample_row(row: Any, index: int, path: Path, dataset: str, system: str) -> dict[str, Any]:
    where = f"{path}: row {index}"
    if not isinstance(row, dict):
        raise LegacyError(f"{where}: expected a dict, found {type(row).__name__}")
    missing = [field for field in REQUIRED if field not in row]
    if missing:
        raise LegacyError(f"{where}: missing {', '.join(missing)}")
    for field in ("title", "question", "answer"):
        if not isinstance(row[field], str):
            raise LegacyError(f"{where}: {field} is {row[field]!r:.80}, not text")
    tokens = {field: row[field] for field in ("n_input_tokens", "n_output_tokens")}
    for field, value in tokens.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise LegacyError(f"{where}: {field} is {value!r}, not a count")
    try:
        titles = retrieved_titles(row.get("context"))
    except RecursionError:
        raise LegacyError(f"{where}: context nested too deeply") from None
    retrieved = bool(row.get("retrieved")) or bool(titles)
    return {
        "dataset": dataset, "question_id": f"{dataset}/legacy-{index:05d}",
        "question": row["question"], "gold_title": title_form(row["title"]), "system": system,
        "status": "ok",
        "answer": row["answer"], "retrievals": int(retrieved),
        "usage": {"answer": {"input": tokens["n_input_tokens"],
                             "output": tokens["n_output_tokens"], "estimated": False}},
        "grade": _grade(row, where),
        "calls": [],
        # no titles (a retrieval flagged without its context) is unknown, not a miss
        "details": {"decision": None, "retrieved": [{"title": t} for t in titles] or None,
                    # the retrieved text itself, for the scorers that read it (faithfulness,
                    # context relevance: harness/scoring/scorepass.py)
                    "context": _context_text(row.get("context")) if titles else None,
                    "legacy": {"retrieved_flag": row.get("retrieved"), "url": row.get("url"),
                               "date": row.get("date")}},
        "latency_s": None, "error": None, "finished_at": now(),
    }


def _context_text(context: Any) -> str:
    return "\n\n".join(map(str, context)) if isinstance(context, (list, tuple)) else str(context)


def _grade(row: dict[str, Any], where: str) -> dict[str, Any] | None:
    if "truthfulness" not in row and "relevance" not in row:
        return {"truthfulness": None, "relevance": None,
                "unscored_reason": "not scored in the released file", "raw": []}
    scores = {}
    for field in ("truthfulness", "relevance"):
        value = row.get(field)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not (math.isfinite(value) and 1 <= value <= 5):
            raise LegacyError(f"{where}: {field} is {value!r:.80}, not a score from 1 to 5")
        scores[field] = value
    return {**scores, "unscored_reason": None, "raw": []}


def import_legacy(path: Path, dataset: str, system: str, out: Path, model: str = PAPER_MODEL,
                  questions: list[Question] | None = None) -> tuple[int, str | None]:
    """Write `out/samples.jsonl` and `out/manifest.json` from a released run; return the rows
    and, given the dataset's `questions`, the line saying how the rows matched them (`matched`).
    Importing the same file again replaces this system's rows, never duplicates them. `out` is
    held for the import, and refused if it holds anything but imports (harness/core/rundir.py)."""
    rows = sample_rows(load_pickle(path), path, dataset, system, model)
    line = None
    if questions is not None:
        rows, line = matched(rows, path, questions)
    with locked(out):
        # everything already in `out` is read (and refused if unreadable) before anything is written
        manifest = read_manifest(out)
        check_kind(out, manifest, "import")
        manifest = manifest or {"created_at": now(), "dataset": {"name": dataset}, "imports": {}}
        manifest["kind"] = "import"  # imports written before `kind` gain it
        imports = manifest.setdefault("imports", {})
        if not isinstance(imports, dict):
            raise LegacyError(f"{out / 'manifest.json'}: 'imports' must be an object, "
                              f"got {imports!r:.80}")
        _replace_rows(out / SAMPLES, rows, dataset, system)
        imports[f"{dataset}/{system}"] = {
            "legacy_pickle": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "rows": len(rows), "imported_at": now()}
        write_manifest(out, manifest)
    return len(rows), line


def _replace_rows(samples: Path, rows: list[dict[str, Any]], dataset: str, system: str) -> None:
    kept = [r for r in read_samples(samples) if (r.get("dataset"), r["system"]) != (dataset, system)]
    partial = samples.with_name(SAMPLES + ".partial")
    partial.unlink(missing_ok=True)
    writer = JsonlWriter(partial)
    try:
        for row in kept + rows:
            writer.write(row)
    finally:
        writer.close()
    partial.replace(samples)
