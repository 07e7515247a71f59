"""The retrieval index on embedded Qdrant (real), with a bag-of-words embedder standing in for
MiniLM, and the embeddings role against the fake OpenAI-compatible server."""

import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing

import numpy
import pytest
import torch

from freshrag.core.config import load_settings
from freshrag.core.types import Article
from freshrag.llm.client import LLMClient
from freshrag.llm.local_server import free_port
from freshrag.retrieval.chunking import chunk_articles
from freshrag.retrieval.config import IndexConfig, RetrievalError
from freshrag.retrieval.embeddings import EndpointEmbedder, LocalMiniLM
from freshrag.retrieval.index import open_index
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import BagOfWordsEmbedder
from tests.support.killed import killed_once_stored
from tests.support.systems import CORPUS


def config(tmp_path, **overrides):
    return IndexConfig(directory=tmp_path / "index", batch_size=4, **overrides)


def test_chunks_carry_their_title_and_respect_the_size():
    chunks = chunk_articles(CORPUS.values(), size=300, overlap=20)
    assert {c.title for c in chunks} == set(CORPUS)
    for chunk in chunks:
        head, body = chunk.text.split("\n", 1)
        assert head == f"Title: {chunk.title}" and len(body) <= 300
    velmora = [c.index for c in chunks if c.title == "Velmora Bridge"]
    assert velmora == list(range(len(velmora))) and len(velmora) > 5


def test_retrieval_finds_the_article_the_query_is_about(tmp_path):
    index = open_index(CORPUS, config(tmp_path, chunk_size=300, chunk_overlap=20),
                       BagOfWordsEmbedder(), progress=False)
    try:
        hits = index.retrieve("which comet did the shepherds see at dawn")
    finally:
        index.close()
    assert len(hits) == 5 and hits[0].title == "Kettering Comet"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].text.startswith("Title: Kettering Comet\n")


def test_a_built_index_is_reused_and_a_different_key_builds_anew(tmp_path):
    first = BagOfWordsEmbedder()
    open_index(CORPUS, config(tmp_path), first, progress=False).close()
    again = BagOfWordsEmbedder()
    index = open_index(CORPUS, config(tmp_path, top_k=2), again, progress=False)
    assert again.texts == 0 and len(index.retrieve("railway stations")) == 2  # top_k not in the key
    index.close()
    smaller = BagOfWordsEmbedder()
    open_index(CORPUS, config(tmp_path, chunk_size=300), smaller, progress=False).close()
    assert smaller.texts > first.texts  # new chunker settings: a new collection


def test_an_interrupted_build_resumes_with_only_the_missing_chunks(tmp_path):
    total = len(chunk_articles(CORPUS.values(), 300, 20))
    with pytest.raises(KeyboardInterrupt):
        open_index(CORPUS, config(tmp_path, chunk_size=300, chunk_overlap=20),
                   BagOfWordsEmbedder(fail_after=2), progress=False)
    resumed = BagOfWordsEmbedder()
    index = open_index(CORPUS, config(tmp_path, chunk_size=300, chunk_overlap=20), resumed,
                       progress=False)
    assert resumed.texts == total - 2 * 4 and index.record()["chunks"] == total
    assert index.client.count() == total
    index.close()


def test_an_embedder_with_vectors_of_the_wrong_size_is_named(tmp_path):
    open_index(CORPUS, config(tmp_path), BagOfWordsEmbedder(dim=64), progress=False).close()
    index = open_index(CORPUS, config(tmp_path), BagOfWordsEmbedder(dim=64), progress=False)
    index.embedder = BagOfWordsEmbedder(dim=32)  # the same name, another size: a changed endpoint
    with pytest.raises(RetrievalError, match=r"bag-of-words test embedder have \[32\] dimensions; "
                                             r"the index needs 64"):
        index.retrieve("railway")
    index.close()


def test_an_embeddings_endpoint_is_used_through_the_embeddings_role(tmp_path):
    with FakeOpenAIServer(embedding_dim=48) as server:
        settings = load_settings(env={"FRESHRAG_EMBEDDINGS_BASE_URL": server.base_url,
                                      "FRESHRAG_EMBEDDINGS_MODEL": "text-embedding-3-small"})
        embedder = EndpointEmbedder(LLMClient(settings))
        index = open_index(CORPUS, config(tmp_path), embedder, progress=False)
        hits = index.retrieve("the railway through coal country")
        record = index.record()
        index.close()
    assert hits[0].title == "Ostrava Line"
    assert record["embedding_model"] == "text-embedding-3-small" and record["dimension"] == 48
    assert server.embedding_calls > 1


class CountedEndpoint(EndpointEmbedder):
    """The endpoint embedder, counting its calls at once."""

    def __init__(self, llm):
        super().__init__(llm)
        self.out = self.most = 0
        self.lock = threading.Lock()

    def embed(self, texts):
        with self.lock:
            self.out += 1
            self.most = max(self.most, self.out)
        try:
            return super().embed(texts)
        finally:
            with self.lock:
                self.out -= 1


@pytest.mark.parametrize("engine", ["local", "edge"])
@pytest.mark.parametrize("concurrency, at_once", [(0, 4), (1, 1), (3, 3)])
def test_an_endpoint_embeds_a_build_at_the_set_concurrency_into_the_same_index(
        tmp_path, engine, concurrency, at_once):
    from freshrag.retrieval.store import content_hash

    with FakeOpenAIServer(embedding_dim=48, embedding_delay=0.1) as server:
        settings = load_settings(env={"FRESHRAG_EMBEDDINGS_BASE_URL": server.base_url})
        hashes = []
        for where, in_flight in (("serial", 1), ("set", concurrency)):
            embedder = CountedEndpoint(LLMClient(settings))
            index = open_index(CORPUS, config(tmp_path / where, engine=engine, chunk_size=300,
                                              embed_concurrency=in_flight), embedder,
                               progress=False)
            hashes.append(content_hash(index.client.points()))
            index.close()
    assert embedder.most == at_once  # 0: four requests at once to an endpoint
    assert hashes[0] == hashes[1]


def test_an_endpoint_returning_the_wrong_size_is_named(tmp_path):
    with FakeOpenAIServer(embedding_dim=48) as server:
        settings = load_settings(env={"FRESHRAG_EMBEDDINGS_BASE_URL": server.base_url})
        index = open_index(CORPUS, config(tmp_path), EndpointEmbedder(LLMClient(settings)),
                           progress=False)
        server.embedding_dim = 12  # the endpoint now serves another model under the same name
        with pytest.raises(RetrievalError, match=f"embeddings endpoint {server.base_url}.*"
                                                 r"\[12\] dimensions; the index needs 48"):
            index.retrieve("railway")
        index.close()


def test_a_qdrant_server_that_is_down_is_named_by_its_url(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(RetrievalError, match=f"Qdrant server at {url} cannot be used"):
        open_index(CORPUS, config(tmp_path, qdrant_url=url), BagOfWordsEmbedder(),
                   progress=False)


def test_a_corpus_without_text_is_refused(tmp_path):
    with pytest.raises(RetrievalError, match="no text to index"):
        open_index({}, config(tmp_path), BagOfWordsEmbedder(), progress=False)


class MeetingEmbedder(BagOfWordsEmbedder):
    """Each embed waits (up to 5 s) until another thread is embedding too: only retrievals that
    can embed at the same time get through."""

    def __init__(self, parties):
        super().__init__()
        self.barrier = threading.Barrier(parties, timeout=5)

    def embed(self, texts):
        self.barrier.wait()
        return super().embed(texts)


def test_retrievals_embed_and_search_at_the_same_time(tmp_path):
    open_index(CORPUS, config(tmp_path), BagOfWordsEmbedder(), progress=False).close()
    index = open_index(CORPUS, config(tmp_path), MeetingEmbedder(parties=4), progress=False)
    queries = ["eleven stations", "comet at dawn", "granite arches", "coal country"]
    try:
        with ThreadPoolExecutor(4) as pool:
            hits = list(pool.map(index.retrieve, queries))  # a lock would break the barrier
    finally:
        index.close()
    assert [h[0].title for h in hits] == ["Ostrava Line", "Kettering Comet", "Velmora Bridge",
                                          "Ostrava Line"]


def test_concurrent_searches_of_embedded_qdrant_return_what_serial_ones_do(tmp_path):
    index = open_index(CORPUS, config(tmp_path, chunk_size=300, chunk_overlap=20),
                       BagOfWordsEmbedder(), progress=False)
    queries = [f"{word} {i}" for i in range(25)
               for word in ("railway", "comet shepherds", "bridge granite", "coal dawn")]
    try:
        serial = [index.retrieve(q) for q in queries]
        with ThreadPoolExecutor(8) as pool:
            concurrent = list(pool.map(index.retrieve, queries))
    finally:
        index.close()
    assert concurrent == serial


class OverlapModel:
    """Stands in for the SentenceTransformer: records how many tokenisations and how many
    forward passes ran at once; each text's vector is its length, so order can be checked."""

    def __init__(self):
        self.running = {"tokenise": 0, "forward": 0}
        self.most = {"tokenise": 0, "forward": 0}
        self.lock = threading.Lock()

    def _enter(self, what):
        with self.lock:
            self.running[what] += 1
            self.most[what] = max(self.most[what], self.running[what])
        time.sleep(0.02)
        with self.lock:
            self.running[what] -= 1

    max_seq_length = 256

    def tokenizer(self, texts, **options):  # a token a character
        self._enter("tokenise")
        return {"input_ids": [[ord(c) for c in text] for text in texts],
                "attention_mask": [[1] * len(text) for text in texts]}

    tokenizer.pad_token_id = 0

    def __call__(self, features):  # each text's vector from its unpadded length
        self._enter("forward")
        lengths = features["attention_mask"].sum(1, keepdim=True).float()
        return {"sentence_embedding": torch.cat([lengths, torch.ones_like(lengths),
                                                 torch.zeros(len(lengths), 2)], dim=1)}

    def get_embedding_dimension(self):
        return 4


def test_the_local_model_tokenises_one_call_at_a_time_and_runs_batches_side_by_side():
    # HF fast tokenizers raise "Already borrowed" when one tokenizer is used from two threads
    # (huggingface/tokenizers#537, sentence-transformers#794): the local model tokenises under
    # its lock and hands only the forward passes to its workers.
    model = LocalMiniLM(batch_size=2, workers=2)
    model._model = OverlapModel()
    texts = ["a", "bbb", "cc", "dddd", "e"]  # three batches of at most 2
    threads = torch.get_num_threads()
    with ThreadPoolExecutor(8) as pool:
        vectors = list(pool.map(model.embed, [texts] * 6))
    assert model._model.most == {"tokenise": 1, "forward": 2}
    expected = [[n / (n * n + 1) ** 0.5, 1 / (n * n + 1) ** 0.5, 0, 0] for n in map(len, texts)]
    for found in vectors:  # each text's own vector, in the order given
        numpy.testing.assert_allclose(found, expected, rtol=1e-6)
    numpy.testing.assert_allclose(model.embed(["query"]), [[5 / 26 ** 0.5, 1 / 26 ** 0.5, 0, 0]],
                                  rtol=1e-6)
    assert torch.get_num_threads() == threads  # one thread per worker only while they run
    assert model.embed([]) == []


class SameVectorEmbedder(BagOfWordsEmbedder):
    """Every text the same direction: every chunk ties with every other for any query."""

    name = "same-vector"

    def embed(self, texts):
        return [[1.0] + [0.0] * (self.dim - 1) for _ in texts]


def test_equal_scores_are_ranked_by_chunk_id_however_many_tie(tmp_path):
    articles = {f"Town {i}": Article(f"Town {i}", f"Town {i} lies on the river Aa.")
                for i in range(40)}
    index = open_index(articles, config(tmp_path), SameVectorEmbedder(), progress=False)
    try:
        first = index.retrieve("a town on the river")
        again = index.retrieve("another town")
    finally:
        index.close()
    # Qdrant alone returns equal scores in no order of ours (embedded: reversed ids); the index
    # keeps the lowest chunk ids, in id order, even when more than k + 8 tie.
    assert [h.title for h in first] == [f"Town {i}" for i in range(5)]
    assert again == first


def test_embedded_qdrant_stores_the_build_in_a_write_ahead_log(tmp_path):
    """A commit per point is a write, not a disk sync (bench_index.py, item 6): if qdrant-client
    is laid out otherwise one day, this fails rather than the build slowing four times unseen."""
    open_index(CORPUS, config(tmp_path), BagOfWordsEmbedder(), progress=False).close()
    [store] = (tmp_path / "index").rglob("storage.sqlite")
    with closing(sqlite3.connect(store)) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


KILLED_BUILD = """
import os, sys, time
from pathlib import Path
from freshrag.retrieval.config import IndexConfig
from freshrag.retrieval.index import open_index
from tests.support.fakes import BagOfWordsEmbedder
from tests.support.systems import CORPUS

class Marked(BagOfWordsEmbedder):
    def embed(self, texts):
        Path(sys.argv[2]).write_text(str(self.batches))  # batches before this one are stored
        if self.batches == 3:
            time.sleep(60)  # killed here
        return super().embed(texts)

open_index(CORPUS, IndexConfig(directory=Path(sys.argv[1]), batch_size=4, chunk_size=300,
                             chunk_overlap=20), Marked(), progress=False)
"""


def test_a_build_killed_outright_keeps_what_it_stored_and_resumes_with_the_rest(tmp_path):
    """SIGKILL, no clean-up: every batch stored before the kill is in the index when it is
    opened again (a commit not synced still survives the process), and only the rest is embedded."""
    killed_once_stored(KILLED_BUILD, tmp_path / "index", tmp_path / "stored", "3")
    total = len(chunk_articles(CORPUS.values(), 300, 20))
    resumed = BagOfWordsEmbedder()
    index = open_index(CORPUS, config(tmp_path, chunk_size=300, chunk_overlap=20), resumed,
                       progress=False)
    assert resumed.texts == total - 3 * 4  # the three stored batches were not embedded again
    assert index.client.count() == total
    index.close()


def test_a_store_that_cannot_change_its_journal_is_left_as_it_is(tmp_path):
    """SQLite refuses to change its journal inside a transaction: the build goes on, unsynced
    commits or not, rather than failing for a setting that only buys speed."""
    from qdrant_client import QdrantClient, models

    from freshrag.retrieval.store import commit_without_sync

    client = QdrantClient(path=str(tmp_path / "store"))
    client.create_collection("c", vectors_config=models.VectorParams(
        size=4, distance=models.Distance.COSINE))
    connection = client._client.collections["c"].storage.storage
    connection.execute("BEGIN")
    commit_without_sync(client, "c")
    connection.execute("ROLLBACK")
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    client.upsert("c", points=[models.PointStruct(id=1, vector=[1.0, 0, 0, 0])])
    assert client.count("c").count == 1
    client.close()
