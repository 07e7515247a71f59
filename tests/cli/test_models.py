"""One `--model` points every role at an endpoint (issue 26): checked where the requests arrive,
on the fake OpenAI-compatible server, with nothing set in the environment but the key.

`run` (answer, decision, judge, scorer, embeddings), `label` (labeller) and `needs` (builder,
embeddings) together call every role; each request's `model` is what the server received.
"""

from __future__ import annotations

import json
import os

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from freshrag.core.types import ROLES
from freshrag.retrieval.embeddings import LocalMiniLM
from freshrag.scoring.store import read_scores
from tests.support.builds import needs_reply
from tests.support.datasets import bridges_and_mayor, write_dataset
from tests.support.fake_openai_server import FakeOpenAIServer, forced_tool_name
from tests.support.fakes import SECRET, scorers_reply

MODEL, JUDGE = "provider-model-x", "provider-judge-y"


def reply(request: dict) -> dict:
    """The needs' descriptions, the scorers' and the judge's grades, the default for the rest."""
    if forced_tool_name(request) in ("describe_need", "submit_question"):
        return needs_reply(request)
    return scorers_reply(request)


@pytest.fixture
def server(monkeypatch):
    """The fake server, and an environment with only the key in it, as a new user's."""
    for name in [name for name in os.environ if name.startswith("FRESHRAG_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("FRESHRAG_API_KEY", SECRET)
    with FakeOpenAIServer(reply=reply) as fake:
        yield fake


def run(tmp_path, server, *extra: str, systems: str = "baseline,advanced") -> int:
    questions, articles = write_dataset(tmp_path / "data", content=bridges_and_mayor)
    return main(["run", "--questions", str(questions), "--articles", str(articles),
                 "--out", str(tmp_path / "run"), "--systems", systems, "--no-probe",
                 "--base-url", server.base_url, *extra])


def roles_table(stderr: str) -> dict[str, list[str]]:
    """The rows of the "models:" table a command prints on stderr, by role."""
    lines = stderr.split("models:\n", 1)[1].splitlines()
    rows = {}
    for line in lines[1:]:
        parts = line.split()
        if not line.startswith("  ") or parts[0] not in ROLES:
            break
        rows[parts[0]] = parts
    return rows


def test_one_model_reaches_the_endpoint_for_every_role(tmp_path, server, capsys):
    assert run(tmp_path, server, "--model", MODEL, "--model-role", f"embeddings={MODEL}",
               "--scorers", "judge,faithfulness", systems="baseline,advanced,naive") == 0
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert {call["role"] for row in rows for call in row["calls"]} >= {"answer", "decision",
                                                                       "judge"}
    assert read_scores(tmp_path / "run")  # the scorer role graded faithfulness
    dataset = tmp_path / "data"
    assert main(["label", "--dataset", str(dataset), "--base-url", server.base_url,
                 "--model", MODEL]) == 0
    log = tmp_path / "queries.jsonl"
    log.write_text("".join(json.dumps({"query": f"who won the vote in town {i}"}) + "\n"
                           for i in range(4)))
    assert main(["needs", "--queries", str(log), "--out", str(tmp_path / "needs.txt"),
                 "--min-size", "1", "--base-url", server.base_url, "--model", MODEL,
                 "--model-role", f"embeddings={MODEL}"]) == 0
    assert {request["model"] for request in server.requests} == {MODEL}
    assert {request["model"] for request in server.embedding_requests} == {MODEL}
    tools = {forced_tool_name(request) for request in server.requests}
    assert {"submit_grade", "submit_verdicts", "describe_need"} <= tools  # judge, scorer, builder
    assert (dataset / "labels.jsonl").read_text().strip()  # the labeller's records
    err = capsys.readouterr().err
    assert SECRET not in err
    table = roles_table(err)
    assert table["answer"][1:] == [server.base_url, MODEL, "--model"]
    assert table["embeddings"][1:] == [server.base_url, MODEL, "--model-role",
                                       f"embeddings={MODEL}"]


def test_model_role_overrides_one_role(tmp_path, server, capsys):
    assert run(tmp_path, server, "--model", MODEL, "--model-role", f"judge={JUDGE}",
               "--model-role", f"embeddings={MODEL}") == 0
    by_tool = {}
    for request in server.requests:
        by_tool.setdefault(forced_tool_name(request) == "submit_grade", set()).add(
            request["model"])
    assert by_tool == {True: {JUDGE}, False: {MODEL}}
    table = roles_table(capsys.readouterr().err)
    assert table["judge"][1:] == [server.base_url, JUDGE, "--model-role", f"judge={JUDGE}"]
    assert table["decision"][1:] == [server.base_url, MODEL, "--model"]


def test_embeddings_stay_local_until_named_and_the_table_says_so(tmp_path, server, capsys):
    assert run(tmp_path, server, "--model", MODEL, "--dry-run", systems="naive") == 0
    table = roles_table(capsys.readouterr().err)
    assert table["embeddings"][1:4] == ["local", "(in", "process)"]
    assert table["embeddings"][4] == LocalMiniLM().name  # with its precision: -bf16, -int8
    assert "local fallback" in " ".join(table["embeddings"])
    assert table["answer"][1:] == [server.base_url, MODEL, "--model"]
    assert server.requests == [] and server.embedding_requests == []


def test_a_model_without_an_endpoint_is_refused_naming_the_option(tmp_path, server, capsys):
    questions, articles = write_dataset(tmp_path / "data")
    assert main(["run", "--questions", str(questions), "--articles", str(articles),
                 "--out", str(tmp_path / "run"), "--model", MODEL]) == 2
    err = capsys.readouterr().err
    assert "--model: the answer role has no endpoint" in err and "--base-url" in err
    assert "Traceback" not in err and not (tmp_path / "run" / "samples.jsonl").exists()
