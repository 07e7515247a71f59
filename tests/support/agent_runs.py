"""A small run with an agent that searches more than once, made on the fake server, for the tests
of what reads a run's steps back (the OTLP, inspect and RAGChecker exports, traces imported as a
system): `react` scripted to search twice and then answer (tests/support/agent_script.py)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator, Sequence

import pytest

from freshrag.cli.main import main
from tests.support.agent_script import searches_then_answers
from tests.support.datasets import write_dataset
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import use_endpoint


@contextlib.contextmanager
def scripted_endpoint(key: str) -> Iterator[FakeOpenAIServer]:
    """The fake server, its agents scripted to search twice then answer, as every role's
    endpoint (with the API key `key`) until the block ends."""
    with FakeOpenAIServer(reply=searches_then_answers(2)) as server, \
            pytest.MonkeyPatch.context() as patch:
        use_endpoint(patch, server.base_url, key)
        yield server


def agents_run(root: Path, systems: Sequence[str]) -> Path:
    """`systems` run on three invented questions (root/data) into root/run, one pair at a time
    so that the rows are in the plan's order, on the endpoint a `scripted_endpoint` set."""
    write_dataset(root / "data", 3)
    assert main([str(arg) for arg in (
        "run", "--dataset", root / "data", "--systems", ",".join(systems), "--out", root / "run",
        "--no-probe", "--concurrency", "1", "--max-steps", "5")]) == 0
    return root / "run"
