"""`freshrag build --style grounded` on a dump of the example articles with the fake server as the
builder (scripted text forms, some garbled), then `freshrag run` through naive, boolean and
advanced with scripted answers (right for the short form, wrong for the long one), and
`freshrag report`: the groups, tags, adequacy, refined accuracy, attribution and wording test."""

import json
import sqlite3
from collections import Counter

import pytest

from freshrag.builders.styles.grounded import FAILED, QUERIES
from freshrag.cli.commands.demo import write_example_dump
from freshrag.cli.main import main
from freshrag.core.jsonl import read_jsonl
from freshrag.core.samples import read_samples
from tests.support.builds import listed_build
from tests.support.fake_openai_server import FakeOpenAIServer, default_reply
from tests.support.fakes import grade_call, use_endpoint

CRITERIA = ("short", "long", "casual")
GROUPS = 3


class Script:
    """The fake model: text forms for write_question (every casual one garbled, each long one
    garbled once, then written), a retrieve call for boolean, answers that state the reference
    for short forms and miss it for the others, and a grade of 1 from the judge."""

    def __init__(self):
        self.references: dict[str, str] = {}  # question -> reference, once the set is built
        self.long_tries: Counter = Counter()

    def __call__(self, request):
        tools = [tool["function"]["name"] for tool in request.get("tools") or []]
        user = request["messages"][-1]["content"]
        if "write_question" in tools:
            return self.form(request["messages"][0]["content"], user)
        if "submit_grade" in tools:
            return grade_call(1, 1)
        if "retrieve_information" in tools:
            return {"tool_call": {"name": "retrieve_information",
                                  "arguments": json.dumps({"retrieve": True})}}
        if tools:
            return default_reply(request)
        question = next(m["content"] for m in request["messages"] if m["role"] == "user")
        if question.startswith("short:"):
            return {"content": f"The answer is {self.references[question]}."}
        return {"content": "I do not know."}

    def form(self, system, user):
        text = user.splitlines()[0].removeprefix("Ask for: ")
        if "casual" in system:
            return {"tool_call": {"name": "write_question", "arguments": '{"question": '}}
        criterion = "long" if "twenty words" in system else "short"
        if criterion == "long":
            self.long_tries[text] += 1
            if self.long_tries[text] == 1:
                return {"content": "no call at all"}
        return {"tool_call": {"name": "write_question",
                              "arguments": json.dumps({"question": f"{criterion}: {text}?"})}}


@pytest.fixture
def scripted(monkeypatch):
    script = Script()
    with FakeOpenAIServer(reply=script) as server:
        use_endpoint(monkeypatch, server.base_url, "sk-grounded")
        yield script, server


def build(tmp_path, dump):
    return listed_build(["--dump", str(dump), "--cutoff", "2025-12-31", "--out",
                         str(tmp_path / "dataset"), "--style", "grounded", "--questions-from",
                         "A_r", "--groups", str(GROUPS), "--criteria", ",".join(CRITERIA)])


def test_grounded_build_run_and_report(tmp_path, scripted, capsys):
    script, server = scripted
    dump = write_example_dump(tmp_path / "example.xml")
    assert build(tmp_path, dump) == 0
    out = tmp_path / "dataset"
    queries = list(read_jsonl(out / QUERIES))
    kept = [q for q in queries if q["dropped"] is None]
    assert len(kept) == GROUPS and {q["kind"] for q in kept} == {"selection", "projection", "join"}
    with sqlite3.connect(out / "facts.sqlite") as db:  # each answer is what its SQL returns
        for query in kept:
            assert db.execute(query["sql"], query["params"]).fetchall() == [(query["answer"],)]
    questions = list(read_jsonl(out / "questions.jsonl"))
    assert sorted((q["group"], q["criterion"]) for q in questions) == sorted(
        (q["group"], c) for q in kept for c in ("short", "long"))
    for question in questions:
        query = next(q for q in kept if q["group"] == question["group"])
        assert question["reference"] == query["answer"] and question["sql"] == query["sql"]
        assert question["title"] == query["gold_title"]
        assert question["question"] == f"{question['criterion']}: {query['text']}?"
    failed = list(read_jsonl(out / FAILED))
    assert sorted(f["group"] for f in failed) == sorted(q["group"] for q in kept)
    assert all(f["criterion"] == "casual" and f["reason"].startswith("invalid JSON") and
               f["raw"] == '{"question": ' for f in failed)
    grounded = json.loads((out / "manifest.json").read_text())["funnel"]["grounded"]
    assert grounded["groups"] == GROUPS and grounded["forms"] == 2 * GROUPS
    assert grounded["forms_failed"] == GROUPS
    assert grounded["queries"] == len(queries) == GROUPS + sum(grounded["dropped"].values())

    calls = server.calls  # resuming asks again only the forms still missing
    assert build(tmp_path, dump) == 0
    assert server.calls - calls == 3 * GROUPS  # the casual ones, three tries each

    script.references = {q["question"]: q["reference"] for q in questions}
    run = tmp_path / "run"
    assert main(["run", "--dataset", str(out), "--systems", "naive,boolean,advanced", "--out",
                 str(run), "--no-probe", "--index-dir", str(tmp_path / "index")]) == 0
    rows = read_samples(run / "samples.jsonl")
    assert all(row["group"] and row["criterion"] and row["reference"] for row in rows)
    capsys.readouterr()
    assert main(["report", str(run), "--html", str(tmp_path / "report.html")]) == 0
    printed = capsys.readouterr().out
    assert "### Semantic groups" in printed and "### Wording within groups" in printed
    analysis = json.loads((run / "analysis.json").read_text())
    assert sorted(entry["system"] for entry in analysis["groups"]) == \
        ["advanced", "boolean", "naive"]  # in the order the rows finished
    for entry in analysis["groups"]:
        assert (entry["groups"], entry["non_robust"], entry["gap"]) == (GROUPS, GROUPS, 0)
        assert (entry["adequacy"], entry["accuracy"], entry["refined_accuracy"]) == (1.0, 0.5, 0.5)
        assert sum(entry[f"wrong_{c}"] for c in ("retriever", "language_model",
                                                 "no_retrieval")) == GROUPS
    for test in analysis["wording"]:
        assert (test["axis"], test["paired_groups"], test["difference"]) == ("length", GROUPS, 1.0)
        # too few groups to test (docs/reports.md#how-sure-the-numbers-are): said, not computed
        assert test["p_value"] is None and test["untested"].startswith(f"n = {GROUPS}, below")
    forms = analysis["grounded"]["forms"]
    assert Counter((f["criterion"], f["verdict"], f["basis"]) for f in forms) == {
        ("short", "correct", "match"): 3 * GROUPS,
        ("long", "incorrect", "no match, judge below threshold"): 3 * GROUPS}
    assert (run / "group-tags.png").stat().st_size > 0
    page = (tmp_path / "report.html").read_text()
    assert "Semantic groups" in page and "group-tags.png" in page


def test_grounded_questions_need_the_facts_stage(tmp_path, scripted, capsys):
    dump = write_example_dump(tmp_path / "example.xml")
    out = tmp_path / "dataset"
    grounded = ["--style", "grounded", "--questions-from", "A_r"]
    assert main(["build", "--dump", str(dump), "--cutoff", "2025-12-31", "--out", str(out),
                 "--stage", "A_r", *grounded]) == 0
    assert main(["build", "--cutoff", "2025-12-31", "--out", str(out), "--stage", "questions",
                 *grounded]) == 2
    assert f"{out}: stage facts has not finished" in capsys.readouterr().err
    assert not (out / "questions.jsonl").exists() and scripted[1].calls == 0
