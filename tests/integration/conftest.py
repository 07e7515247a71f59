"""Fixtures shared by the integration tests, each built or started once per session: one
retrieval index over the paper's 1,101 released articles and one over the example corpus (real
MiniLM, embedded Qdrant, built by `freshrag index` and reopened by every run that retrieves over
the same articles with the same settings); one embedded llama.cpp server (the prebuilt runtime,
SmolLM2-135M) for the tests that point a run or a client at a server they did not start; and a
local MediaWiki seeded with the released articles, for the builder's live-wiki source. The
costs they save are in docs/design.md#tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from freshrag.core.config import LOCAL_MODEL
from freshrag.core.dataset import example_dir
from freshrag.llm.local_server import RUNTIME_ENV, LocalServer
from tests import WIKIRAG
from tests.integration.mediawiki import SeededMediaWiki, seeded_wiki
from tests.support.fakes import clean_env

DATA = WIKIRAG


def built_index(articles: Path, directory: Path) -> Path:
    built = subprocess.run([sys.executable, "-m", "freshrag", "index", "--articles",
                            str(articles), "--index-dir", str(directory)],
                           capture_output=True, text=True, timeout=1200)
    assert built.returncode == 0, built.stderr[-2000:]
    return directory


@pytest.fixture(scope="session")
def shared_index_dir(tmp_path_factory) -> Path:
    """The index of the 1,101 released articles (about 2 minutes on 2 idle cores)."""
    return built_index(DATA / "articles.jsonl", tmp_path_factory.mktemp("index"))


@pytest.fixture(scope="session")
def example_index_dir(tmp_path_factory) -> Path:
    """The index of the example corpus (the 40 articles of `freshrag demo`)."""
    return built_index(example_dir() / "articles.jsonl", tmp_path_factory.mktemp("example-index"))


@pytest.fixture(scope="session")
def embedded_server() -> Iterator[LocalServer]:
    """The embedded server on the prebuilt runtime, whatever FRESHRAG_LOCAL_RUNTIME says, for
    the tests that do not start their own: how a run starts and stops its own server is what
    the tests that leave every endpoint unset check."""
    saved = os.environ.pop(RUNTIME_ENV, None)
    try:
        with LocalServer() as started:
            yield started
    finally:
        if saved is not None:
            os.environ[RUNTIME_ENV] = saved


@pytest.fixture(scope="session")
def embedded_env(embedded_server) -> dict[str, str]:
    """An environment that points every chat role at the shared embedded server and the
    embeddings at the local MiniLM, as a user of a running server would."""
    return {**clean_env(), "FRESHRAG_BASE_URL": embedded_server.base_url,
            "FRESHRAG_MODEL": LOCAL_MODEL, "FRESHRAG_API_KEY": "none",
            "FRESHRAG_EMBEDDINGS_BASE_URL": "local"}


@pytest.fixture(scope="session")
def mediawiki(tmp_path_factory) -> Iterator[SeededMediaWiki]:
    """A real MediaWiki (the Debian package, SQLite, `php -S`) holding all 1,101 released
    articles with their two-revision histories, 3 redirects to articles and 2 disambiguation
    pages (plus Template:Disambiguation). About 6 s to start on a 2-core machine."""
    with seeded_wiki(tmp_path_factory.mktemp("mediawiki"), DATA / "articles.jsonl") as wiki:
        yield wiki
