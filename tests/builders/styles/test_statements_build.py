"""`freshrag build --style statements` and `freshrag label` end to end, with the fake
OpenAI-compatible server as every model: scripted replies, malformed ones included."""

import json

import pytest

from freshrag.cli.main import main
from freshrag.core.dataset import load_dataset_dir
from freshrag.core.jsonl import read_jsonl
from freshrag.core.samples import read_samples
from tests import WIKIRAG
from tests.support.builds import CUTOFF, statements_build, statements_reply, tool
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import use_endpoint
from tests.support.wikidump import article_pages, write_dump


@pytest.fixture
def dump(tmp_path):
    return write_dump(tmp_path / "wiki.xml", article_pages(WIKIRAG / "articles.jsonl", 6))


def test_a_statements_build_records_every_question_failure_drop_and_label(
        tmp_path, dump, monkeypatch, capsys):
    with FakeOpenAIServer(reply=statements_reply) as fake:
        use_endpoint(monkeypatch, fake.base_url, "sk-x")
        assert statements_build(tmp_path, dump, "--min-critique", "3") == 0
        out = tmp_path / "d"
        funnel = json.loads((out / "manifest.json").read_text())["funnel"]
        assert funnel["requested"] == {"fact_single": 2, "summary": 1, "reasoning": 1,
                                       "unanswerable": 1}
        assert funnel["candidates"] == 5 and funnel["written"] == 4
        assert funnel["not_written"] == {"no_question": 1}
        assert funnel["dropped"] == {"critique_question_grounding": 1}  # reasoning, not unanswerable
        assert funnel["questions"] == 3 and funnel["labels"] == {"fact_single": 2, "unknown": 1}
        failed = [r for r in read_jsonl(out / "candidates.jsonl") if r["status"] == "failed"]
        assert failed[0]["requested_label"] == "summary" and "invalid JSON" in failed[0]["reason"]
        assert failed[0]["question_raw"] == ['{"question": "broken'] * 2

        dataset = load_dataset_dir(out)
        rows = {row["id"]: row for row in read_jsonl(out / "questions.jsonl")}
        for question in dataset.questions:
            row = rows[question.id]
            assert question.label == ("unknown" if row["requested_label"] == "unanswerable"
                                      else "fact_single")
            assert question.reference == (None if row["requested_label"] == "unanswerable"
                                          else row["reference"])
            assert row["critique"]["stand_alone"] == 5
        unknown = [r for r in read_jsonl(out / "labels.jsonl") if r["label"] == "unknown"]
        assert unknown[0]["raw"] == ['{"label": "maybe"}'] * 2 and unknown[0]["reason"]
        report = json.loads((out / "label-report.json").read_text())
        assert report["agreement_requested"]["n"] == 3 and (out / "labels.png").exists()
        assert "requested label (rows) against the labeller" in capsys.readouterr().out

        calls = fake.calls
        assert statements_build(tmp_path, dump, "--min-critique", "3") == 0
        assert fake.calls == calls  # finished: nothing asked again
        # no threshold: the reasoning question comes back
        assert statements_build(tmp_path, dump) == 0
        assert fake.calls == calls + 1  # its label, and nothing else
        assert json.loads((out / "manifest.json").read_text())["funnel"]["questions"] == 4

        run = tmp_path / "run"
        assert main(["run", "--dataset", str(out), "--systems", "baseline", "--out", str(run),
                     "--no-probe"]) == 0
        samples = read_samples(run / "samples.jsonl")
        assert {s["label"] for s in samples} == {"fact_single", "unknown"}
        assert any(s["reference"] for s in samples)


@pytest.mark.parametrize("options, message", [
    pytest.param(["--style", "creative", "--labels", "summary=1"], "go with --style statements",
                 id="labels-without-statements"),
    pytest.param(["--style", "recent", "--min-critique", "3"], "go with --style statements",
                 id="critique-without-statements"),
    pytest.param(["--stage", "labels"], "needs --label", id="label-stage-without-labelling"),
    pytest.param(["--style", "statements", "--labels", "summary=0.4"], "add up to 1",
                 id="shares-not-adding-up"),
])
def test_options_that_do_not_fit_are_refused(tmp_path, dump, options, message, capsys):
    args = ["build", "--dump", str(dump), "--cutoff", CUTOFF, "--out", str(tmp_path / "d")]
    try:
        status = main(args + options)
    except SystemExit as parsed:  # refused by argparse, as it parsed the option
        status = parsed.code
    assert status == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_another_label_request_on_the_same_dataset_is_refused(tmp_path, dump, monkeypatch,
                                                              capsys):
    with FakeOpenAIServer(reply=statements_reply) as fake:
        use_endpoint(monkeypatch, fake.base_url, "sk-x")
        assert statements_build(tmp_path, dump, "--stage", "A_r") == 0
        args = ["build", "--dump", str(dump), "--cutoff", CUTOFF, "--out", str(tmp_path / "d"),
                "--style", "statements", "--labels", "summary=3"]
        assert main(args) == 2
        assert "labels 'fact_single=2,summary=1,reasoning=1,unanswerable=1' (now 'summary=3')" \
            in capsys.readouterr().err


def small_dataset(directory):
    directory.mkdir()
    rows = [json.loads(line) for _, line in zip(range(2), open(WIKIRAG / "articles.jsonl"))]
    (directory / "articles.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    questions = [{"id": f"q{i}", "title": rows[i % 2]["title"], "question": f"Question {i}?"}
                 for i in range(4)]
    (directory / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    return directory


def labeller(request):
    question = request["messages"][-1]["content"].removeprefix("Question: ").split("?", 1)[0]
    labels = {"Question 0": "fact_single", "Question 1": "summary", "Question 2": "summary"}
    return tool("assign_label", {"label": labels.get(question, "none of these")})


def test_freshrag_label_with_hand_labels_reports_kappa_and_resumes(tmp_path, monkeypatch, capsys):
    dataset = small_dataset(tmp_path / "set")
    hand = tmp_path / "hand.jsonl"
    hand.write_text("".join(json.dumps({"id": f"q{i}", "label": label}) + "\n" for i, label in
                            enumerate(["fact_single", "summary", "reasoning", "summary"])))
    with FakeOpenAIServer(reply=labeller) as fake:
        use_endpoint(monkeypatch, fake.base_url, "sk-x")
        assert main(["label", str(dataset), "--hand-labels", str(hand)]) == 0
        out = capsys.readouterr().out
        assert "hand labels (rows) against the labeller: Cohen's kappa" in out
        report = json.loads((dataset / "label-report.json").read_text())
        assert report["agreement_hand"]["n"] == 4 and report["agreement_hand"]["unknown"] == 1
        assert report["agreement_hand"]["agree"] == 2 and report["agreement_hand"]["kappa"] > 0
        assert [q.label for q in load_dataset_dir(dataset).questions] == [
            "fact_single", "summary", "summary", "unknown"]
        assert fake.calls == 4 + 1  # the unparseable label was asked twice
        assert main(["label", str(dataset), "--hand-labels", str(hand)]) == 0
        assert fake.calls == 5


@pytest.mark.parametrize("hand_line, message", [
    pytest.param('{"id": "q9", "label": "summary"}', "hand.jsonl:2: id 'q9' is not a question",
                 id="unknown-id"),
    pytest.param('{"id": "q1", "label": "hard"}', "hand.jsonl:2: field 'label' is 'hard'",
                 id="bad-label"),
    pytest.param('{"id": "q1", ', "hand.jsonl:2: not valid JSON", id="torn"),
])
def test_bad_hand_labels_are_refused_before_any_call(tmp_path, monkeypatch, capsys, hand_line,
                                                     message):
    dataset = small_dataset(tmp_path / "set")
    before = (dataset / "questions.jsonl").read_text()
    hand = tmp_path / "hand.jsonl"
    hand.write_text('{"id": "q0", "label": "summary"}\n' + hand_line + "\n")
    with FakeOpenAIServer(reply=labeller) as fake:
        use_endpoint(monkeypatch, fake.base_url, "sk-x")
        assert main(["label", str(dataset), "--hand-labels", str(hand)]) == 2
        assert fake.calls == 0
    assert message in capsys.readouterr().err
    assert (dataset / "questions.jsonl").read_text() == before


def facts_that_never_parse(request):
    if (request.get("tool_choice") or {}).get("function", {}).get("name") == "report_statements":
        return tool("report_statements", '{"statements": ["]"]}')
    return statements_reply(request)


def test_an_article_without_facts_counts_its_steps_and_its_questions_in_the_funnel(
        tmp_path, dump, monkeypatch):
    with FakeOpenAIServer(reply=facts_that_never_parse) as fake:
        use_endpoint(monkeypatch, fake.base_url, "sk-x")
        assert statements_build(tmp_path, dump) == 0
    funnel = json.loads((tmp_path / "d" / "manifest.json").read_text())["funnel"]
    articles = funnel["statement_articles"]
    assert funnel["statement_steps_failed"] == {"facts": articles}
    assert funnel["statement_steps_not_asked"] == {"summaries": articles, "conclusions": articles}
    assert funnel["not_written"] == {"no_statements": 4} and funnel["questions"] == 1
