"""Where a run is written: `results/NAME/samples.jsonl` and `results/NAME/manifest.json`.

One JSON Lines row per (question, system), appended the moment the pair finishes, with everything
needed to recompute any table later:

- `dataset`, `question_id`, `question`, `gold_title`, `system`
- `status`: "ok", or "failed" (an LLM error; `error` says why; failed pairs are retried on resume)
- `answer`: the system's answer text (null when failed)
- `retrievals`: how many times the system retrieved
- `usage`: per role (answer, decision, judge, ...) `{"input", "output", "estimated"}`, summed
  over `calls`
- `grade`: `{"truthfulness", "relevance", "unscored_reason", "raw", "context_cut"}` (scores null
  when unscored; `context_cut` `{"chars", "halvings"}` when the article was halved to fit)
- `calls`: every LLM call the pair made (the system's, then the judge's), with the messages sent,
  tool arguments, usage, latency, cache hit and `batch` (answered by the Batch API, so priced
  at the batch rate; absent from rows written before it, which are list price). A failed row
  holds the calls that succeeded before the failure, so that the tokens spent on failed pairs
  are counted too
- `details`: what the strategy reports about itself (decision, retrieved chunks, cuts)
- `latency_s`: wall time of the pair, `error`, `finished_at`

Rows are appended as whole lines to a file opened for appending. A process killed mid-write can
leave a last line without its newline. If that line is a whole row (valid JSON: no proper prefix
of a JSON object is one), reading keeps it and the next writer gives it its newline; if it is
torn, reading ignores it and the next writer cuts it off, so the pair it belonged to is simply
run again. The repair reads back from the end only as far as the last newline.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable

from freshrag.core.errors import UserError
from freshrag.core.textfile import lines, lone_surrogate, read_text
from freshrag.core.types import Grade, LLMResponse, Question, SystemAnswer, sum_usage_by_role

SAMPLES = "samples.jsonl"
MANIFEST = "manifest.json"
TAIL_BLOCK = 1 << 16  # bytes read at a time when looking back for the last newline
# The manifest's layout; a manifest of a higher version comes from a newer freshrag and is refused.
# Manifests written before the field existed are version 1.
FORMAT_VERSION = 1


class ResultsError(UserError, ValueError):
    pass


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def sample_row(dataset: str, question: Question, system: str, answer: SystemAnswer | None,
               grade: Grade | None, calls: list[LLMResponse], latency_s: float,
               error: str | None = None) -> dict[str, Any]:
    """One row; `calls` are all the pair's calls, the judge's included."""
    return {
        "dataset": dataset, "question_id": question.id, "question": question.text,
        "gold_title": question.gold_title, **question.fields(), "system": system,
        "status": "failed" if error else "ok",
        "answer": answer.text if answer else None,
        "retrievals": answer.retrievals if answer else 0,
        "usage": {role: asdict(usage) for role, usage in sum_usage_by_role(calls).items()},
        "grade": asdict(grade) if grade else None,
        "calls": [asdict(call) for call in calls],
        "details": answer.details if answer else {},
        "latency_s": round(latency_s, 4), "error": error, "finished_at": now(),
    }


class JsonlWriter:
    """Appends rows to a JSON Lines file (samples.jsonl, the builders' stage files), safe across
    threads.

    A last line left without its newline by a kill is repaired when the writer opens the file
    (see the module docstring), so that the next row starts on a line of its own instead of
    being glued to it.
    """

    def __init__(self, path: Path):
        self.path = path
        _repair_tail(path)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def write(self, row: dict[str, Any]) -> None:
        data = memoryview((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))
        with self._lock:
            try:
                while data:  # os.write may write less than asked (a full disk, a signal)
                    data = data[os.write(self._fd, data):]
            except OSError as err:  # name the file: os.write's own error does not
                raise OSError(err.errno, err.strerror, str(self.path)) from None

    def close(self) -> None:
        os.close(self._fd)


def _repair_tail(path: Path) -> None:
    """End the file with a newline: after a whole last row, or where a torn one began."""
    if not path.exists():
        return
    with open(path, "rb+") as handle:
        end = handle.seek(0, os.SEEK_END)
        start = _last_line_start(handle, end)
        if start == end:
            return
        handle.seek(start)
        if _is_row(handle.read(end - start)):
            handle.seek(end)
            handle.write(b"\n")
        else:
            handle.truncate(start)


def _last_line_start(handle: BinaryIO, end: int) -> int:
    """Where the file's last line starts (`end` if the file is empty or ends with a newline),
    reading backwards from `end` in blocks."""
    position = end
    while position > 0:
        step = min(TAIL_BLOCK, position)
        handle.seek(position - step)
        block = handle.read(step)
        if position == end and block.endswith(b"\n"):
            return end
        newline = block.rfind(b"\n")
        if newline >= 0:
            return position - step + newline + 1
        position -= step
    return 0


def _is_row(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:  # JSONDecodeError, or a multi-byte character cut in two
        return False


def read_jsonl(path: Path, check: Callable[[dict[str, Any]], str | None] | None = None
               ) -> list[dict[str, Any]]:
    """Every row of a file JsonlWriter wrote, in file order, streamed line by line; a torn last
    line is ignored. `check` says what is wrong with a row (None if nothing): the reader stops
    at that line."""
    if not path.exists():
        return []
    rows = []
    for line_no, line in lines(path, ResultsError, keep_breaks=True):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            if not line.endswith("\n"):  # the last line, torn by a kill mid-write
                print(f"{path}:{line_no}: ignoring an unfinished last row", file=sys.stderr)
                continue
            raise ResultsError(f"{path}:{line_no}: not valid JSON: {err.msg}") from None
        except RecursionError:
            raise ResultsError(f"{path}:{line_no}: JSON nested too deeply") from None
        problem = _row_problem(row, line) or (check and check(row))
        if problem:
            raise ResultsError(f"{path}:{line_no}: {problem}")
        rows.append(row)
    return rows


def _row_problem(row: Any, line: str) -> str | None:
    if not isinstance(row, dict):
        return f"expected a JSON object, got {type(row).__name__}"
    if "\\u" in line and (bad := lone_surrogate(row)) is not None:
        return f"{bad!r} holds a lone surrogate escape, which is not Unicode text"
    return None


def read_samples(path: Path) -> list[dict[str, Any]]:
    """Every row, the last one per (question, system) winning, in file order."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for row in read_jsonl(path, sample_problem):
        latest.pop((row["question_id"], row["system"]), None)
        latest[row["question_id"], row["system"]] = row
    return list(latest.values())


def replace_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write `rows` as the whole of the JSON Lines file `path`, atomically: a kill leaves the old
    file or the new one, never half of it (files that are rebuilt from stage records, not
    appended to). Returns the number of rows."""
    tmp = path.with_name(path.name + ".tmp")
    count = 0
    with tmp.open("w", encoding="utf-8") as lines:
        for row in rows:
            lines.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    os.replace(tmp, path)
    return count


def write_manifest(run_dir: Path, manifest: dict[str, Any]) -> None:
    tmp = run_dir / (MANIFEST + ".tmp")
    manifest = {**manifest, "format_version": FORMAT_VERSION}
    tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, run_dir / MANIFEST)  # atomic: a kill never leaves half a manifest


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    """The manifest of a run or dataset directory (None if it has none); one of a newer format,
    or not a JSON object, is refused."""
    path = run_dir / MANIFEST
    if not path.exists():
        return None
    try:
        manifest = json.loads(read_text(path, ResultsError))
    except json.JSONDecodeError as err:
        raise ResultsError(f"{path}: not valid JSON: {err.msg} (line {err.lineno})") from None
    except RecursionError:
        raise ResultsError(f"{path}: JSON nested too deeply") from None
    if not isinstance(manifest, dict):
        raise ResultsError(f"{path}: expected a JSON object, got {type(manifest).__name__}")
    version = manifest.get("format_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ResultsError(f"{path}: format_version must be a whole number >= 1, got {version!r}")
    if version > FORMAT_VERSION:
        raise ResultsError(f"{path}: written by a newer freshrag (format_version {version}; this "
                           f"one reads up to {FORMAT_VERSION}): upgrade freshrag to use it")
    if not isinstance(manifest.get("dataset", {}), dict):
        raise ResultsError(f"{path}: 'dataset' must be a JSON object")
    return manifest


def check_resumable(run_dir: Path) -> None:
    """Refuse a run directory the runner could not resume, before anything in it is rewritten: a
    manifest of a newer format or of another kind of directory, a samples.jsonl it cannot read."""
    manifest = read_manifest(run_dir) if run_dir.is_dir() else None
    problem = manifest is not None and _run_manifest_problem(manifest)
    if problem:
        raise ResultsError(f"{run_dir / MANIFEST}: {problem}; choose another --out")
    read_samples(run_dir / SAMPLES)


def _run_manifest_problem(manifest: dict[str, Any]) -> str | None:
    dataset = manifest.get("dataset") or {}
    if not isinstance(dataset.get("sha256"), dict) or not isinstance(dataset.get("files"), dict):
        return "not the manifest of a freshrag run (no dataset.sha256 and dataset.files)"
    for key in ("systems", "resumed_at"):
        if not isinstance(manifest.get(key, []), list):
            return f"{key!r} must be a list, got {manifest[key]!r:.80}"
    return None


# --------------------------------------------------------------------------- the rows' shape

_NONE = type(None)
_NUMBER = (int, float)
# Every field sample_row writes, with the JSON types a reader may meet there; the readers index
# the REQUIRED ones directly, and only look at the others if present (rows made by hand and older
# rows may lack them).
REQUIRED = ("question_id", "gold_title", "system", "status", "retrievals", "usage", "grade")
SAMPLE_FIELDS: dict[str, tuple[type, ...]] = {
    "dataset": (str, _NONE), "question_id": (str,), "question": (str,), "gold_title": (str, _NONE),
    "system": (str,), "status": (str,), "answer": (str, _NONE), "retrievals": (int,),
    "usage": (dict,), "grade": (dict, _NONE), "calls": (list,), "details": (dict, _NONE),
    "latency_s": (*_NUMBER, _NONE), "error": (str, _NONE), "finished_at": (str, _NONE),
}


def sample_problem(row: dict[str, Any]) -> str | None:
    """What is wrong with a samples.jsonl row for the readers (report, analysis, resume), or
    None: every field present with its type, usage as counts, grades as finite numbers."""
    missing = [name for name in REQUIRED if name not in row]
    if row.get("status") == "failed" and "error" not in row:
        missing.append("error")  # the reason a failed pair is reported with
    if missing:
        return f"field(s) {missing} missing"
    for name, types in SAMPLE_FIELDS.items():
        if name in row and not _is(row[name], types):
            return f"field {name!r} must be {_names(types)}, got {row[name]!r:.80}"
    if row["gold_title"] is None and row.get("kind") != "general":
        return "field 'gold_title' is null, which only a general query (kind 'general') may be"
    if row["status"] not in ("ok", "failed"):
        return f"field 'status' must be 'ok' or 'failed', got {row['status']!r:.80}"
    if row["retrievals"] < 0:
        return f"field 'retrievals' must be a count, got {row['retrievals']}"
    return (_usage_problem(row["usage"]) or _grade_problem(row["grade"])
            or _details_problem(row.get("details"), row.get("calls") or [], row.get("models")))


def _usage_problem(usage: dict[str, Any]) -> str | None:
    for role, counts in usage.items():
        if not isinstance(counts, dict) or not all(
                _is(counts.get(k), (int,)) and counts[k] >= 0 for k in ("input", "output")):
            return f"usage of {role!r} must be {{\"input\": count, \"output\": count}}, got {counts!r:.80}"
    return None


def _grade_problem(grade: dict[str, Any] | None) -> str | None:
    if grade is None:
        return None
    reason = grade.get("unscored_reason")
    if not _is(reason, (str, _NONE)) or not _is(grade.get("raw", []), (list,)):
        return f"grade must hold unscored_reason (text or null) and raw (a list), got {grade!r:.80}"
    for name in ("truthfulness", "relevance"):
        value = grade.get(name)
        scored = _is(value, _NUMBER) and math.isfinite(value)
        if not scored and (reason is None or value is not None):
            return f"grade {name!r} must be a finite number (or null when unscored), got {value!r:.80}"
    return None


def _details_problem(details: dict[str, Any] | None, calls: list[Any],
                     models: Any) -> str | None:
    details = details or {}
    retrieved = details.get("retrieved")
    if retrieved is not None and not (isinstance(retrieved, list) and all(
            isinstance(chunk, dict) and isinstance(chunk.get("title"), str) for chunk in retrieved)):
        return f"details.retrieved must be null or a list of {{\"title\": text}}, got {retrieved!r:.80}"
    if not _is(details.get("decision"), (str, _NONE)):
        return f"details.decision must be text or null, got {details['decision']!r:.80}"
    if not all(isinstance(call, dict) and isinstance(call.get("role"), str)
               and _is(call.get("model"), (str, _NONE)) for call in calls):
        return "calls must be a list of objects with a role (and model) as text"
    if models is not None and not (isinstance(models, dict)
                                   and all(isinstance(m, str) for m in models.values())):
        return f"field 'models' must map roles to model names, got {models!r:.80}"
    return None


def _is(value: Any, types: tuple[type, ...]) -> bool:
    """isinstance, where a JSON true/false is not a number."""
    return isinstance(value, types) and not (isinstance(value, bool) and bool not in types)


def _names(types: tuple[type, ...]) -> str:
    words = {str: "text", int: "a whole number", float: "a number", dict: "an object",
             list: "a list", _NONE: "null"}
    return " or ".join(dict.fromkeys(words[t] for t in types))


def answer_tokens(row: dict[str, Any]) -> tuple[int, int]:
    """Tokens the system spent on this row (all roles but the judge)."""
    used = [u for role, u in (row.get("usage") or {}).items() if role != "judge"]
    return sum(u["input"] for u in used), sum(u["output"] for u in used)
