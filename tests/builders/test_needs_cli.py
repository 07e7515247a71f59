"""`freshrag needs` on the shipped query log and `freshrag build --needs` on a dump, end to end
with the fake OpenAI-compatible server (bag-of-words embeddings, scripted calls); then
`freshrag run` on the built set, whose rows carry each question's need."""

import json

import pytest

from freshrag.builders.styles.needs import NEEDS_FILE, read_needs
from freshrag.cli.main import main
from freshrag.core.jsonl import read_jsonl
from freshrag.core.samples import read_samples
from tests import WIKIRAG
from tests.fake_openai_server import FakeOpenAIServer, default_reply
from tests.fakes import use_endpoint
from tests.wikidump import article_pages, write_dump

LOG = WIKIRAG.parent / "needs" / "queries.jsonl"
CUTOFF = "2021-09-30"
NEEDS = "Results of local elections\nCasualties of disasters\n"


def scripted(request):
    """describe_need: a sentence made from the first query shown; submit_question: a question
    naming the chunk's article, or BLANK for the second need; anything else: the default."""
    tool = request.get("tool_choice") or {}
    name = tool.get("function", {}).get("name") if isinstance(tool, dict) else None
    user = request["messages"][-1]["content"]
    if name == "describe_need":
        first = user.splitlines()[0].removeprefix("- ")
        return {"tool_call": {"name": name, "arguments": json.dumps(
            {"description": f"What users ask when they ask: {first}"})}}
    if name == "submit_question":
        title = user.splitlines()[0].removeprefix("Title: ")
        blank = "Casualties" in request["messages"][0]["content"]
        question = "BLANK" if blank else f"What happened in {title}?"
        return {"tool_call": {"name": name, "arguments": json.dumps(
            {"question": question, "answer": "" if blank else "a result"})}}
    return default_reply(request)


@pytest.fixture
def fake(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the response cache goes to ./results
    with FakeOpenAIServer(reply=scripted) as server:
        use_endpoint(monkeypatch, server.base_url, "sk-needs")
        yield server


def test_needs_from_the_shipped_log_then_a_build_for_them(tmp_path, fake, capsys):
    out = tmp_path / "derived" / "needs.txt"
    assert main(["needs", "--queries", str(LOG), "--out", str(out), "--min-size", "2"]) == 0
    needs = read_needs(out)
    document = json.loads(out.with_suffix(".json").read_text())
    assert len(needs) == sum(n["status"] == "described" for n in document["needs"]) >= 2
    assert document["queries"] == sum(1 for line in LOG.read_text().splitlines() if line.strip())
    assert sum(n["size"] for n in document["needs"]) + document["small_clusters"]["queries"] \
        == document["queries"]
    assert fake.embedding_calls >= 1
    printed = capsys.readouterr().out
    assert "| # | need | queries | example queries |" in printed and str(out) in printed
    calls = fake.calls
    assert main(["needs", "--queries", str(LOG), "--out", str(out), "--min-size", "2"]) == 0
    assert fake.calls == calls  # every description from the response cache


def build(tmp_path, *extra):
    dump = tmp_path / "wiki.xml"
    if not dump.exists():
        write_dump(dump, article_pages(WIKIRAG / "articles.jsonl", 12))
    return main(["build", "--dump", str(dump), "--cutoff", CUTOFF, "--out",
                 str(tmp_path / "dataset"), "--questions-from", "A_d", *extra])


def test_build_with_needs_then_run_rows_carry_the_need(tmp_path, fake):
    (tmp_path / "needs.txt").write_text(NEEDS)
    assert build(tmp_path, "--needs", str(tmp_path / "needs.txt"), "--per-need", "3") == 0
    out = tmp_path / "dataset"
    manifest = json.loads((out / "manifest.json").read_text())
    funnel = manifest["funnel"]["needs"]
    assert [(n["need"], n["asked"], n["questions"], n["blank"]) for n in funnel] == [
        ("Results of local elections", 3, 3, 0), ("Casualties of disasters", 3, 0, 3)]
    assert manifest["funnel"]["questions"] == 3
    assert manifest["settings"]["needs"].startswith("2 needs, sha256 ")
    assert "need_question" in manifest["prompts"]
    questions = list(read_jsonl(out / "questions.jsonl"))
    assert all(q["information_need"] == "Results of local elections" and q["reference"]
               and q["question"] == f"What happened in {q['title']}?" for q in questions)

    calls = fake.calls
    assert build(tmp_path, "--needs", str(tmp_path / "needs.txt"), "--per-need", "3") == 0
    assert fake.calls == calls  # finished: nothing asked again

    run = tmp_path / "run"
    assert main(["run", "--dataset", str(out), "--systems", "baseline", "--no-probe",
                 "--out", str(run)]) == 0
    rows = read_samples(run / "samples.jsonl")
    assert len(rows) == 3
    assert {row["information_need"] for row in rows} == {"Results of local elections"}
    assert {row["reference"] for row in rows} == {"a result"}


def test_a_build_resumed_with_other_needs_is_refused(tmp_path, fake, capsys):
    (tmp_path / "needs.txt").write_text(NEEDS)
    assert build(tmp_path, "--needs", str(tmp_path / "needs.txt"), "--per-need", "1") == 0
    (tmp_path / "other.txt").write_text("Chart positions of albums\n")
    calls = fake.calls
    assert build(tmp_path, "--needs", str(tmp_path / "other.txt"), "--per-need", "1") == 2
    assert "this dataset was built with needs '2 needs, sha256" in capsys.readouterr().err
    assert build(tmp_path) == 2  # nor without needs: one questions file, one way of making it
    assert fake.calls == calls


@pytest.mark.parametrize("args, message", [
    pytest.param(["--per-need", "2"], "--per-need caps the questions of --needs", id="cap-alone"),
    pytest.param(["--needs", "NEEDS"], "NEEDS:2: blank line", id="blank-line"),
    pytest.param(["--needs", "OK", "--style", "recent"], "it takes no --style", id="with-style"),
    pytest.param(["--needs", "OK", "--questions-per-article", "2"],
                 "or --questions-per-article", id="with-questions-per-article"),
    pytest.param(["--needs", "missing.txt"], "missing.txt: cannot open", id="missing-file"),
])
def test_bad_needs_options_are_refused_before_any_call(tmp_path, fake, capsys, args, message):
    (tmp_path / "NEEDS").write_text("Elections\n\nDisasters\n")
    (tmp_path / "OK").write_text("Elections\n")
    args = [str(tmp_path / a) if a in ("NEEDS", "OK", "missing.txt") else a for a in args]
    assert build(tmp_path, *args) == 2
    assert message.replace("NEEDS", str(tmp_path / "NEEDS")).replace(
        "missing.txt", str(tmp_path / "missing.txt")) in capsys.readouterr().err
    assert fake.calls == 0 and not (tmp_path / "dataset" / NEEDS_FILE).exists()


@pytest.mark.parametrize("log, message", [
    pytest.param('{"query": "fine"}\n{"query": ""}\n', "log.jsonl:2: field 'query' is empty",
                 id="empty-query"),
    pytest.param('{"query": "fine"}\n{"query": "x"\n', "log.jsonl:2: not valid JSON",
                 id="torn-line"),
])
def test_a_bad_query_log_is_refused_before_any_call(tmp_path, fake, capsys, log, message):
    (tmp_path / "log.jsonl").write_text(log)
    assert main(["needs", "--queries", str(tmp_path / "log.jsonl"),
                 "--out", str(tmp_path / "needs.txt")]) == 2
    assert message in capsys.readouterr().err
    assert fake.calls == 0 and fake.embedding_calls == 0
    assert not (tmp_path / "needs.txt").exists()


def test_needs_out_may_not_be_a_directory(tmp_path, fake, capsys):
    assert main(["needs", "--queries", str(LOG), "--out", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
