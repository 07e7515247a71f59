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
  tool arguments, usage, latency and cache hit. A failed row holds the calls that succeeded
  before the failure, so that the tokens spent on failed pairs are counted too
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
import os
import sys
import threading
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

from harness.types import Grade, LLMResponse, Question, SystemAnswer, sum_usage_by_role

SAMPLES = "samples.jsonl"
MANIFEST = "manifest.json"
TAIL_BLOCK = 1 << 16  # bytes read at a time when looking back for the last newline


class ResultsError(ValueError):
    pass


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def sample_row(dataset: str, question: Question, system: str, answer: SystemAnswer | None,
               grade: Grade | None, calls: list[LLMResponse], latency_s: float,
               error: str | None = None) -> dict[str, Any]:
    """One row; `calls` are all the pair's calls, the judge's included."""
    return {
        "dataset": dataset, "question_id": question.id, "question": question.text,
        "gold_title": question.gold_title, "system": system,
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
            while data:  # os.write may write less than asked (a full disk, a signal)
                data = data[os.write(self._fd, data):]

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


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every row of a file JsonlWriter wrote, in file order, read line by line; a torn last line
    is ignored."""
    if not path.exists():
        return []
    rows = []
    with open(path, "rb") as handle:  # binary: lines end at b"\n" alone, as written
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except ValueError as err:
                if not line.endswith(b"\n"):  # the last line, torn by a kill mid-write
                    print(f"{path}:{line_no}: ignoring an unfinished last row", file=sys.stderr)
                    continue
                reason = getattr(err, "msg", None) or getattr(err, "reason", str(err))
                raise ResultsError(f"{path}:{line_no}: not valid JSON: {reason}") from None
    return rows


def read_samples(path: Path) -> list[dict[str, Any]]:
    """Every row, the last one per (question, system) winning, in file order."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for row in read_jsonl(path):
        latest.pop((row["question_id"], row["system"]), None)
        latest[row["question_id"], row["system"]] = row
    return list(latest.values())


def write_manifest(run_dir: Path, manifest: dict[str, Any]) -> None:
    tmp = run_dir / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, run_dir / MANIFEST)  # atomic: a kill never leaves half a manifest


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / MANIFEST
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ResultsError(f"{path}: not valid JSON: {err.msg}") from None
