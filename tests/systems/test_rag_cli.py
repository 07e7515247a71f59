"""`freshrag run` with the retrieving systems and `freshrag index`, end to end against the fake
OpenAI-compatible server (chat and embeddings) and a real embedded Qdrant."""

import json

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from freshrag.llm.local_server import free_port
from tests.support.datasets import bridges_and_mayor, write_dataset
from tests.support.fake_openai_server import default_reply
from tests.support.fakes import SECRET

RETRIEVING = ("naive", "boolean", "advanced", "hyde", "dated-boolean")


def decide(request):
    """The boolean agents retrieve for Town 1, decline for Town 2 and answer in text otherwise."""
    question = request["messages"][-1]["content"]
    if request.get("tool_choice") == "auto" and "Town 1" in question:
        return {"tool_call": {"name": "retrieve_information", "arguments": '{"retrieve": true}'}}
    if request.get("tool_choice") == "auto" and "Town 2" in question:
        return {"tool_call": {"name": "retrieve_information", "arguments": '{"retrieve": false}'}}
    return default_reply(request)


@pytest.fixture
def fake(fake_server):
    return fake_server(reply=decide)  # every role, embeddings too


def run_rag(tmp_path, *extra):
    q, a = write_dataset(tmp_path, n=4, content=bridges_and_mayor)
    return main(["run", "--questions", str(q), "--articles", str(a), "--out", str(tmp_path / "run"),
                 "--systems", ",".join(RETRIEVING), "--concurrency", "4", *extra])


def test_every_retrieving_system_runs_and_records_its_retrieval(tmp_path, fake, capsys):
    assert run_rag(tmp_path) == 0
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert len(rows) == 4 * len(RETRIEVING) and all(r["status"] == "ok" for r in rows)
    for row in rows:
        retrieved = row["details"].get("retrieved", [])
        assert row["retrievals"] == (1 if retrieved else 0)
        if retrieved:  # the bag-of-words embedder finds the question's own town first
            assert retrieved[0]["title"] == row["gold_title"] and len(retrieved) <= 5
            answer_call = [c for c in row["calls"] if c["role"] == "answer"][-1]
            assert f"Title: {row['gold_title']}" in answer_call["messages"][0]["content"]
    boolean = {r["gold_title"]: r for r in rows if r["system"] == "boolean"}
    assert boolean["Town 1"]["details"]["decision"] == "retrieve"
    assert boolean["Town 2"]["details"]["decision"] == "no-retrieve"
    assert boolean["Town 3"]["details"]["decision"] == "none"
    assert all(r["retrievals"] == 1 for r in rows if r["system"] in ("naive", "hyde"))
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["index"]["embedding_model"] == "fake-model"
    assert manifest["index"]["store"] == str(tmp_path / ".index")
    assert manifest["config"]["knowledge_cutoff"] == "2021-09-30"
    summary = {r["system"]: r for r in json.loads((tmp_path / "run" / "summary.json").read_text())["rows"]}
    assert summary["boolean"]["no_decision"] == 2 and summary["boolean"]["retrievals"] == 1
    for path in (tmp_path / "run").iterdir():
        assert SECRET not in path.read_text(), path


def test_a_second_run_reuses_the_index(tmp_path, fake):
    assert run_rag(tmp_path, "--limit", "1") == 0
    fake.reset_counts()
    fake.embedding_calls = 0
    assert run_rag(tmp_path) == 0
    # Only the new questions' queries are embedded: naive, advanced and hyde for each of the
    # three, boolean and dated-boolean for Town 1 alone. The corpus is not embedded again.
    assert fake.embedding_calls == 3 * 3 + 2


def test_index_command_builds_ahead_and_reports_the_index(tmp_path, fake, capsys):
    _, articles = write_dataset(tmp_path, n=4, content=bridges_and_mayor)
    assert main(["index", "--articles", str(articles), "--index-dir", str(tmp_path / "ix")]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["articles"] == 4 and record["chunks"] == 4 and record["chunk_size"] == 1024
    calls = fake.embedding_calls
    assert main(["index", "--articles", str(articles), "--index-dir", str(tmp_path / "ix")]) == 0
    assert fake.embedding_calls == calls


@pytest.mark.parametrize("lines, message", [
    pytest.param([], "articles.jsonl: no articles", id="empty-corpus"),
    pytest.param(['{"title": "A", "content": "Text."}', '{"title": "B"}'],
                 "articles.jsonl:2: field 'content' is missing", id="line-without-content"),
])
def test_index_refuses_a_bad_corpus_naming_the_file(tmp_path, fake, capsys, lines, message):
    (tmp_path / "articles.jsonl").write_text("".join(line + "\n" for line in lines))
    assert main(["index", "--articles", str(tmp_path / "articles.jsonl")]) == 2
    assert message in capsys.readouterr().err and fake.embedding_calls == 0


def test_a_qdrant_server_that_is_down_stops_the_run_naming_it(tmp_path, fake, capsys):
    url = f"http://127.0.0.1:{free_port()}"
    assert run_rag(tmp_path, "--qdrant-url", url) == 2
    assert f"Qdrant server at {url} cannot be used" in capsys.readouterr().err
    assert fake.calls == 0
