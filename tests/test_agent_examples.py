"""The agent examples of docs/examples/ (docs/own-system.md#agents-of-your-own-langgraph-openai-agents-sdk):
a LangGraph agent and an OpenAI Agents SDK agent, unchanged framework code pointed at the run's
endpoint, beside naive RAG in one run and one report on the fake server, whose model searches
once and then answers; their calls counted per role, their searches in their steps, their
latency kept; a second run of the same answered from the cache; a dry run giving a range that
ends at their --max-steps."""

from __future__ import annotations

import json

import pytest

from freshrag.cli.main import main
from freshrag.core.dataset import example_dir
from freshrag.core.samples import read_samples
from tests.support.agent_script import ANSWER, searches_then_answers
from tests.support.examples import EXAMPLES

AGENTS = {"langgraph-agent": f"{EXAMPLES / 'langgraph_agent.py'}:LangGraphAgent",
          "agents-sdk-agent": f"{EXAMPLES / 'openai_agents_agent.py'}:AgentsSDKAgent"}
SYSTEMS = ",".join(["naive", *AGENTS.values()])
QUESTIONS = 3


def run(tmp_path, out: str, *extra: str) -> int:
    return main(["run", "--dataset", str(example_dir()), "--systems", SYSTEMS, "--limit",
                 str(QUESTIONS), "--no-probe", "--out", str(tmp_path / out),
                 "--index-dir", str(tmp_path / "index"), "--max-steps", "3", *extra])


@pytest.fixture
def server(fake_server):
    return fake_server(reply=searches_then_answers(1))


def test_the_agents_run_beside_naive_with_their_calls_counted_and_searches_in_steps(
        tmp_path, server, capsys):
    assert run(tmp_path, "run") == 0
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert sorted((r["system"], r["status"]) for r in rows) == sorted(
        (system, "ok") for system in ("naive", *AGENTS) for _ in range(QUESTIONS))
    agents = [r for r in rows if r["system"] in AGENTS]
    searched = [r for r in server.requests if any(m["role"] == "tool" for m in r["messages"])]
    assert len(searched) == len(agents)  # each agent's second call sent its search's result
    for row in agents:
        assert row["answer"] == ANSWER and row["retrievals"] == 1 and row["stopped"] is None
        assert [s["kind"] for s in row["steps"]] == ["reason", "search", "answer"]
        search = row["steps"][1]
        assert search["query"].endswith("(1)") and search["retrieved"]
        assert sum(s["usage"]["answer"]["input"] for s in row["steps"] if s["calls"]) == \
            row["usage"]["answer"]["input"] > 0
        assert row["usage"]["judge"]["input"] > 0 and row["latency_s"] > 0
        assert row["details"]["decision"] == "retrieve"
    capsys.readouterr()
    assert main(["report", str(tmp_path / "run"), "--format", "json"]) == 0
    summary = {row["system"]: row for row in json.loads(capsys.readouterr().out)["rows"]}
    assert sorted(summary) == sorted(["naive", *AGENTS])
    assert all(summary[name]["input_tokens"] > summary["naive"]["input_tokens"] for name in AGENTS)

    calls = server.calls
    assert run(tmp_path, "again") == 0  # the same run again: every call from the cache
    assert server.calls == calls
    again = read_samples(tmp_path / "again" / "samples.jsonl")
    assert all(r["status"] == "ok" and r["answer"] == ANSWER for r in again if r["system"] in AGENTS)


def test_a_dry_run_of_the_agents_gives_the_range_up_to_their_max_steps(tmp_path, server,
                                                                       capsys):
    assert run(tmp_path, "dry", "--dry-run") == 0
    assert server.calls == 0
    table = capsys.readouterr().out
    [answer] = [line for line in table.splitlines() if line.startswith("| answer |")]
    # low: each system answers at once (3 calls a question); high: naive's 1 and each agent's
    # 3 (its --max-steps), searching at every call the made-up replies ask
    assert answer.split("|")[3].strip() == f"{3 * QUESTIONS}–{7 * QUESTIONS}"
