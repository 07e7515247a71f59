"""The index built on a real two-node Ray cluster on this machine (tests/support/ray_cluster.py,
retrieval/batches.py): the example set's chunks and a background corpus's passages embedded by
actors and written by the driver give the local build's content hash; an actor killed mid-build,
or a whole node lost, loses no batch; a batch lost twice ends the build, which then embeds only
what is missing; scan-retrieval's index built there scans as the local one; an address that does
not answer fails at once, naming it. The bag-of-words embedder stands in for MiniLM, which one
test uses as it is."""

from __future__ import annotations

import collections
import hashlib
import json
import os
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from freshrag.cli.main import main
from freshrag.core.dataset import example_dir, load_dataset_dir
from freshrag.executors.choice import Executor, ExecutorError
from freshrag.retrieval.config import IndexConfig
from freshrag.retrieval.index import open_index
from freshrag.retrieval.store import content_hash
from tests.support.fakes import BagOfWordsEmbedder
from tests.support.world import make_world

EXAMPLE = load_dataset_dir(example_dir())
RAY = Executor("ray")  # the cluster this process joined (the fixture's)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return make_world(tmp_path_factory.mktemp("world") / "wiki-small",
                      list(EXAMPLE.articles.values()), 60, processes=1, pages_per_shard=25)


def config(where: Path, engine: str = "edge", **overrides) -> IndexConfig:
    return IndexConfig(**{"directory": where, "engine": engine, "batch_size": 16, **overrides})


def built_hash(settings: IndexConfig, embedder=None) -> str:
    index = open_index(EXAMPLE.articles, settings, embedder or BagOfWordsEmbedder(),
                       progress=False)
    try:
        return content_hash(index.client.points())
    finally:
        index.close()


class DyingEmbedder(BagOfWordsEmbedder):
    """On a Ray actor: its process ends (`os._exit`) on a batch holding `poison`, once (a
    marker file says it happened) or every time (`marker` None)."""

    def __init__(self, poison: str, marker: Path | None):
        super().__init__()
        self.poison = poison
        self.marker = marker

    def embed(self, texts):
        if any(self.poison in text for text in texts):
            if self.marker is None:
                os._exit(1)
            if not self.marker.exists():
                self.marker.write_text(str(os.getpid()))
                os._exit(1)
        return super().embed(texts)


class MarkingEmbedder(BagOfWordsEmbedder):
    """On a Ray actor: each batch noted as it starts, by a file in `marks` naming the batch and
    the node that embeds it, then embedded after 0.05 s, or after 5 s on a node not in `quick`
    (so that a node lost once its actor begins loses a batch in flight)."""

    def __init__(self, marks: Path, quick: set[str]):
        super().__init__()
        self.marks = marks
        self.quick = quick

    def embed(self, texts):
        import ray

        batch = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:12]
        node = ray.get_runtime_context().get_node_id()
        (self.marks / f"{batch}.{node}.{uuid.uuid4().hex[:8]}").touch()
        time.sleep(0.05 if node in self.quick else 5)
        return super().embed(texts)


@pytest.mark.parametrize("engine", ["edge", "local"])
def test_the_index_built_on_ray_has_the_local_builds_content_hash(tmp_path, ray_cluster, world,
                                                                  engine):
    local = built_hash(config(tmp_path / "here", engine, corpus=world))
    driver = BagOfWordsEmbedder()  # the actors embed copies: this one is never called
    on_ray = built_hash(config(tmp_path / "ray", engine, corpus=world, executor=RAY), driver)
    assert on_ray == local and driver.texts == 0


def test_an_actor_killed_mid_build_loses_no_batch(tmp_path, ray_cluster, world):
    marker = tmp_path / "killed"
    local = built_hash(config(tmp_path / "here", corpus=world))
    dying = DyingEmbedder(next(iter(EXAMPLE.articles)), marker)
    assert built_hash(config(tmp_path / "ray", corpus=world, executor=RAY), dying) == local
    assert marker.exists()  # an actor did die, and its batch was embedded by the other


def test_a_node_lost_mid_build_loses_no_batch(tmp_path, ray_cluster, world):
    marks = tmp_path / "marks"
    marks.mkdir()
    ray = ray_cluster.ray
    first = {node["NodeID"] for node in ray.nodes() if node["Alive"]}

    def embedded() -> list[list[str]]:  # [batch, node, unique] a batch started
        return [mark.name.split(".") for mark in marks.iterdir()]

    local = built_hash(config(tmp_path / "here", corpus=world, batch_size=4))
    on_ray = ray_cluster.lose_a_node(  # one actor a node: lost once the added one's embeds
        lambda: built_hash(config(tmp_path / "ray", corpus=world, executor=RAY, batch_size=4),
                           MarkingEmbedder(marks, first)),
        lambda: any(node not in first for _, node, _ in embedded()))
    assert on_ray == local
    lost = {node["NodeID"] for node in ray.nodes() if not node["Alive"]} - first
    assert {node for _, node, _ in embedded()} & lost
    times = collections.Counter(batch for batch, _, _ in embedded())
    assert max(times.values()) == 2  # the batch it held, embedded again once


def test_a_batch_lost_twice_ends_the_build_which_resumes_with_what_is_missing(tmp_path,
                                                                              ray_cluster, world):
    where = tmp_path / "ray"
    poison = list(EXAMPLE.articles)[-1]  # in the last window of the example's chunks
    with pytest.raises(ExecutorError, match=r"the batch of chunks \d+\.\.\d+: lost twice"):
        built_hash(config(where, corpus=world, executor=RAY, batch_size=4),
                   DyingEmbedder(poison, None))
    record = json.loads(next((where / "edge").glob("freshrag-*.json")).read_text())
    resumed = BagOfWordsEmbedder()
    assert built_hash(config(where, corpus=world, batch_size=4), resumed) \
        == built_hash(config(tmp_path / "here", corpus=world, batch_size=4))
    assert 0 < resumed.texts < record["chunks"]  # what was stored before the loss was kept


def test_the_index_command_builds_on_the_cluster(tmp_path, ray_cluster, capsys):
    """With the local MiniLM, the default embedder: one model loaded by each actor."""
    common = ["index", "--articles", str(example_dir() / "articles.jsonl"), "--engine", "edge",
              "--index-dir"]
    assert main([*common, str(tmp_path / "ray"), "--executor", "ray", "--address",
                 ray_cluster.address, "--embed-concurrency", "3"]) == 0
    assert main([*common, str(tmp_path / "here")]) == 0
    settings = config(Path(), "edge")
    ray_built, here_built = (open_index(EXAMPLE.articles, replace(settings, directory=tmp_path / d),
                                        _local_model(), progress=False) for d in ("ray", "here"))
    try:
        assert content_hash(ray_built.client.points()) == content_hash(here_built.client.points())
    finally:
        ray_built.close()
        here_built.close()


def test_scan_retrieval_builds_its_index_on_the_cluster(tmp_path, ray_cluster, monkeypatch,
                                                        capsys):
    """The scan of an index built by the cluster's actors is the local build's, row for row;
    the command's own embedder embeds only the questions there."""
    drivers: list[BagOfWordsEmbedder] = []

    def embedder_for(llm):
        drivers.append(BagOfWordsEmbedder())
        return drivers[-1]

    monkeypatch.setattr("freshrag.retrieval.embeddings.embedder_for", embedder_for)
    scans = {}
    for where, executor in (("ray", ["--executor", "ray", "--address", ray_cluster.address]),
                            ("here", [])):
        assert main(["scan-retrieval", "--limit", "10", "--engine", "edge", "--index-dir",
                     str(tmp_path / where), "--out", str(tmp_path / f"scan-{where}"),
                     *executor]) == 0
        scans[where] = json.loads((tmp_path / f"scan-{where}" / "scan-retrieval.json").read_text())
    assert scans["ray"]["rows"] == scans["here"]["rows"]
    assert drivers[0].texts == 10 < scans["here"]["index"]["chunks"] <= drivers[1].texts - 10
    openers = [BagOfWordsEmbedder(), BagOfWordsEmbedder()]  # the two indexes opened as built
    assert built_hash(config(tmp_path / "ray"), openers[0]) == \
        built_hash(config(tmp_path / "here"), openers[1])
    assert [opener.texts for opener in openers] == [0, 0]


def test_an_address_that_does_not_answer_fails_at_once_naming_it(tmp_path, capsys):
    started = time.monotonic()
    assert main(["index", "--articles", str(example_dir() / "articles.jsonl"), "--index-dir",
                 str(tmp_path), "--executor", "ray", "--address", "127.0.0.1:9"]) != 0
    assert "Ray cluster at 127.0.0.1:9 cannot be reached" in capsys.readouterr().err
    assert time.monotonic() - started < 15
    assert not any(tmp_path.iterdir())  # refused before anything was chunked or written


def _local_model():
    from freshrag.retrieval.embeddings import LocalMiniLM

    return LocalMiniLM()
