"""Where a run is written: `results/NAME/samples.jsonl` and `results/NAME/manifest.json`.

One JSON Lines row per (question, system), appended the moment the pair finishes, with everything
needed to recompute any table later:

- `dataset`, `question_id`, `question`, `gold_title`, `system`
- `status`: "ok", or "failed" (an LLM error; `error` says why; failed pairs are retried on resume)
- `answer`: the system's answer text (null when failed)
- `retrievals`: how many times the system retrieved
- `usage`: per role (answer, decision, judge, ...) `{"input", "output", "estimated"}`
- `grade`: `{"truthfulness", "relevance", "unscored_reason", "raw", "context_cut"}` (scores null
  when unscored; `context_cut` `{"chars", "halvings"}` when the article was halved to fit)
- `calls`: every LLM call, with the messages sent, tool arguments, usage, latency and cache hit
- `details`: what the strategy reports about itself (decision, retrieved chunks, cuts)
- `latency_s`: wall time of the pair, `error`, `finished_at`

Rows are appended as whole lines to a file opened for appending. A process killed mid-write can
leave a torn last line: reading ignores it and the next writer cuts it off, so the pair it
belonged to is simply run again.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.types import Grade, LLMResponse, Question, SystemAnswer, sum_usage_by_role

SAMPLES = "samples.jsonl"
MANIFEST = "manifest.json"


class ResultsError(ValueError):
    pass


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def sample_row(dataset: str, question: Question, system: str, answer: SystemAnswer | None,
               grade: Grade | None, judge_calls: list[LLMResponse], latency_s: float,
               error: str | None = None) -> dict[str, Any]:
    calls = (answer.calls if answer else []) + judge_calls
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

    A row torn by a kill mid-write is cut off when the writer opens the file, so that the next
    row starts on a line of its own instead of being glued to the fragment.
    """

    def __init__(self, path: Path):
        self.path = path
        _drop_torn_tail(path)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def write(self, row: dict[str, Any]) -> None:
        data = memoryview((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))
        with self._lock:
            while data:  # os.write may write less than asked (a full disk, a signal)
                data = data[os.write(self._fd, data):]

    def close(self) -> None:
        os.close(self._fd)


def _drop_torn_tail(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) != b"\n":
            handle.seek(0)
            handle.truncate(handle.read().rfind(b"\n") + 1)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every row of a file JsonlWriter wrote, in file order; a torn last line is ignored."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    rows = []
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            if line_no == len(lines):  # no newline after it: torn by a kill mid-write
                print(f"{path}:{line_no}: ignoring an unfinished last row", file=sys.stderr)
                continue
            raise ResultsError(f"{path}:{line_no}: not valid JSON: {err.msg}") from None
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
