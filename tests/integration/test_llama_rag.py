"""Every system, the retrieving ones included, on the real embedded llama.cpp server with
SmolLM2-135M, local MiniLM embeddings and embedded Qdrant: three A_f questions end to end."""

import subprocess
import sys

import pytest

from harness.results import read_samples
from systems import SYSTEMS
from tests.integration.conftest import DATA
from tests.integration.test_llama_run import clean_env

pytestmark = pytest.mark.integration

QUESTIONS = 3
DECISIONS = {"boolean": {"retrieve", "no-retrieve", "none"},
             "dated-boolean": {"retrieve", "no-retrieve", "none"},
             "advanced": {"retrieve", "no-retrieve", "none"}}


def test_all_systems_answer_with_the_real_model(tmp_path, shared_index_dir):
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--questions", str(DATA / "questions-A_f.jsonl"),
         "--articles", str(DATA / "articles.jsonl"), "--limit", str(QUESTIONS), "--out", str(out),
         "--systems", ",".join(SYSTEMS), "--index-dir", str(shared_index_dir), "--seed", "7"],
        env=clean_env(), cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = read_samples(out / "samples.jsonl")
    assert sorted({r["system"] for r in rows}) == sorted(SYSTEMS)
    assert len(rows) == QUESTIONS * len(SYSTEMS)
    for row in rows:
        assert row["status"] == "ok", row["error"]
        for role, usage in row["usage"].items():
            assert usage["input"] > 0 and not usage["estimated"], (row["system"], role)
        details = row["details"]
        retrieved = details.get("retrieved", [])
        assert row["retrievals"] == (1 if retrieved else 0)
        assert not retrieved or len(retrieved) == 5
        if row["system"] in ("naive", "hyde"):
            assert row["retrievals"] == 1
        if row["system"] in DECISIONS:
            assert details["decision"] in DECISIONS[row["system"]]
            assert row["retrievals"] == (details["decision"] == "retrieve")
        if row["system"] == "advanced":
            assert [c["role"] for c in row["calls"]][:2] == ["decision", "decision"]
    assert "| A_f | naive |" in done.stdout
