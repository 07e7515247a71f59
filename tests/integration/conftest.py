"""Fixtures shared by the integration tests: the paper's released data, and one retrieval index
over its 1,101 articles (real MiniLM, embedded Qdrant), built once per session by
`freshrag index` and reused by every test that retrieves."""

import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "wikirag-2024"


@pytest.fixture(scope="session")
def shared_index_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("index")
    built = subprocess.run([sys.executable, "-m", "harness", "index", "--articles",
                            str(DATA / "articles.jsonl"), "--index-dir", str(directory)],
                           capture_output=True, text=True, timeout=1200)
    assert built.returncode == 0, built.stderr[-2000:]
    return directory
