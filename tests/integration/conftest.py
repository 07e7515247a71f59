"""Fixtures shared by the integration tests: the paper's released data, and one retrieval index
over its 1,101 articles (real MiniLM, embedded Qdrant), built once per session by
`freshrag index` and reused by every test that retrieves; and a local MediaWiki seeded with
those articles, for the builder's live-wiki source."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from tests import WIKIRAG
from tests.integration.mediawiki import SeededMediaWiki, seeded_wiki

DATA = WIKIRAG


@pytest.fixture(scope="session")
def shared_index_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("index")
    built = subprocess.run([sys.executable, "-m", "freshrag", "index", "--articles",
                            str(DATA / "articles.jsonl"), "--index-dir", str(directory)],
                           capture_output=True, text=True, timeout=1200)
    assert built.returncode == 0, built.stderr[-2000:]
    return directory


@pytest.fixture(scope="session")
def mediawiki(tmp_path_factory) -> Iterator[SeededMediaWiki]:
    """A real MediaWiki (the Debian package, SQLite, `php -S`) holding all 1,101 released
    articles with their two-revision histories, 3 redirects to articles and 2 disambiguation
    pages (plus Template:Disambiguation). About 6 s to start on a 2-core machine."""
    with seeded_wiki(tmp_path_factory.mktemp("mediawiki"), DATA / "articles.jsonl") as wiki:
        yield wiki
