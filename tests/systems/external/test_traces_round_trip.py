"""A run exported as traces and imported as a user's own system
(docs/own-system.md#traces-made-elsewhere, docs/export.md#opentelemetry-traces) gives the same report rows: each answer, its
steps (searches with what they found, decisions, the calls in each), its tokens per role, the
chunks it saw, and the summary's row of every system. Three systems of three shapes, on the fake
server: naive RAG (one search), boolean (a decision; no retrieval), react (two searches, then the
answer); one imported by `freshrag import`, two by `freshrag run --systems NAME=TRACES`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from freshrag.cli.main import main  # noqa: E402
from freshrag.reporting import export  # noqa: E402
from freshrag.reporting.loading import load_runs  # noqa: E402
from tests.support.agent_runs import agents_run, scripted_endpoint  # noqa: E402

SYSTEMS = ("naive", "boolean", "react")
TIMED = ("run", "system", "latency_s", "answer_latency_s")  # the replay's own, not the answer's


def freshrag(*args: Any) -> int:
    return main([str(arg) for arg in args])


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Any:
    root = tmp_path_factory.mktemp("traces-round-trip")
    with scripted_endpoint("sk-traces"):
        agents_run(root, SYSTEMS)
        options = ("--dataset", root / "data", "--no-probe", "--concurrency", "1")
        for system in SYSTEMS:  # one system a file: a traces file answers each question once
            assert freshrag("export", root / "run", "--format", "otel", "--systems", system,
                            "--out", root / f"{system}.jsonl") == 0
        assert freshrag("import", root / "naive.jsonl", "--system", "naive-traced", *options,
                        "--out", root / "imported") == 0
        assert freshrag("run", *options, "--out", root / "back", "--systems",
                        ",".join(f"{s}-traced={root / s}.jsonl" for s in SYSTEMS[1:])) == 0
    return [root / "run"], [root / "imported", root / "back"]


def flat(run_dirs) -> dict[tuple[str, str], dict[str, Any]]:
    rows = export.records(load_runs(run_dirs), "jsonl")[1]
    return {(row["system"].removesuffix("-traced"), row["question_id"]): row for row in rows}


def test_every_answer_comes_back_with_its_steps_and_tokens(runs):
    ran, back = (flat(run_dir) for run_dir in runs)
    assert sorted(back) == sorted(ran) and len(ran) == 9
    for key, row in ran.items():
        again = back[key]
        assert {column: again[column] for column in row if column not in TIMED} == \
            {column: value for column, value in row.items() if column not in TIMED}, key
    kinds = {key[0]: [step["kind"] for step in row["steps"]] for key, row in ran.items()}
    assert kinds == {"naive": ["search", "answer"], "boolean": ["decide", "answer"],
                     "react": ["search", "search", "answer"]}


def test_the_summary_rows_are_the_same(runs):
    ran, back = ([row for run_dir in dirs
                  for row in json.loads((run_dir / "summary.json").read_text())["rows"]]
                 for dirs in runs)
    assert [{**row, "system": row["system"].removesuffix("-traced")} for row in back] == ran
