"""Hybrid retrieval on embedded Qdrant (real), the bag-of-words embedder standing in for MiniLM:
the text weight's two ends, the fusion between them, and indexes built before the lexical side."""

import hashlib
import json

import pytest
from qdrant_client import QdrantClient, models

from freshrag.reporting.identity import retriever_model
from freshrag.retrieval.chunking import chunk_articles
from freshrag.retrieval.config import IndexConfig, RetrievalError
from freshrag.retrieval.index import open_index
from freshrag.retrieval.store import Request, connect
from tests.support.fakes import BagOfWordsEmbedder
from tests.support.rows import summaries
from tests.support.systems import CORPUS

QUERY = "which comet did the shepherds see at dawn"


def config(tmp_path, **overrides):
    return IndexConfig(directory=tmp_path / "index", chunk_size=300, chunk_overlap=20,
                       batch_size=4, **overrides)


def hits_at(tmp_path, weight, query=QUERY):
    index = open_index(CORPUS, config(tmp_path, text_weight=weight), BagOfWordsEmbedder(),
                       progress=False)
    try:
        return [(h.title, h.index, h.score) for h in index.retrieve(query)], index.record()
    finally:
        index.close()


def test_weight_0_is_the_dense_query_exactly(tmp_path):
    index = open_index(CORPUS, config(tmp_path), BagOfWordsEmbedder(), progress=False)
    try:
        hits = [(h.title, h.index, h.score) for h in index.retrieve(QUERY)]
        [vector] = index.embedder.embed([QUERY])
        [every] = index.client.search([Request(vector, index.chunks)])
        payloads = index.client.payloads([int(p.id) for p in every])
        record = index.record()
    finally:
        index.close()
    # Qdrant's own dense ranking of every chunk, equal scores (to six significant digits: the
    # repeated sentences give many) by point id, then the first five
    plain = sorted(every, key=lambda p: (-float(f"{p.score:.6g}"), int(p.id)))[:5]
    assert len({round(p.score, 6) for p in plain}) < len(plain)  # the query does hit ties
    assert [h[:2] for h in hits] == [(payloads[p.id]["title"], payloads[p.id]["chunk"])
                                     for p in plain]
    assert [h[2] for h in hits] == [pytest.approx(p.score, rel=1e-5) for p in plain]
    assert record["text_weight"] == 0 and "fusion_depth" not in record


def test_weight_1_ranks_by_bm25_and_needs_no_embedding(tmp_path):
    open_index(CORPUS, config(tmp_path), BagOfWordsEmbedder(), progress=False).close()
    embedder = BagOfWordsEmbedder()
    index = open_index(CORPUS, config(tmp_path, text_weight=1), embedder, progress=False)
    try:
        hits = index.retrieve("granite arches")
    finally:
        index.close()
    assert embedder.texts == 0  # lexical only: the query is not embedded
    assert {h.title for h in hits} == {"Velmora Bridge"}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].score > 1  # a BM25 score, not a cosine


def test_a_word_only_the_lexical_side_knows_is_found_when_it_weighs(tmp_path):
    # the bag-of-words embedder hashes 64 dimensions: "eleven" collides with other words there,
    # the lexical side matches it exactly
    dense, _ = hits_at(tmp_path, 0, "eleven stations")
    fused, record = hits_at(tmp_path, 0.5, "eleven stations")
    assert {t for t, _, _ in fused} == {"Ostrava Line"}
    assert record["text_weight"] == 0.5 and record["fusion_depth"] == 50
    assert all(0 <= score <= 1 for _, _, score in fused)  # fused scores are normalised
    assert dense != fused


def test_a_query_without_terms_retrieves_densely_or_nothing(tmp_path):
    fused, _ = hits_at(tmp_path, 0.5, "the of and?")
    lexical, _ = hits_at(tmp_path, 1, "the of and?")
    assert len(fused) == 5 and lexical == []


def old_collection_name(config: IndexConfig, embedder: str) -> str:
    """The name the index had before the lexical side (its key had no lexical scheme)."""
    digest = hashlib.sha256()
    for article in CORPUS.values():
        digest.update(json.dumps([article.title, article.content]).encode())
    digest.update(json.dumps([config.chunk_size, config.chunk_overlap, embedder]).encode())
    return "freshrag-" + digest.hexdigest()[:24]


def test_an_index_built_before_the_lexical_side_is_rebuilt_not_reopened(tmp_path):
    cfg = config(tmp_path, text_weight=0.5)
    client = connect(cfg)
    old = old_collection_name(cfg, BagOfWordsEmbedder.name)
    client.create_collection(old, vectors_config=models.VectorParams(
        size=64, distance=models.Distance.COSINE))
    client.upsert(old, points=[models.PointStruct(id=i, vector=[1.0] * 64, payload={})
                               for i in range(len(chunk_articles(CORPUS.values(), 300, 20)))])
    client.close()
    embedder = BagOfWordsEmbedder()
    index = open_index(CORPUS, cfg, embedder, progress=False)
    try:
        assert index.collection != old and embedder.texts == index.chunks
        assert index.retrieve(QUERY)[0].title == "Kettering Comet"
    finally:
        index.close()


def test_a_collection_without_the_lexical_side_is_refused_by_name(tmp_path):
    index = open_index(CORPUS, config(tmp_path), BagOfWordsEmbedder(), progress=False)
    name, total = index.collection, index.chunks
    index.close()
    client = QdrantClient(path=str(tmp_path / "index"))
    client.delete_collection(name)
    client.create_collection(name, vectors_config=models.VectorParams(
        size=64, distance=models.Distance.COSINE))
    client.upsert(name, points=[models.PointStruct(id=i, vector=[1.0] * 64, payload={})
                                for i in range(total)])
    client.close()
    with pytest.raises(RetrievalError, match=f"collection {name} in .* has no lexical"):
        open_index(CORPUS, config(tmp_path), BagOfWordsEmbedder(), progress=False)


@pytest.mark.parametrize("index, expected", [
    pytest.param({"embedding_model": "m"}, "m", id="before-the-lexical-side"),
    pytest.param({"embedding_model": "m", "text_weight": 0.0}, "m", id="dense"),
    pytest.param({"embedding_model": "m", "text_weight": 0.05}, "m (text weight 0.05)",
                 id="hybrid"),
    pytest.param({"embedding_model": "m", "text_weight": 1}, "m (text weight 1)", id="lexical"),
    pytest.param(None, None, id="no-index"),
])
def test_the_retriever_named_in_reports_carries_the_weight(index, expected):
    assert retriever_model(index) == expected


def test_a_run_at_a_text_weight_records_it_and_reports_it_apart(tmp_path, monkeypatch, capsys):
    """`freshrag run --text-weight` end to end on the fake server: the manifest records the
    weight, and a report of two runs at two weights shows two retrievers, never one row."""
    from freshrag.cli.main import main
    from freshrag.reporting import loading, summary_table
    from tests.support.datasets import bridges_and_mayor, write_dataset
    from tests.support.fake_openai_server import FakeOpenAIServer
    from tests.support.fakes import SECRET, use_endpoint

    q, a = write_dataset(tmp_path, n=3, content=bridges_and_mayor)
    with FakeOpenAIServer() as server:
        use_endpoint(monkeypatch, server.base_url, SECRET)
        for weight in ("0", "0.5"):
            assert main(["run", "--questions", str(q), "--articles", str(a), "--systems", "naive",
                         "--out", str(tmp_path / f"w{weight}"), "--no-probe",
                         "--index-dir", str(tmp_path / "index"), "--text-weight", weight]) == 0
    manifests = [json.loads((tmp_path / f"w{w}" / "manifest.json").read_text())
                 for w in ("0", "0.5")]
    assert [m["index"]["text_weight"] for m in manifests] == [0.0, 0.5]
    assert manifests[0]["index"]["collection"] == manifests[1]["index"]["collection"]  # one index
    rows = loading.load_runs([tmp_path / "w0", tmp_path / "w0.5"])
    assert [r["models"]["embeddings"] for r in summary_table.summarise(summaries(rows))] == [
        "fake-model", "fake-model (text weight 0.5)"]
    assert all(r["status"] == "ok" and r["retrievals"] == 1 for r in rows)
