"""The worked examples of docs/examples/ (docs/own-system.md): a LangChain pipeline as a
plugged-in system, a small RAG service started here and put under test over HTTP, and an answers
file in Ragas' columns, each beside naive RAG in one run and one report, on the fake server. The
same on the embedded model: tests/integration/test_own_systems_llama.py."""

from __future__ import annotations

import json
import os

from freshrag.cli.main import main
from freshrag.core.dataset import example_dir
from tests.support.examples import check_run, example_systems, rag_service


def test_the_examples_run_beside_naive_in_one_report(tmp_path, fake_server, capsys):
    server = fake_server()
    env = {**os.environ, "FRESHRAG_BASE_URL": server.base_url, "FRESHRAG_MODEL": "fake-model",
           "FRESHRAG_API_KEY": "sk-example"}
    with rag_service(example_dir() / "articles.jsonl", env) as url:
        assert main(["run", "--dataset", str(example_dir()), "--systems", example_systems(url),
                     "--limit", "3", "--no-probe", "--out", str(tmp_path / "run"),
                     "--index-dir", str(tmp_path / "index")]) == 0
    by_system = check_run(tmp_path / "run", 3)
    theirs = by_system["theirs"]
    assert all(r["answer"].endswith(".") and r["details"]["context"] for r in theirs)
    capsys.readouterr()
    assert main(["report", str(tmp_path / "run"), "--format", "json"]) == 0
    summary = {row["system"]: row for row in json.loads(capsys.readouterr().out)["rows"]}
    assert sorted(summary) == ["lc", "naive", "svc", "theirs"]
    assert summary["svc"]["input_tokens"] > 0 and summary["theirs"]["input_tokens"] is None
