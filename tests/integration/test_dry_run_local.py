"""`freshrag run --dry-run` on the embedded model: no model call is made (on the prebuilt runtime
only a private server for its tokenizer starts, logging to its own file), and after a real run on
SmolLM2 the dry run finds every call in the response cache (its cache keys, made without the
server, name the same model file as the running server's). The same for `freshrag score
--dry-run` on that run: it counts the calls the score pass then sends, and then finds them
cached."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMAND = ["run", "--limit", "1", "--systems", "baseline", "--no-probe"]


def freshrag(tmp_path: Path, *args: str, timeout: float) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("FRESHRAG_")}
    return subprocess.run([sys.executable, "-m", "freshrag", *args], cwd=tmp_path, text=True,
                          capture_output=True, timeout=timeout,
                          env={**env, "PYTHONPATH": str(ROOT)})


def server_said(stderr: str) -> bool:
    """Whether stderr shows the embedded server (its start or its log), the roles table that
    names the embedded llama.cpp as each role's endpoint aside."""
    said, in_table = [], False
    for line in stderr.lower().splitlines():
        if line == "models:":  # the table's heading; its rows are indented
            in_table = True
            continue
        in_table = in_table and line.startswith("  ")
        if not in_table:
            said.append(line)
    return any("llama" in line for line in said)


def answer_row(stdout: str, role: str = "answer") -> list[str]:
    row = next((line for line in stdout.splitlines() if line.startswith(f"| {role} |")),
               f"| {role} | - | 0 | 0 |")  # no row: no call of that role to count
    return [cell.strip() for cell in row.strip("|").split("|")]


@pytest.mark.integration
def test_dry_run_starts_no_server_and_after_a_run_counts_its_calls_as_cached(tmp_path):
    started = time.monotonic()
    dry = freshrag(tmp_path, *COMMAND, "--out", "results/one", "--dry-run", timeout=120)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert not server_said(dry.stderr)
    assert time.monotonic() - started < 60
    before = answer_row(dry.stdout)
    assert before[1] == "smollm2-135m-instruct" and (before[2], before[3]) == ("1", "0")
    assert not (tmp_path / "results" / "one").exists()

    done = freshrag(tmp_path, *COMMAND, "--out", "results/one", timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]

    again = freshrag(tmp_path, *COMMAND, "--out", "results/two", "--dry-run", timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    after = answer_row(again.stdout)
    assert (after[2], after[3]) == ("0", "1")  # calls to make, calls from the cache

    score = ["score", "results/one", "--scorers", "abstention"]
    dry_score = freshrag(tmp_path, *score, "--dry-run", timeout=120)
    assert dry_score.returncode == 0, dry_score.stderr[-2000:]
    assert not server_said(dry_score.stderr)
    estimated = answer_row(dry_score.stdout, "scorer")
    assert not (tmp_path / "results" / "one" / "scores.jsonl").exists()
    scored = freshrag(tmp_path, *score, timeout=600)
    assert scored.returncode == 0, scored.stderr[-2000:]
    rows = [json.loads(line) for line in
            (tmp_path / "results" / "one" / "scores.jsonl").read_text().splitlines()]
    sent = sum(not call["cache_hit"] for row in rows for call in row["calls"])
    # one call, or none where the answer is a refusal the pattern recognises
    assert (estimated[2], estimated[3]) == (str(sent), "0")
    copy = tmp_path / "results" / "three"
    shutil.copytree(tmp_path / "results" / "one", copy)
    (copy / "scores.jsonl").unlink()
    cached = freshrag(tmp_path, "score", "results/three", "--scorers", "abstention",
                      "--dry-run", timeout=120)
    assert cached.returncode == 0, cached.stderr[-2000:]
    assert answer_row(cached.stdout, "scorer")[2:4] == ["0", str(sent)]
