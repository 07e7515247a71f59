"""Run directories written by hand for the report tests: rows whose calls name the model of each
role, as the runner writes them, so that a test can set two runs apart by model alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from freshrag.core.jsonl import JsonlWriter
from freshrag.core.manifest import MANIFEST
from freshrag.core.samples import SAMPLES


def usage(tokens: tuple[int, int]) -> dict[str, Any]:
    return {"input": tokens[0], "output": tokens[1], "estimated": False}


def sample(question: str, system: str, truth: int | None = 4, rel: int = 4, *,
           answer: str | None = "model-a", decision: str | None = None,
           judge: str | None = "judge-1", dataset: str = "A_f", retrieved: bool = False,
           decided: str | None = None, tokens: tuple[int, int] = (100, 10),
           status: str = "ok") -> dict[str, Any]:
    """A samples.jsonl row; each named model gets one call of its role, spending `tokens` (the
    judge 900/90). truth=None is an unscored answer; status="failed" keeps the usage of the calls
    made before the failure, as failed rows carry it."""
    roles = {"answer": answer, "decision": decision, "judge": judge}
    calls = [{"role": role, "model": model} for role, model in roles.items() if model]
    spent = {role: usage((900, 90) if role == "judge" else tokens)
             for role, model in roles.items() if model}
    grade = None if status == "failed" or truth is None and judge is None else {
        "truthfulness": truth, "relevance": None if truth is None else rel,
        "unscored_reason": "no tool call" if truth is None else None, "raw": []}
    details: dict[str, Any] = {"decision": decided}
    if retrieved:
        details["retrieved"] = [{"title": f"Gold {question}", "index": 0, "score": 0.9}]
    return {"dataset": dataset, "question_id": question, "question": f"What is {question}?",
            "gold_title": f"Gold {question}", "system": system, "status": status,
            "answer": None if status == "failed" else "an answer",
            "retrievals": int(retrieved and status == "ok"), "usage": spent, "grade": grade,
            "calls": calls, "details": details if status == "ok" else {},
            "error": "HTTP 500 after 6 attempts" if status == "failed" else None}


def write_run(run_dir: Path, rows: list[dict[str, Any]],
              manifest: dict[str, Any] | None = None) -> Path:
    """samples.jsonl (empty when there are no rows) and, if given, manifest.json."""
    run_dir.mkdir(parents=True, exist_ok=True)
    writer = JsonlWriter(run_dir / SAMPLES)
    for row in rows:
        writer.write(row)
    writer.close()
    if manifest is not None:
        (run_dir / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    return run_dir
