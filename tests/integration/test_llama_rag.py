"""Every system, the retrieving ones included, on the real embedded llama.cpp server with
SmolLM2-135M, local MiniLM embeddings and embedded Qdrant: an A_f question end to end, over the
index of the 1,101 released articles that the session builds once (tests/integration/conftest.py).

A model this small decides as it likes, so no decision is expected of it. What is checked is that
each row records what its calls show: the decision label is the one the model's recorded reply
gives, the calls that follow are the ones that decision calls for, retrieved chunks reach the
answer call, the answer is the reply of the call that answers, and the grade is what the judge's
recorded reply says (or unscored after both attempts). freshrag's own agents finish within the
run's bound with their steps holding their calls, and the report shows tokens, searches and
latency for each of them beside naive RAG, their steps as the rows hold them.
"""

import json
import subprocess
import sys

import pytest

from freshrag.core.samples import read_samples
from freshrag.systems import SYSTEMS
from tests import WIKIRAG as DATA
from tests.support.fakes import clean_env

pytestmark = pytest.mark.integration

QUESTIONS = 1  # through every system: 13 judged pairs; each check holds row by row
TOP_K = 5
DECIDING = {"boolean": "retrieve_information", "dated-boolean": "retrieve_information",
            "advanced": "more_information"}  # system: the function its decision call is read from
ANSWER_FIRST = ("advanced", "self-check")  # the first answer stands unless they retrieve
AGENTS = ("react", "iterative", "decompose", "router")  # as many calls as they choose, bounded
MAX_STEPS = 3  # the run's --max-steps: the agents' bound, low enough to be reached
ROUTES = ("no-retrieve", "one-retrieval", "multi-step", "none")


def said(call: dict, function: str) -> str:
    """The decision a recorded reply makes: `{"retrieve": true|false}` through `function`."""
    if call["tool_name"] != function or call["tool_arguments"] is None:
        return "none"
    try:
        arguments = json.loads(call["tool_arguments"])
    except json.JSONDecodeError:
        return "none"
    value = arguments.get("retrieve") if isinstance(arguments, dict) else None
    if value is True:
        return "retrieve"
    return "no-retrieve" if value is False else "none"


def extracts_reach(call: dict, row: dict) -> bool:
    """Every retrieved chunk, headed by its title, is in the answer call's system message."""
    system_message = call["messages"][0]["content"]
    return all(f"Title: {chunk['title']}\n" in system_message
               for chunk in row["details"]["retrieved"])


def check_agent_calls(row: dict, calls: list[dict]) -> None:
    """An agent's row: its steps hold every call, within the bound, and its searches."""
    steps = row["steps"]
    assert 1 <= len(calls) <= MAX_STEPS and sum(s["calls"] for s in steps) == len(calls)
    assert row.get("stopped") in (None, "max_steps", "budget")
    assert row.get("stopped") != "max_steps" or len(calls) == MAX_STEPS
    assert row["retrievals"] == sum(s["kind"] == "search" for s in steps)
    assert row["answer"] == next(s["text"] for s in reversed(steps) if s["kind"] == "answer")
    assert row["answer"] == (calls[-1]["text"] or "") or calls[-1]["tool_name"] == "answer"
    if row["system"] == "router":
        assert row["details"]["decision"] in ROUTES and steps[0]["kind"] == "decide"
        assert steps[0]["text"] == row["details"]["decision"]


def check_system_calls(row: dict, calls: list[dict]) -> None:
    system, details = row["system"], row["details"]
    if system in AGENTS:
        return check_agent_calls(row, calls)
    roles = [c["role"] for c in calls]
    if system in DECIDING:
        asked = calls[1] if system == "advanced" else calls[0]
        assert details["decision"] == said(asked, DECIDING[system]), (system, asked)
        assert details["decision_raw"] == (asked["tool_arguments"] or asked["text"])
    if system == "confidence":  # retrieves at or above the threshold; no probability: none
        p = details["p_retrieve"]
        assert details["decision"] == ("none" if p is None else "retrieve"
                                       if p >= details["threshold"] else "no-retrieve")
    if system == "self-check":  # retrieves below the threshold; no usable rating: none
        rating = details["confidence"]
        assert details["decision"] == ("none" if rating is None else "retrieve"
                                       if rating < details["threshold"] else "no-retrieve")
    retrieves = system in ("naive", "hyde") or details.get("decision") == "retrieve"
    assert row["retrievals"] == int(retrieves), system
    if retrieves:
        assert len(details["retrieved"]) == TOP_K
        if details["context_cut"] is None:
            assert extracts_reach(calls[-1], row), system
    else:
        assert "retrieved" not in details, system
    if "decision" in details and not retrieves:  # no extracts reached any call
        assert all("Title: " not in c["messages"][0]["content"] for c in calls), system
    expected_roles = {
        "baseline": ["answer"], "oracle": ["answer"], "naive": ["answer"],
        "hyde": ["answer", "answer"],
        "advanced": ["decision", "decision"] + (["answer"] if retrieves else []),
        "self-check": ["decision", "decision"] + (["answer"] if retrieves else []),
        "confidence": ["decision", "answer"],
    }.get(system)
    if system in ("boolean", "dated-boolean"):
        answered_by_decision = details.get("answered_by") == "decision"
        text_only = calls[0]["tool_name"] is None and bool((calls[0]["text"] or "").strip())
        assert answered_by_decision == (details["decision"] == "none" and text_only), system
        expected_roles = ["decision"] + ([] if answered_by_decision else ["answer"])
    assert roles == expected_roles, (system, roles)
    answering = calls[0] if system in ANSWER_FIRST and not retrieves else calls[-1]
    assert row["answer"] == (answering["text"] or ""), system
    if system in ANSWER_FIRST:
        assert details["first_answer"] == calls[0]["text"]
    if system == "hyde":
        assert details["hypothetical"] == calls[0]["text"]
    if system == "oracle":
        assert f"{row['gold_title']}\n\n" in calls[0]["messages"][0]["content"]


def check_grade(row: dict, judge_calls: list[dict]) -> None:
    grade = row["grade"]
    assert grade["raw"] == [c["tool_arguments"] for c in judge_calls]
    if grade["unscored_reason"] is None:
        given = json.loads(judge_calls[-1]["tool_arguments"])
        assert (grade["truthfulness"], grade["relevance"]) == \
            (given["truthfulness"], given["relevance"])
        assert grade["truthfulness"] in range(1, 6) and grade["relevance"] in range(1, 6)
        assert len(judge_calls) in (1, 2)
    else:
        assert grade["truthfulness"] is None and grade["relevance"] is None
        assert len(judge_calls) == 2


@pytest.mark.timeout(2400)  # counts the shared index's build (100 s alone, 10 min on a busy machine)
def test_all_systems_answer_with_the_real_model(tmp_path, shared_index_dir):
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "freshrag", "run", "--questions", str(DATA / "questions-A_f.jsonl"),
         "--articles", str(DATA / "articles.jsonl"), "--limit", str(QUESTIONS), "--out", str(out),
         "--systems", ",".join(SYSTEMS), "--index-dir", str(shared_index_dir), "--seed", "7",
         "--max-steps", str(MAX_STEPS),
         "--no-probe"],  # the judge probes have their own test (test_probe_judge.py)
        env=clean_env(), cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = read_samples(out / "samples.jsonl")
    assert sorted({r["system"] for r in rows}) == sorted(SYSTEMS)
    assert len(rows) == QUESTIONS * len(SYSTEMS)
    for row in rows:
        assert row["status"] == "ok", row["error"]
        for role, usage in row["usage"].items():
            assert usage["input"] > 0 and not usage["estimated"], (row["system"], role)
        judge_calls = [c for c in row["calls"] if c["role"] == "judge"]
        check_system_calls(row, [c for c in row["calls"] if c["role"] != "judge"])
        check_grade(row, judge_calls)
    assert any(line.startswith("| naive ") for line in done.stdout.splitlines())  # the summary
    summary = {r["system"]: r for r in json.loads((out / "summary.json").read_text())["rows"]}
    for system in SYSTEMS:
        mine = [r for r in rows if r["system"] == system]
        assert summary[system]["retrievals"] == sum(r["retrievals"] for r in mine)
        assert summary[system]["no_decision"] == sum(
            r["details"].get("decision") == "none" for r in mine)
    check_agents_report(out, rows)


def check_agents_report(out, rows: list[dict]) -> None:
    """`freshrag report --format json`: tokens, searches and answer latency for naive and each
    agent, and every answer's steps as its row holds them."""
    report = subprocess.run([sys.executable, "-m", "freshrag", "report", str(out), "--format",
                             "json"], env=clean_env(), cwd=out.parent, capture_output=True,
                            text=True, timeout=600)
    assert report.returncode == 0, report.stderr[-2000:]
    document = json.loads(report.stdout)
    summary = {row["system"]: row for row in document["rows"]}
    for name in ("naive", *AGENTS):
        assert summary[name]["input_tokens"] > 0 and summary[name]["searches_per_answer"] is not None
    shown = [r for r in rows if r["system"] in ("naive", *AGENTS)]
    assert all(r["answer_latency_s"] > 0 for r in shown)
    answers = {(a["system"], a["question_id"]): a for a in document["answers"]}
    assert all(answers[r["system"], r["question_id"]]["steps"] == r["steps"] for r in shown)
