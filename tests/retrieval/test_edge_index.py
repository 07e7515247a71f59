"""The retrieval index on the Qdrant engine in-process (qdrant-edge-py, real), small collections,
with the bag-of-words embedder standing in for MiniLM (docs/retrieval.md#a-retrieval-world)."""

from __future__ import annotations

import errno
import fcntl
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from freshrag.core.types import Article
from freshrag.retrieval import edge
from freshrag.retrieval import index as index_module
from freshrag.retrieval.chunking import chunk_articles
from freshrag.retrieval.config import IndexConfig, RetrievalError
from freshrag.retrieval.index import engine_of, index_key, open_index
from freshrag.retrieval.store import content_hash
from tests.support.fakes import BagOfWordsEmbedder
from tests.support.killed import killed_once_stored
from tests.support.systems import CORPUS

QUERIES = ["which comet did the shepherds see at dawn", "granite arches over the river",
           "eleven stations through coal country", "railway"]


def config(tmp_path, engine="edge", **overrides):
    return IndexConfig(directory=tmp_path / engine, engine=engine, batch_size=4, chunk_size=300,
                       chunk_overlap=20, **overrides)


def build(tmp_path, engine="edge", embedder=None, **overrides):
    return open_index(CORPUS, config(tmp_path, engine, **overrides),
                      embedder or BagOfWordsEmbedder(), progress=False)


def record_file(tmp_path):
    [found] = (tmp_path / "edge" / "edge").glob("freshrag-*.json")
    return found


def test_an_index_is_built_searched_and_recorded_on_the_engine(tmp_path):
    index = build(tmp_path)
    try:
        hits = index.retrieve(QUERIES[0])
        record = index.record()
        stored = [point.payload for point in index.client.points()]
    finally:
        index.close()
    assert hits[0].title == "Kettering Comet" and len(hits) == 5
    total = len(chunk_articles(CORPUS.values(), 300, 20))
    assert record["engine"] == "qdrant-edge" and record["format"] == edge.FORMAT
    assert record["engine_version"] == edge.engine_version() and record["chunks"] == total
    assert record["store"] == str(tmp_path / "edge" / "edge" / record["collection"])
    # the payload keys of the server's collections, so a shard built here can seed one
    assert len(stored) == total and all(set(p) == {"title", "chunk", "text"} for p in stored)


def test_the_shard_is_laid_out_as_a_server_collection(tmp_path):
    build(tmp_path).close()
    shard = record_file(tmp_path).with_suffix("")
    layout = json.loads((shard / "edge_config.json").read_text())
    assert layout["vectors"][""]["distance"] == "Cosine" and layout["vectors"][""]["size"] == 64
    assert layout["sparse_vectors"] == {"bm25": {"memory": "cold", "modifier": "idf"}}
    assert "scalar" in layout["quantization_config"] and "hnsw_config" in layout


def test_a_built_index_is_reopened_without_chunking_or_embedding(tmp_path, monkeypatch):
    build(tmp_path).close()

    def no_chunking(*args, **kwargs):
        raise AssertionError("the articles were chunked again")

    monkeypatch.setattr(index_module, "chunk_articles", no_chunking)
    again = BagOfWordsEmbedder()
    index = build(tmp_path, embedder=again)
    try:
        assert index.retrieve(QUERIES[0])[0].title == "Kettering Comet"
    finally:
        index.close()
    assert again.texts == 1  # the query alone


@pytest.mark.parametrize("weight", [0, 0.2, 0.5, 1])
def test_dense_and_hybrid_hits_agree_with_local_mode(tmp_path, weight):
    found = {}
    for engine in ("local", "edge"):
        index = build(tmp_path, engine, text_weight=weight)
        try:
            found[engine] = [[(h.title, h.index, h.score) for h in index.retrieve(query)]
                             for query in QUERIES]
        finally:
            index.close()
    for local, on_engine in zip(found["local"], found["edge"]):
        assert [h[:2] for h in on_engine] == [h[:2] for h in local]
        assert [h[2] for h in on_engine] == [pytest.approx(h[2], rel=1e-5) for h in local]


def test_an_interrupted_build_resumes_with_only_the_missing_chunks(tmp_path):
    total = len(chunk_articles(CORPUS.values(), 300, 20))
    with pytest.raises(KeyboardInterrupt):
        build(tmp_path, embedder=BagOfWordsEmbedder(fail_after=2))
    assert json.loads(record_file(tmp_path).read_text())["complete"] is False
    resumed = BagOfWordsEmbedder()
    index = build(tmp_path, embedder=resumed)
    try:
        assert resumed.texts == total - 2 * 4  # two batches of 4 were stored
        assert index.client.count() == total and index.record()["chunks"] == total
    finally:
        index.close()
    assert json.loads(record_file(tmp_path).read_text())["complete"] is True


def test_two_builds_of_the_same_input_have_one_content_hash(tmp_path):
    hashes = []
    for name in ("one", "two", "other"):
        articles = CORPUS if name != "other" else {**CORPUS, "Extra": Article("Extra", "More.")}
        index = open_index(articles, config(tmp_path / name), BagOfWordsEmbedder(),
                           progress=False)
        try:
            hashes.append(content_hash(index.client.points()))
        finally:
            index.close()
    assert hashes[0] == hashes[1] != hashes[2]
    local = build(tmp_path, "local")
    try:  # local mode holds the same points: the layout is one
        assert content_hash(local.client.points()) == hashes[0]
    finally:
        local.close()


def test_a_weight_kept_in_float64_hashes_as_its_float32_copy_on_the_engine():
    """Local mode keeps the BM25 weight it was given, the engine its float32: 1.2601149786 and
    1.2601150274 round to two sides of the fifth decimal unless both are read as float32."""
    from freshrag.retrieval.lexical import SparseTerms
    from freshrag.retrieval.store import StoredPoint

    def point(weight):
        return StoredPoint(0, [0.6, 0.8], SparseTerms([7], [weight]), {"text": "t"})

    kept = 1.2601149786226724
    assert content_hash(iter([point(kept)])) == content_hash(iter([point(1.2601150274276733)]))
    assert content_hash(iter([point(kept)])) != content_hash(iter([point(1.2601)]))


@pytest.mark.parametrize("change, named", [
    pytest.param({"format": 99}, "in format 99", id="format"),
    pytest.param({"engine": "qdrant-local"}, "qdrant-local 0.9", id="engine"),
    pytest.param({"engine_version": "0.99.0"}, "qdrant-edge 0.99.0", id="engine-version"),
])
def test_an_index_of_another_engine_or_format_is_refused_naming_it(tmp_path, change, named):
    build(tmp_path).close()
    path = record_file(tmp_path)
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    shard = str(path.with_suffix(""))
    with pytest.raises(RetrievalError, match=f"{shard} was written by .*{named}"):
        build(tmp_path)


def test_a_missing_or_damaged_shard_is_refused_naming_it(tmp_path):
    build(tmp_path).close()
    shard = record_file(tmp_path).with_suffix("")
    (shard / "edge_config.json").write_text("garbage")
    with pytest.raises(RetrievalError, match=f"the index at {shard} cannot be used .*damaged"):
        build(tmp_path)
    import shutil

    shutil.rmtree(shard)
    with pytest.raises(RetrievalError, match=f"the index at {shard} is missing"):
        build(tmp_path)
    record_file(tmp_path).write_text("{cut")
    with pytest.raises(RetrievalError, match=f"record {record_file(tmp_path)} cannot be read"):
        build(tmp_path)


def test_a_build_under_way_elsewhere_is_named(tmp_path):
    collection = "freshrag-" + index_key(CORPUS.values(), config(tmp_path), "bag-of-words")[:24]
    shard = edge.shard_path(tmp_path / "edge", collection)
    shard.parent.mkdir(parents=True)
    with open(shard.parent / f"{collection}.lock", "a") as lock:  # another process's build
        fcntl.flock(lock, fcntl.LOCK_EX)
        with pytest.raises(RetrievalError, match=f"{shard} is being built by another process"):
            build(tmp_path)
    build(tmp_path).close()


@pytest.mark.parametrize("error", [
    pytest.param(OSError(errno.ENOSPC, "No space left on device"), id="os"),
    pytest.param(Exception("Service runtime error: No space left on device (os error 28)"),
                 id="engine"),
])
def test_a_full_disk_ends_in_one_message_naming_the_index(tmp_path, error):
    with pytest.raises(RetrievalError, match=f"index at {tmp_path} .*free space.*resumes"):
        with edge.engine_errors(tmp_path):
            raise error


def test_the_engine_is_chosen_by_setting_size_or_url(tmp_path, monkeypatch):
    assert engine_of(CORPUS.values(), config(tmp_path, "auto")) == "local"
    assert engine_of(CORPUS.values(), config(tmp_path, "local")) == "local"
    assert engine_of(CORPUS.values(), config(tmp_path, "auto", qdrant_url="http://q:6333")) \
        == "server"
    monkeypatch.setattr(index_module, "EDGE_ABOVE", 20)  # the corpus is about 33 chunks
    assert engine_of(CORPUS.values(), config(tmp_path, "auto")) == "edge"
    assert engine_of(CORPUS.values(), replace(config(tmp_path, "auto"), chunk_size=2000)) == "local"


def test_concurrent_searches_return_what_serial_ones_do(tmp_path):
    index = build(tmp_path, text_weight=0.5)
    queries = [f"{query} {i}" for i in range(20) for query in QUERIES]
    try:
        serial = [index.retrieve(q) for q in queries]
        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(index.retrieve, queries)) == serial
    finally:
        index.close()


def test_an_engine_not_installed_is_named_with_the_extra_to_install(tmp_path, monkeypatch):
    def absent(name):
        raise edge.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(edge.metadata, "version", absent)
    with pytest.raises(RetrievalError, match=r"not installed: pip install 'freshrag\[world\]', "
                                             r"or give --engine local"):
        build(tmp_path)


KILLED_BUILD = """
import sys, time
from pathlib import Path
from freshrag.retrieval.config import IndexConfig
from freshrag.retrieval.index import open_index
from tests.support.fakes import BagOfWordsEmbedder
from tests.support.systems import CORPUS

class Marked(BagOfWordsEmbedder):
    def embed(self, texts):
        Path(sys.argv[2]).write_text(str(self.batches))  # batches before this one are stored
        if self.batches == 16:  # the first window of 16 batches is flushed: killed here
            time.sleep(60)
        return super().embed(texts)

open_index(CORPUS, IndexConfig(directory=Path(sys.argv[1]), engine="edge", batch_size=2,
                             chunk_size=300, chunk_overlap=20), Marked(), progress=False)
"""


def test_a_build_killed_outright_keeps_its_flushed_windows_and_resumes(tmp_path):
    """SIGKILL, no clean-up: the shard opens again with every window flushed before the kill,
    and only the rest is embedded."""
    killed_once_stored(KILLED_BUILD, tmp_path / "edge", tmp_path / "stored", "16")
    total = len(chunk_articles(CORPUS.values(), 300, 20))
    resumed = BagOfWordsEmbedder()
    index = open_index(CORPUS, replace(config(tmp_path), batch_size=2), resumed, progress=False)
    try:
        assert resumed.texts == total - 16 * 2 and index.client.count() == total
        assert index.retrieve(QUERIES[0])[0].title == "Kettering Comet"
    finally:
        index.close()
