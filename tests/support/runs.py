"""Run directories for the tests: written by hand for the report tests (`sample`: rows whose calls
name the model of each role, as the runner writes them, so that a test can set two runs apart by
model alone; `sample_rows`: the rows of the HTML report's page), or written by `freshrag run` on
a small dataset (`run_cli`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from freshrag.cli.main import main
from freshrag.core.jsonl import JsonlWriter
from freshrag.core.manifest import MANIFEST
from freshrag.core.samples import SAMPLES
from tests.support.datasets import bridges_and_mayor, write_dataset

SCRIPT_ANSWER = "<script>alert(1)</script> The answer is 42."
EVIL_TITLE = '<img src="http://evil.example/x.png">'


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


def _row(dataset: str, question: str, system: str, truth: int | None = 5, rel: int = 5,
         retrieved: list[str] | None = None, decision: str | None = None,
         answer: str = "an answer", tokens: tuple[int, int] = (100, 10)) -> dict[str, Any]:
    """A samples.jsonl row for the HTML report's page; truth=None is an unscored answer."""
    details: dict[str, Any] = {"decision": decision}
    if retrieved is not None:
        details["retrieved"] = [{"title": t, "index": i, "score": 0.5}
                                for i, t in enumerate(retrieved)]
    scored = truth is not None
    grade = {"truthfulness": truth, "relevance": rel if scored else None,
             "unscored_reason": None if scored else "judge gave no tool call",
             "raw": [f'{{"truthfulness": {truth}, "relevance": {rel}}}'] if scored
             else ["I think it is fine", None]}
    return {"dataset": dataset, "question_id": question,
            "question": f"What happened at Foo & Bar ({question})?",
            "gold_title": f"Gold {question}",
            "system": system, "status": "ok", "answer": answer,
            "retrievals": 0 if retrieved is None else 1,
            "usage": {"answer": {"input": tokens[0], "output": tokens[1], "estimated": False},
                      "judge": {"input": 999, "output": 99, "estimated": False}},
            "grade": grade, "calls": [], "details": details, "error": None}


def _failed(dataset: str, question: str, system: str) -> dict[str, Any]:
    return {**_row(dataset, question, system), "status": "failed", "answer": None, "grade": None,
            "usage": {}, "retrievals": 0, "details": {}, "error": "HTTP 500 after 6 attempts"}


def sample_rows() -> list[dict[str, Any]]:
    """Questions 1..4 of A_f and 1..2 of A_r (ids unique within the run, as samples.jsonl keys
    rows by question id and system): question 2's baseline answer is the script, question 3's
    boolean answer unscored, question 4's naive pair failed."""
    rows = []
    for dataset, prefix, count in (("A_f", "q", 4), ("A_r", "r", 2)):
        for n in range(1, count + 1):
            q, gold = f"{prefix}{n}", f"Gold {prefix}{n}"
            rows.append(_row(dataset, q, "baseline", *{1: (2, 2), 3: (3, 3)}.get(n, (4, 4)),
                             answer=SCRIPT_ANSWER if n == 2 else "from memory", tokens=(50, 5)))
            rows.append(_failed(dataset, q, "naive") if n == 4 else
                        _row(dataset, q, "naive", 5, 4, retrieved=[gold, EVIL_TITLE, "Other"],
                             tokens=(500, 12)))
            rows.append(_row(dataset, q, "boolean", None, decision="none") if n == 3 else
                        _row(dataset, q, "boolean", 5, 3, retrieved=["Other", gold],
                             decision="retrieve") if n == 1 else
                        _row(dataset, q, "boolean", 4, 4, decision="no-retrieve"))
    return rows


def run_cli(tmp_path: Path, *extra: str) -> int:
    """`freshrag run` of baseline and oracle on three towns in `tmp_path` (written unless there)
    into `tmp_path / "run"`: its exit status."""
    q, a = (tmp_path / "questions.jsonl", tmp_path / "articles.jsonl")
    if not q.exists():
        q, a = write_dataset(tmp_path, content=bridges_and_mayor)
    return main(["run", "--questions", str(q), "--articles", str(a), "--out", str(tmp_path / "run"),
                 "--systems", "baseline,oracle", "--concurrency", "4", *extra])
