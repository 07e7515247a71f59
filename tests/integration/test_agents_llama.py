"""The agents on the embedded model: the user's (the LangGraph and OpenAI Agents SDK examples of
docs/examples/, their framework code unchanged, calling the model through the run's endpoint)
beside naive RAG in one run and one report, every role on the session's llama.cpp server with
SmolLM2-135M, embeddings on local MiniLM, embedded Qdrant over the session's example index.
freshrag's own agents (react, iterative, decompose, router) are held to the same checks in
test_llama_rag.py, where every system runs. A model this small calls tools as it likes, so no
route or search count is expected of it; what is checked is that every agent finishes every
question within its bound, its steps hold its calls, and the report shows tokens, searches and
latency for each."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from freshrag.core.dataset import example_dir
from freshrag.core.samples import read_samples
from tests.support.examples import EXAMPLES

pytestmark = pytest.mark.integration

MAX_STEPS = 3
QUESTIONS = 1  # every check holds row by row
THEIRS = {"langgraph-agent": f"{EXAMPLES / 'langgraph_agent.py'}:LangGraphAgent",
          "agents-sdk-agent": f"{EXAMPLES / 'openai_agents_agent.py'}:AgentsSDKAgent"}


@pytest.mark.timeout(2700)  # about 2 minutes idle; a loaded machine's llama.cpp threads wait
def test_every_agent_answers_within_its_bound_beside_naive(tmp_path, embedded_env,
                                                           example_index_dir):
    systems = ",".join(["naive", *THEIRS.values()])
    done = subprocess.run(
        [sys.executable, "-m", "freshrag", "run", "--dataset", str(example_dir()),
         "--systems", systems, "--limit", str(QUESTIONS), "--no-probe", "--concurrency", "2",
         "--max-steps", str(MAX_STEPS), "--out", str(tmp_path / "run"),
         "--index-dir", str(example_index_dir)],
        env=embedded_env, cwd=tmp_path, capture_output=True, text=True, timeout=2400)
    assert done.returncode in (0, 1), done.stderr[-3000:]  # 1: a pair failed, named below
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    report = subprocess.run([sys.executable, "-m", "freshrag", "report", str(tmp_path / "run"),
                             "--format", "json"], env=embedded_env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=600)
    assert report.returncode == 0, report.stderr[-2000:]
    names = ["naive", *THEIRS]
    assert sorted(r["system"] for r in rows) == sorted(n for n in names for _ in range(QUESTIONS))
    failed = [(r["system"], r["error"]) for r in rows if r["status"] != "ok"]
    assert not failed, failed
    for row in rows:
        if row["system"] == "naive":
            continue
        made = [c for c in row["calls"] if c["role"] != "judge"]
        assert 1 <= len(made) <= MAX_STEPS, (row["system"], len(made))
        assert sum(step["calls"] for step in row["steps"]) == len(made), row["system"]
        assert row["retrievals"] == sum(s["kind"] == "search" for s in row["steps"])
        assert row["stopped"] in (None, "max_steps", "budget")
        assert row["grade"] is not None
    document = json.loads(report.stdout)
    summary = {row["system"]: row for row in document["rows"]}
    assert sorted(summary) == sorted(names)
    for name in names:
        assert summary[name]["input_tokens"] > 0 and summary[name]["searches_per_answer"] is not None
    assert all(row["answer_latency_s"] > 0 for row in rows)
    answers = {(a["system"], a["question_id"]): a for a in document["answers"]}
    assert all(answers[r["system"], r["question_id"]]["steps"] == r["steps"] for r in rows)
