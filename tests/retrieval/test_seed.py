"""A Qdrant collection seeded from an index on the Qdrant engine in-process (retrieval/seed.py,
docs/retrieval.md#seeding-a-qdrant-server). No Qdrant server installs here: the seed is tested
through qdrant-client's API, the one it speaks to a server with, into the client's local mode on
disk, which is also the harness's `--engine local` store. The bag-of-words embedder stands in for
MiniLM."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from qdrant_client import QdrantClient, models

from freshrag.cli.main import main
from freshrag.core.types import Article
from freshrag.retrieval import store
from freshrag.retrieval.chunking import chunk_articles
from freshrag.retrieval.config import IndexConfig, RetrievalError
from freshrag.retrieval.index import open_index
from freshrag.retrieval.seed import seed
from tests.support.fakes import BagOfWordsEmbedder
from tests.support.systems import CORPUS

QUERIES = ["which comet did the shepherds see at dawn", "granite arches over the river",
           "eleven stations through coal country", "railway"]
TOTAL = len(chunk_articles(CORPUS.values(), 300, 20))


def config(directory: Path, engine: str) -> IndexConfig:
    return IndexConfig(directory=directory, engine=engine, batch_size=4, chunk_size=300,
                       chunk_overlap=20)


def built(directory: Path, articles: dict[str, Article] = CORPUS, **embedder) -> Path:
    """An index of the articles on the engine in `directory`; `embedder` as BagOfWordsEmbedder's."""
    open_index(articles, config(directory, "edge"), BagOfWordsEmbedder(**embedder),
               progress=False).close()
    return directory


def local(tmp_path: Path) -> IndexConfig:
    return IndexConfig(directory=tmp_path / "seeded")


def collection_name(directory: Path) -> str:
    [record] = (directory / "edge").glob("*.json")
    return record.stem


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_seeded_collection_opens_as_built_with_the_engines_points_and_hits(tmp_path):
    directory = built(tmp_path / "built")
    summary = seed(directory, None, local(tmp_path), batch_size=5, progress=False)
    assert summary == {"collection": collection_name(directory), "points": TOTAL,
                       "seeded": TOTAL, "present": 0, "dimension": 64,
                       "index": str(directory / "edge" / collection_name(directory)),
                       "store": str(tmp_path / "seeded")}
    embedder = BagOfWordsEmbedder()
    on_engine = open_index(CORPUS, config(directory, "edge"), BagOfWordsEmbedder(),
                           progress=False)
    seeded = open_index(CORPUS, config(tmp_path / "seeded", "local"), embedder, progress=False)
    try:
        assert embedder.texts == 0  # opened as built: nothing embedded
        assert seeded.record()["collection"] == on_engine.record()["collection"]
        assert store.content_hash(seeded.client.points()) == \
            store.content_hash(on_engine.client.points())
        for query in QUERIES:
            assert hits(seeded.retrieve(query)) == hits(on_engine.retrieve(query))  # dense
            [there], [here] = on_engine.candidates([query], 50), seeded.candidates([query], 50)
            for weight in (0.2, 0.5, 1):
                assert hits(here.top(weight, 5)) == hits(there.top(weight, 5))
    finally:
        on_engine.close()
        seeded.close()


def hits(chunks):
    return [(chunk.title, chunk.index, round(chunk.score, 4)) for chunk in chunks]


def test_an_interrupted_seed_resumes_with_only_the_missing_points(tmp_path, monkeypatch):
    directory = built(tmp_path / "built")
    sent: list[int] = []
    upsert = QdrantClient.upsert

    def killed_after_two(self, name, points, **options):
        if len(sent) == 2:
            raise KeyboardInterrupt("simulated kill mid-seed")
        sent.append(len(points))
        return upsert(self, name, points=points, **options)

    monkeypatch.setattr(QdrantClient, "upsert", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        seed(directory, None, local(tmp_path), batch_size=5, progress=False)
    assert sent == [5, 5]
    monkeypatch.setattr(QdrantClient, "upsert", lambda self, name, points, **options: (
        sent.append(len(points)), upsert(self, name, points=points, **options))[1])
    summary = seed(directory, None, local(tmp_path), batch_size=5, progress=False)
    assert (summary["seeded"], summary["present"]) == (TOTAL - 10, 10)
    assert sum(sent[2:]) == TOTAL - 10
    again = seed(directory, None, local(tmp_path), batch_size=5, progress=False)
    assert (again["seeded"], again["present"], len(sent)) == (0, TOTAL, len(sent))


def test_a_collection_with_scattered_holes_is_sent_exactly_those_points(tmp_path, monkeypatch):
    directory = built(tmp_path / "built")
    seed(directory, None, local(tmp_path), batch_size=5, progress=False)
    lacking = [0, 1, 2, 7, 13, 14, 15, 16, 17, 18, 19, 30, TOTAL - 2, TOTAL - 1]
    client = QdrantClient(path=str(tmp_path / "seeded"))
    client.delete(collection_name(directory), points_selector=models.PointIdsList(points=lacking))
    client.close()
    sent: list[int] = []
    upsert = QdrantClient.upsert
    monkeypatch.setattr(QdrantClient, "upsert", lambda self, name, points, **options: (
        sent.extend(int(p.id) for p in points), upsert(self, name, points=points, **options))[1])
    summary = seed(directory, None, local(tmp_path), batch_size=5, progress=False)
    assert sent == lacking and (summary["seeded"], summary["present"]) == (14, TOTAL - 14)
    on_engine = open_index(CORPUS, config(directory, "edge"), BagOfWordsEmbedder(),
                           progress=False)
    seeded = open_index(CORPUS, config(tmp_path / "seeded", "local"), BagOfWordsEmbedder(),
                        progress=False)
    try:
        assert store.content_hash(seeded.client.points()) == \
            store.content_hash(on_engine.client.points())
    finally:
        on_engine.close()
        seeded.close()


def refused(capsys, *argv) -> str:
    """`freshrag seed-server` with argv: exit 2 and one message, no traceback; the message."""
    assert main(["seed-server", *map(str, argv)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("freshrag: error: ") and "Traceback" not in err
    return " ".join(err.split())


@pytest.mark.parametrize("make, said", [
    pytest.param(lambda d: d, "no built index on the Qdrant engine in {d}", id="missing"),
    pytest.param(lambda d: d.mkdir() or d, "no built index on the Qdrant engine in {d}",
                 id="empty"),
    pytest.param(lambda d: (open_index(CORPUS, config(d, "local"), BagOfWordsEmbedder(),
                                       progress=False).close(), d)[1],
                 "no built index on the Qdrant engine in {d}", id="local-mode-index"),
])
def test_an_index_dir_without_a_built_shard_is_named(tmp_path, capsys, make, said):
    directory = make(tmp_path / "index")
    message = refused(capsys, "--index-dir", directory, "--qdrant-url", "http://127.0.0.1:9")
    assert said.format(d=directory) in message and "freshrag index --engine edge" in message


def test_an_unfinished_index_is_named_and_one_of_several_must_be_chosen(tmp_path, capsys):
    directory = tmp_path / "index"
    with pytest.raises(KeyboardInterrupt):
        built(directory, fail_after=2)
    unfinished = collection_name(directory)
    url = "http://127.0.0.1:9"
    assert f"(unfinished: {unfinished})" in refused(capsys, "--index-dir", directory,
                                                    "--qdrant-url", url)
    message = refused(capsys, "--index-dir", directory, "--collection", unfinished,
                      "--qdrant-url", url)
    assert f"the index at {directory / 'edge' / unfinished} is unfinished" in message
    built(directory)  # the build resumes and finishes
    built(directory, {**CORPUS, "Extra": Article("Extra", "More text.")})
    names = sorted(p.stem for p in (directory / "edge").glob("*.json"))
    assert f"{directory} holds 2 indexes on the Qdrant engine; give --collection, one of: " \
           f"{', '.join(names)}" in refused(capsys, "--index-dir", directory, "--qdrant-url", url)
    assert f"no index named freshrag-none on the Qdrant engine in {directory}" in refused(
        capsys, "--index-dir", directory, "--collection", "freshrag-none", "--qdrant-url", url)
    assert "--collection '../edge/x' is not a collection's name" in refused(
        capsys, "--index-dir", directory, "--collection", "../edge/x", "--qdrant-url", url)


def test_an_unreachable_server_fails_within_seconds_naming_it(tmp_path, capsys):
    directory = built(tmp_path / "built")
    url = f"http://127.0.0.1:{closed_port()}"
    started = time.monotonic()
    message = refused(capsys, "--index-dir", directory, "--qdrant-url", url)
    assert time.monotonic() - started < 10
    assert f"Qdrant server at {url} cannot be used" in message


def dense(size=64, distance=models.Distance.COSINE):
    return models.VectorParams(size=size, distance=distance)


IDF = {store.LEXICAL: models.SparseVectorParams(modifier=models.Modifier.IDF)}


@pytest.mark.parametrize("vectors, sparse, said", [
    pytest.param(dense(32), IDF, "its dense vectors have 32 dimensions, the index's 64",
                 id="size"),
    pytest.param(dense(distance=models.Distance.DOT), IDF, "its distance is Dot, not Cosine",
                 id="distance"),
    pytest.param({"text": dense()}, IDF, "its dense vectors are named", id="named"),
    pytest.param(dense(), None, f"it has no {store.LEXICAL} sparse vector", id="no-sparse"),
    pytest.param(dense(), {store.LEXICAL: models.SparseVectorParams()},
                 f"its {store.LEXICAL} sparse vector has no IDF modifier", id="no-idf"),
])
def test_a_collection_of_another_layout_is_refused_before_writing(tmp_path, vectors, sparse,
                                                                   said):
    directory = built(tmp_path / "built")
    name = collection_name(directory)
    client = QdrantClient(path=str(tmp_path / "seeded"))
    client.create_collection(name, vectors_config=vectors, sparse_vectors_config=sparse)
    client.close()
    with pytest.raises(RetrievalError) as refusal:
        seed(directory, None, local(tmp_path), progress=False)
    assert str(refusal.value).startswith(f"collection {name} at {tmp_path / 'seeded'} exists "
                                         f"and is not this index's: ")
    assert said in str(refusal.value)
    client = QdrantClient(path=str(tmp_path / "seeded"))
    try:
        assert client.count(name).count == 0
    finally:
        client.close()


def test_a_collection_holding_more_points_than_the_index_is_refused(tmp_path):
    directory = built(tmp_path / "built")
    name = collection_name(directory)
    client = QdrantClient(path=str(tmp_path / "seeded"))
    store.create_collection(client, name, 64)
    client.upsert(name, [store.point_struct(store.StoredPoint(i, [1.0] * 64, None, {}))
                         for i in range(TOTAL + 1)])
    client.close()
    with pytest.raises(RetrievalError, match=f"it holds {TOTAL + 1:,} points, the index "
                                             f"{TOTAL:,}; delete it there"):
        seed(directory, None, local(tmp_path), progress=False)


def test_the_command_seeds_the_server_it_is_given_and_prints_what_it_did(tmp_path, capsys,
                                                                         monkeypatch):
    """The command's wiring, its server stood in for by local mode: the client it connects to
    is asked for the URL given."""
    directory = built(tmp_path / "built")
    asked = []

    def connect(config):
        asked.append(config.qdrant_url)
        return QdrantClient(path=str(tmp_path / "seeded"))

    monkeypatch.setattr(store, "connect", connect)
    assert main(["seed-server", "--index-dir", str(directory), "--qdrant-url",
                 "http://qdrant:6333", "--batch-size", "7"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert asked == ["http://qdrant:6333"]
    assert printed["store"] == "http://qdrant:6333" and printed["seeded"] == TOTAL
    assert printed["collection"] == collection_name(directory)
