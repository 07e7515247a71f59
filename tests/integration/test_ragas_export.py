"""`freshrag export --format ragas` read by the real `ragas` package (issue 40): each line a
`MultiTurnSample` of Ragas' own message classes, freshrag's metadata kept, written back by
Ragas byte for byte. Ragas cannot share freshrag's environment (its `instructor` caps openai
below 2, and `import ragas` needs langchain-community below 0.4: docs/export.md), so the test
installs it into a virtual environment of its own from PyPI, as a user keeping the two apart
would, and runs Ragas there on the file freshrag wrote."""

from __future__ import annotations

import json
import subprocess
import venv
from pathlib import Path

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from tests.support.agent_script import searches_then_answers
from tests.support.datasets import write_dataset

pytestmark = pytest.mark.integration

RAGAS = ("ragas==0.4.3", "langchain-community<0.4")  # the versions docs/export.md names

READ_BACK = """
import json, sys
from ragas.dataset_schema import EvaluationDataset, MultiTurnSample
from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage

dataset = EvaluationDataset.from_jsonl(sys.argv[1])
samples = []
for sample in dataset:
    assert isinstance(sample, MultiTurnSample), type(sample)
    kinds = [type(m).__name__ for m in sample.user_input]
    calls = [[c.name, c.args] for m in sample.user_input if isinstance(m, AIMessage)
             for c in m.tool_calls or [] if isinstance(c, ToolCall)]
    samples.append({"kinds": kinds, "calls": calls, "metadata": sample.user_input[0].metadata,
                    "answer": sample.user_input[-1].content})
dataset.to_jsonl(sys.argv[2])
# docs/export.md's ToolCallAccuracy, as written there, each sample's own searches as reference
from ragas.metrics.collections import ToolCallAccuracy
calls = ToolCallAccuracy()
accuracy = [calls.score(user_input=sample.user_input, reference_tool_calls=[
                c for m in sample.user_input if isinstance(m, AIMessage)
                for c in m.tool_calls or []]).value for sample in dataset]
print(json.dumps({"multi_turn": dataset.is_multi_turn(), "samples": samples,
                  "accuracy": accuracy}))
"""


@pytest.fixture(scope="module")
def ragas_python(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("ragas-venv")
    venv.create(home, with_pip=True)
    python = home / "bin" / "python"
    # --no-compile: its modules are compiled when imported, the few that the test imports
    installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-compile",
                                "--disable-pip-version-check", *RAGAS],
                               capture_output=True, text=True, timeout=1200)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return python


def test_ragas_reads_the_export_as_its_multi_turn_samples(tmp_path, fake_server, ragas_python):
    fake_server(reply=searches_then_answers(2))
    data, run = tmp_path / "data", tmp_path / "run"
    write_dataset(data, 3)
    assert main(["run", "--dataset", str(data), "--systems", "naive,react", "--out", str(run),
                 "--no-probe", "--concurrency", "1"]) == 0
    out, again = tmp_path / "ragas.jsonl", tmp_path / "again.jsonl"
    assert main(["export", str(run), "--format", "ragas", "--out", str(out)]) == 0
    # deprecations of what the script (as docs/export.md) uses are errors: ragas keeps those
    read = subprocess.run([str(ragas_python), "-W", "error::DeprecationWarning:__main__", "-c",
                           READ_BACK, str(out), str(again)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert read.returncode == 0, read.stderr[-3000:]
    found = json.loads(read.stdout)
    assert found["multi_turn"] and again.read_bytes() == out.read_bytes()
    assert found["accuracy"] == [1.0] * len(found["samples"])  # its own calls: all match
    rows = {(r["system"], r["question_id"]): r for r in read_samples(run / "samples.jsonl")}
    assert len(found["samples"]) == len(rows)
    for sample in found["samples"]:
        meta = sample["metadata"]
        row = rows[meta["system"], meta["question_id"]]
        assert sample["answer"] == row["answer"]
        assert sample["kinds"][0] == "HumanMessage" and sample["kinds"][-1] == "AIMessage"
        searches = [s["query"] for s in row["steps"] if s["kind"] == "search"]
        assert sample["calls"] == [["search", {"query": q}] for q in searches]
        assert sample["kinds"].count("ToolMessage") == len(searches)
