"""A pair that fails part-way keeps the calls it made before the failure, so that the tokens
spent on failed pairs are counted; pairs on other threads never see each other's calls."""

import json
import threading
from pathlib import Path

import pytest

from freshrag.core.dataset import Dataset
from freshrag.core.row_check import sample_problem
from freshrag.core.samples import read_samples
from freshrag.core.types import (
    Article,
    Question,
    RetrievedChunk,
    Step,
    SystemAnswer,
    SystemContext,
    Usage,
)
from freshrag.llm.client import EndpointError
from freshrag.run.runner import CallRecorder, answer_and_grade
from freshrag.systems import SYSTEMS
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import FakeRetriever, ScriptedLLM, ToolReply
from tests.support.runs import run_cli

ARTICLES = {"Velmora": Article("Velmora", "The Velmora bridge has nine spans.")}
QUESTION = Question("q1", "How many spans does the Velmora bridge have?", "Velmora")
CHUNKS = [RetrievedChunk("Velmora", 0, "Title: Velmora\nThe Velmora bridge has nine spans.", 0.91)]
DATASET = Dataset("A_f", [QUESTION], ARTICLES, {"questions": Path("q.jsonl")})
GRADE = ToolReply("submit_grade", '{"truthfulness": 5, "relevance": 4}')
BAD_GRADE = ToolReply("submit_grade", '{"truthfulness": 9}')
MORE = ToolReply("more_information", '{"retrieve": true}')
DOWN = EndpointError("answer endpoint http://x/v1 failed after 6 attempt(s): HTTP 500")


def pair(name, script, usage=Usage(40, 3)):
    recorder = CallRecorder(ScriptedLLM(script, usage=usage))
    system = SYSTEMS[name](SystemContext(llm=recorder, articles=ARTICLES,
                                         retriever=FakeRetriever(CHUNKS)))
    return answer_and_grade(DATASET, QUESTION, name, system, recorder)


def usage(**roles):
    return {role: {"input": 40 * n, "output": 3 * n, "estimated": False} for role, n in roles.items()}


@pytest.mark.parametrize("name, script, roles, answer", [
    pytest.param("baseline", [DOWN], [], None, id="system-fails-at-once"),
    pytest.param("baseline", ["Nine.", DOWN], ["answer"], "Nine.", id="judge-fails"),
    pytest.param("baseline", ["Nine.", BAD_GRADE, DOWN], ["answer", "judge"], "Nine.",
                 id="judge-fails-on-its-second-attempt"),
    pytest.param("advanced", ["Maybe.", MORE, DOWN], ["decision", "decision"], None,
                 id="system-fails-after-its-decision"),
])
def test_a_failed_pair_keeps_the_calls_made_before_the_failure(name, script, roles, answer):
    row = pair(name, script)
    assert row["status"] == "failed" and "HTTP 500" in row["error"]
    assert [call["role"] for call in row["calls"]] == roles
    assert row["usage"] == usage(**{role: roles.count(role) for role in roles})
    assert row["answer"] == answer


def test_a_finished_pair_records_system_and_judge_calls_once():
    row = pair("advanced", ["Maybe.", MORE, "Nine.", GRADE])
    assert row["status"] == "ok" and row["grade"]["truthfulness"] == 5
    assert [call["role"] for call in row["calls"]] == ["decision", "decision", "answer", "judge"]
    assert row["usage"] == usage(decision=2, answer=1, judge=1)


class SlowLLM:
    """Each call waits until every thread has made its first call, so pairs interleave."""

    def __init__(self, threads):
        self.barrier = threading.Barrier(threads)

    def chat(self, role, messages, **options):
        self.barrier.wait(timeout=10)
        return ScriptedLLM([GRADE if options.get("tools") else "Nine."]).chat(role, messages, **options)


def test_pairs_on_other_threads_do_not_see_each_others_calls():
    recorder = CallRecorder(SlowLLM(threads=4))
    system = SYSTEMS["baseline"](SystemContext(llm=recorder, articles=ARTICLES))
    rows = [None] * 4

    def work(i):
        rows[i] = answer_and_grade(DATASET, QUESTION, "baseline", system, recorder)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all([c["role"] for c in row["calls"]] == ["answer", "judge"] for row in rows)


def test_a_run_keeps_the_judge_calls_made_before_the_judge_failed(tmp_path, monkeypatch):
    judged = set()

    def reply(request):
        if not request.get("tools"):  # an answer per prompt, so that every pair's judge differs
            return {"content": f"answer {len(json.dumps(request['messages']))}"}
        prompt = request["messages"][-1]["content"]
        if prompt in judged:  # the judge's second attempt: the endpoint is down
            return {"error": {"status": 500, "message": "judge down"}}
        judged.add(prompt)  # the first attempt: a grade out of range, so the judge asks again
        return {"tool_call": {"name": "submit_grade", "arguments": '{"truthfulness": 9}'}}

    (tmp_path / "fast.toml").write_text("max_attempts = 1\n")
    with FakeOpenAIServer(reply=reply) as server:
        monkeypatch.setenv("FRESHRAG_BASE_URL", server.base_url)
        assert run_cli(tmp_path, "--config", str(tmp_path / "fast.toml")) == 1
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert len(rows) == 6 and all(r["status"] == "failed" for r in rows)
    for row in rows:
        assert [c["role"] for c in row["calls"]] == ["answer", "judge"]
        assert row["calls"][1]["tool_arguments"] == '{"truthfulness": 9}'
        assert row["usage"]["judge"]["input"] > 0 and row["usage"]["answer"]["input"] > 0


class StepsOfItsOwn:
    """A user's system that reports its trajectory: two searches of one query, then an answer."""

    def __init__(self, context):
        self.context = context

    def answer(self, question):
        chunks = tuple(self.context.retriever.retrieve(question.text))
        reply = self.context.llm.chat("answer", [{"role": "user", "content": question.text}])
        return SystemAnswer(reply.text or "", calls=[reply], retrievals=2, steps=[
            Step("search", query="velmora", retrieved=chunks),
            Step("search", query="velmora", retrieved=chunks),
            Step("answer", (reply,), text=reply.text)])


def test_a_users_steps_are_written_by_the_runner_and_a_system_without_steps_writes_none():
    recorder = CallRecorder(ScriptedLLM(["Nine.", GRADE], usage=Usage(40, 3)))
    system = StepsOfItsOwn(SystemContext(llm=recorder, articles=ARTICLES,
                                         retriever=FakeRetriever(CHUNKS)))
    row = answer_and_grade(DATASET, QUESTION, "mine", system, recorder)
    assert [(s["kind"], s["repeated"]) for s in row["steps"]] == [
        ("search", False), ("search", True), ("answer", False)]
    assert row["steps"][2]["usage"] == usage(answer=1) and row["usage"] == usage(answer=1, judge=1)
    assert pair("baseline", ["Nine.", GRADE])["steps"][0]["usage"] == usage(answer=1)


def test_a_pair_whose_judge_fails_keeps_its_answers_steps():
    row = pair("advanced", ["Maybe.", MORE, "Nine.", DOWN])
    assert row["status"] == "failed"
    assert [s["kind"] for s in row["steps"]] == ["answer", "decide", "search", "answer"]


class OddSteps:
    """A user's system whose steps are not what `Step` holds."""

    steps: list = []

    def __init__(self, context):
        self.context = context

    def answer(self, question):
        return SystemAnswer("Nine.", steps=self.steps)


@pytest.mark.parametrize("steps, said", [
    pytest.param({"kind": "search"}, "steps that are a dict, not a list of Step", id="not-a-list"),
    pytest.param([{"kind": "search"}], "steps[0] a dict, not a Step", id="a-dict"),
    pytest.param([Step("search", query=7)], "steps[0].query 7, not text or None", id="query"),
    pytest.param([Step("search", retrieved=("Velmora",))], "steps[0].retrieved holding",
                 id="retrieved"),
    pytest.param([Step("answer", ("Nine.",))], "steps[0].calls holding", id="calls"),
])
def test_steps_that_are_not_steps_fail_the_pair_with_a_reason_and_no_row_a_reader_refuses(
        steps, said):
    recorder = CallRecorder(ScriptedLLM([GRADE]))
    system = type("Odd", (OddSteps,), {"steps": steps})(SystemContext(llm=recorder,
                                                                      articles=ARTICLES))
    row = answer_and_grade(DATASET, QUESTION, "odd", system, recorder)
    assert row["status"] == "failed" and row["steps"] == [] and row["answer"] is None
    assert row["error"].startswith("system 'odd' answered with ") and said in row["error"]
    assert sample_problem(dict(row)) is None
