"""Mixed traffic end to end on the fake OpenAI-compatible server: a dataset of fresh, control and
general questions, every adaptive system (the `confidence` decider reading the fake's logprobs),
then `freshrag report` with mixes: the threshold sweep, the mixes and the savings curve are
recombined from finished rows, so the report makes no call."""

import json
import math

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from freshrag.systems.prompts import NEED_PROMPT
from tests.support.fake_openai_server import default_reply
from tests.support.runs import sample, write_run

SYSTEMS = "baseline,naive,boolean,advanced,dated-boolean,confidence,self-check"
QUESTIONS = [  # (id, title, question, kind)
    ("f1", "Town 1", "What did Town 1 open in its latest news?", "fresh"),
    ("f2", "Town 2", "What is the latest news about Town 2?", "fresh"),
    ("c1", "Town 3", "What is the history of Town 3?", "control"),
    ("c2", "Town 4", "Describe the history of Town 4.", "control"),
    ("g1", None, "Hello, how are you?", "general"),
    ("g2", None, "What is 17 times 23?", "general"),
]


def fresh(text: str) -> bool:
    return "latest" in text


def reply(request):
    """A model that needs documents for "latest" questions only, says so through every decider,
    and answers well from extracts; the judge prefers answers made from extracts."""
    messages = request["messages"]
    question = next(m["content"] for m in messages if m["role"] == "user")
    if messages[0]["content"] == NEED_PROMPT:
        if "Town 2" in question:
            return {"content": "yes"}  # an endpoint without logprobs, for this question
        p = 0.8 if fresh(question) else 0.3
        top = [{"token": "yes", "logprob": math.log(p), "bytes": None},
               {"token": "no", "logprob": math.log(1 - p), "bytes": None}]
        return {"content": "yes", "logprobs": [{"token": "yes", "logprob": math.log(p),
                                                 "bytes": None, "top_logprobs": top}]}
    choice = request.get("tool_choice")
    forced = choice["function"]["name"] if isinstance(choice, dict) else None
    if forced == "rate_confidence":
        return {"tool_call": {"name": forced,
                              "arguments": json.dumps({"confidence": 2 if fresh(question) else 5})}}
    if forced in ("more_information",) or request.get("tool_choice") == "auto":
        name = forced or "retrieve_information"
        return {"tool_call": {"name": name, "arguments": json.dumps({"retrieve": fresh(question)})}}
    if forced == "submit_grade":
        good = "from the extracts" in messages[1]["content"] or not fresh(messages[1]["content"])
        return {"tool_call": {"name": forced, "arguments": json.dumps(
            {"truthfulness": 5 if good else 1, "relevance": 5 if good else 2})}}
    if "extracts below" in messages[0]["content"]:
        return {"content": "An answer from the extracts."}
    return default_reply(request)


@pytest.fixture
def fake(fake_server):
    return fake_server(reply=reply)


def write_mixed(directory):
    directory.mkdir()
    articles = [{"title": f"Town {i}", "content": f"Town {i} has {i + 3} bridges."}
                for i in range(1, 5)]
    questions = [{"id": q, "title": t, "question": text, "kind": kind, "need": kind == "fresh"}
                 for q, t, text, kind in QUESTIONS]
    for name, rows in (("articles.jsonl", articles), ("questions.jsonl", questions)):
        (directory / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return directory


def test_mixed_traffic_runs_every_decider_and_the_sweeps_make_no_call(tmp_path, fake, capsys):
    dataset = write_mixed(tmp_path / "union")
    run = tmp_path / "run"
    assert main(["run", "--dataset", str(dataset), "--systems", SYSTEMS, "--out", str(run),
                 "--no-probe", "--concurrency", "4"]) == 0
    rows = read_samples(run / "samples.jsonl")
    assert len(rows) == len(QUESTIONS) * 7 and all(r["status"] == "ok" for r in rows)
    confidence = {r["question_id"]: r["details"] for r in rows if r["system"] == "confidence"}
    assert confidence["f1"]["p_retrieve"] == pytest.approx(0.8)
    assert confidence["f2"]["p_retrieve"] is None and confidence["f2"]["decision"] == "none"
    assert confidence["f2"]["p_unavailable"] == "the endpoint returned no logprobs"
    calls = fake.calls

    capsys.readouterr()
    assert main(["report", str(run), "--mix", "0.1:0.6:0.3", "--mix", "1:0:0",
                 "--html", str(tmp_path / "report.html")]) == 0
    out = capsys.readouterr().out
    assert fake.calls == calls  # the sweeps, the mixes and the curve are recombined
    analysis = json.loads((run / "analysis.json").read_text())
    kinds = {(e["system"], e["kind"]) for e in analysis["decisions_by_kind"]}
    for system in ("boolean", "advanced", "dated-boolean", "confidence", "self-check"):
        assert {(system, k) for k in ("fresh", "control", "general", "all")} <= kinds
    self_check = [e for e in analysis["decisions_by_kind"]
                  if e["system"] == "self-check" and e["kind"] == "all"][0]
    assert self_check["accuracy"][0] == 1.0 and self_check["f1"][0] == 1.0  # rates by need
    thresholds = {e["system"] for e in analysis["thresholds"]}
    assert thresholds == {"confidence", "self-check"}
    [roc] = [e for e in analysis["roc"] if e["system"] == "confidence"]
    assert roc["unavailable"] == 1 and roc["auroc"][0] == 1.0
    mixes = {(e["system"], e["mix"]): e for e in analysis["mixes"]}
    assert mixes["baseline", "fresh 1, control 0, general 0"]["score"][0] == 3  # 1 + 2
    assert {e["system"] for e in analysis["savings"]} >= {"naive", "baseline",
                                                          "oracle-router (need)", "self-check"}
    for title in ("per traffic kind", "Threshold sweep", "ROC and precision-recall",
                  "Savings curve", "Chosen traffic mixes"):
        assert title in out
    assert (run / "savings-union.png").exists() and (run / "deciders.png").exists()
    page = (tmp_path / "report.html").read_text()
    for table in ("decisions_by_kind", "thresholds", "roc", "savings", "mixes"):
        assert f'id="analysis-{table}"' in page


def test_a_mix_asked_of_runs_without_kinds_is_refused_naming_it(tmp_path, capsys):
    # it gave an empty table without a word
    run = write_run(tmp_path / "run", [sample("q1", "naive"), sample("q2", "naive")])
    assert main(["report", str(run), "--mix", "0.5:0.3:0.2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"freshrag: error: --mix: no question of {run} has a traffic kind")
    assert len(err.strip().splitlines()) == 1 and not (run / "summary.json").exists()
