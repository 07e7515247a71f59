"""Fixtures shared across the test folders. What they are built from (the fake server, scripted
replies, dump writers) is in tests/support/; a module that needs a server scripted its own way
declares its own `fake` on top of `fake_server`."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.support.builds import needs_reply, write_traffic_dump
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import SECRET, use_endpoint
from tests.support.links import PRECIOUS
from tests.support.ray_cluster import RayCluster
from tests.support.ray_cluster import ray_cluster as two_node_cluster


@pytest.fixture
def fake_server(monkeypatch) -> Iterator[Callable[..., FakeOpenAIServer]]:
    """Starts a fake OpenAI-compatible server (`fake_server(reply=..., batches=...)` takes
    FakeOpenAIServer's options) and points every role, embeddings too, at it with the key SECRET;
    the servers it started stop when the test ends."""
    with contextlib.ExitStack() as servers:
        def start(**options) -> FakeOpenAIServer:
            server = servers.enter_context(FakeOpenAIServer(**options))
            use_endpoint(monkeypatch, server.base_url, SECRET)
            return server
        yield start


@pytest.fixture
def fake(fake_server) -> FakeOpenAIServer:
    """The fake server with its default replies, every role pointed at it."""
    return fake_server()


@pytest.fixture
def needs_fake(fake_server, monkeypatch, tmp_path) -> FakeOpenAIServer:
    """The fake server scripted for needs (`needs_reply`), with `tmp_path` as the working
    directory: `freshrag needs` keeps its response cache in ./results."""
    monkeypatch.chdir(tmp_path)
    return fake_server(reply=needs_reply)


@pytest.fixture
def traffic_dump(tmp_path) -> Path:
    """A dump of fresh and old released articles for the traffic stage (`write_traffic_dump`)."""
    return write_traffic_dump(tmp_path)


@pytest.fixture
def target(tmp_path) -> Path:
    """A file outside every directory freshrag writes, holding PRECIOUS: the tests plant a
    symbolic link to it where freshrag writes, and check it is never written through."""
    path = tmp_path / "elsewhere" / "precious.txt"
    path.parent.mkdir()
    path.write_text(PRECIOUS, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    """A real two-node Ray cluster on this machine, this process joined to it; started once a
    session, by the first test that asks (tests/support/ray_cluster.py)."""
    with two_node_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def phoenix() -> Iterator[str]:
    """Arize Phoenix's base URL: a real OTLP receiver on loopback, started once a session by the
    first test that asks (tests/support/phoenix.py); a failure, never a skip, where the test
    extra that installs it is missing."""
    import importlib.util

    if importlib.util.find_spec("phoenix") is None:
        pytest.fail("arize-phoenix is not installed: run the tests with tests/run.sh, which "
                    "installs the test extra")
    from tests.support.phoenix import phoenix_server

    with phoenix_server() as base:
        yield base
