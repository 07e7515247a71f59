"""The worked examples of docs/examples/ as the tests run them: the RAG service started on a free
port, the systems a run names, and what every example's rows must show (docs/own-system.md)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path
from typing import Iterator

from freshrag.core.samples import read_samples
from tests import ROOT
from tests.support.serving import ended

EXAMPLES = ROOT / "docs" / "examples"


@contextlib.contextmanager
def rag_service(articles: Path, env: dict[str, str]) -> Iterator[str]:
    """docs/examples/rag_service.py on a free port; its URL."""
    process = subprocess.Popen([sys.executable, str(EXAMPLES / "rag_service.py"), "--articles",
                                str(articles), "--port", "0"], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = process.stdout.readline()
        assert line.startswith("serving on "), process.stderr.read()
        yield line.split("serving on ", 1)[1].strip()
    finally:
        ended(process)


def example_systems(url: str) -> str:
    return (f"naive,lc={EXAMPLES / 'langchain_rag.py'}:LangChainRag,svc={url},"
            f"theirs={EXAMPLES / 'answers-ragas.csv'}")


def check_run(run_dir: Path, questions: int) -> dict[str, dict]:
    """Every example answered every question beside naive; the report's summary by system."""
    rows = read_samples(run_dir / "samples.jsonl")
    systems = ("naive", "lc", "svc", "theirs")
    assert sorted((r["system"], r["status"]) for r in rows) == sorted(
        (s, "ok") for s in systems for _ in range(questions))
    lc = [r for r in rows if r["system"] == "lc"]
    assert all(r["retrievals"] == 1 and r["usage"]["answer"]["input"] > 0 for r in lc)
    svc = [r for r in rows if r["system"] == "svc"]
    assert all(r["details"]["unknown"] == [] and r["usage"]["answer"]["input"] > 0 for r in svc)
    assert all(r["details"]["decision"] == "retrieve" for r in svc)
    return {system: [r for r in rows if r["system"] == system] for system in systems}
