"""The retrieval index the RAG systems share (section IV: naive RAG's database): a corpus's
chunks, opened or built, and the top-k search over them (docs/retrieval.md#the-index).

Every corpus article is chunked (chunking.py), embedded (embeddings.py), and stored in Qdrant
(store.py). Beside each chunk's dense vector its point holds a BM25 sparse vector (lexical.py),
so that a query can be dense (`text_weight` 0, the default), lexical (1), or a fusion of both
(docs/methods.md#hybrid-retrieval).

An index is keyed by (corpus hash, chunker settings, embedding model, lexical scheme) and lives
in the collection named after that key, so a later run on the same corpus opens it in seconds
instead of embedding again, and an interrupted build resumes where it stopped.

Scores are rounded to `SCORE_DIGITS` significant digits and ties broken by chunk id, so the same
query gets the same chunks in the same order every time: embedded Qdrant's float32 scores can
differ in the last bit between two searches of one index (numpy's summation order), and an
unstable order among equal scores changes the prompt, and with it the response-cache key.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from freshrag.core.titles import title_form
from freshrag.core.types import Article, RetrievedChunk
from freshrag.retrieval import lexical, store
from freshrag.retrieval.chunking import chunk_articles
from freshrag.retrieval.config import IndexConfig, RetrievalError
from freshrag.retrieval.embeddings import Embedder, embed_checked

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

SCORE_DIGITS = 6  # significant digits a score keeps: beyond them float32 noise, not ranking


def index_key(articles: Iterable[Article], config: IndexConfig, embedder_name: str) -> str:
    digest = hashlib.sha256()
    for article in articles:
        digest.update(json.dumps([article.title, article.content]).encode())
    digest.update(json.dumps([config.chunk_size, config.chunk_overlap, embedder_name,
                              lexical.SCHEME]).encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class Candidates:
    """One query's best chunks on each side, (point id, score) best first, and their payloads."""

    dense: list[lexical.Hit]
    lexical: list[lexical.Hit]
    payloads: dict[int, dict[str, Any]]

    def top(self, weight: float, k: int) -> list[RetrievedChunk]:
        return [_chunk(self.payloads[point], score)
                for point, score in lexical.fuse(self.dense, self.lexical, weight, k)]


def _rounded(score: float) -> float:
    return float(f"{score:.{SCORE_DIGITS}g}")


def _ranked(points: Iterable[Any]) -> list[lexical.Hit]:
    """(point id, rounded score), best first, equal scores by id."""
    hits = [(int(point.id), _rounded(point.score)) for point in points]
    return sorted(hits, key=lambda hit: (-hit[1], hit[0]))


def _chunk(payload: dict[str, Any], score: float) -> RetrievedChunk:
    # in NFC as gold titles are (core/titles.py), even from a collection another tool filled
    return RetrievedChunk(title_form(payload["title"]), payload["chunk"], payload["text"], score)


class VectorIndex:
    """Top-k chunk search over one collection; safe to share between threads, without a lock of
    its own, so that retrievals overlap (8 at once against a remote embeddings endpoint).

    Embedders lock what is not thread-safe themselves (the local model); the endpoint embedder
    shares one thread-safe openai client. A Qdrant server is reached over HTTP. Embedded Qdrant
    answers a query from numpy arrays and payload dicts held in memory (qdrant_client.local:
    no SQLite on the read path, whose connection is what fails across threads,
    qdrant/qdrant-client#367); the index only reads once it is built, so queries may run at
    once. tests/retrieval/test_index.py checks that concurrent queries equal serial ones.
    """

    def __init__(self, client: QdrantClient, collection: str, embedder: Embedder,
                 config: IndexConfig, chunks: int):
        self.client = client
        self.collection = collection
        self.embedder = embedder
        self.config = config
        self.chunks = chunks
        self.dimension = store.dimension(client, collection)

    def retrieve(self, query: str) -> list[RetrievedChunk]:
        """The top-k chunks at the configured text weight, best first. Their `score` is the
        cosine similarity (weight 0), the BM25 score (weight 1), or the fused score."""
        weight, k = self.config.text_weight, self.config.top_k
        if weight == 0:  # dense only: the query the index made before it had a lexical side
            [vector] = embed_checked(self.embedder, [query], self.dimension)
            return self._dense_top(vector, k)
        [found] = self.candidates([query], depth=max(lexical.DEPTH, k), dense=weight < 1)
        return found.top(weight, k)

    def candidates(self, queries: list[str], depth: int, dense: bool = True) -> list[Candidates]:
        """Per query, the best `depth` chunks of each side (dense ones only if `dense`), from
        which `Candidates.top` fuses any weight: one search per side however many weights."""
        from qdrant_client import models

        vectors = (embed_checked(self.embedder, queries, self.dimension) if dense
                   else [None] * len(queries))
        requests = []
        for query, vector in zip(queries, vectors):
            terms = lexical.query_vector(query)
            if vector is not None:
                requests.append(models.QueryRequest(query=vector, limit=depth, with_payload=True))
            requests.append(models.QueryRequest(
                query=models.SparseVector(indices=terms.indices, values=terms.values),
                using=store.LEXICAL, limit=depth, with_payload=True))
        answers = iter(self.client.query_batch_points(self.collection, requests=requests))
        found = []
        for vector in vectors:
            sides = [next(answers).points for _ in range(2 if vector is not None else 1)]
            payloads = {int(hit.id): hit.payload or {} for side in sides for hit in side}
            hits = [_ranked(side) for side in sides]
            found.append(Candidates(hits[0] if vector is not None else [], hits[-1], payloads))
        return found

    def _dense_top(self, vector: list[float], k: int) -> list[RetrievedChunk]:
        """The k nearest chunks in a stable order: more are fetched while the last one fetched
        ties with the k-th, so that which of equal chunks are kept depends on ids alone."""
        limit = k
        while True:
            limit = min(self.chunks, max(2 * limit, k + 8))
            points = self.client.query_points(self.collection, query=vector, limit=limit,
                                              with_payload=True).points
            ranked = _ranked(points)
            payloads = {int(point.id): point.payload or {} for point in points}
            if len(points) < limit or limit >= self.chunks or len(ranked) <= k \
                    or _rounded(points[-1].score) < ranked[k - 1][1]:
                return [_chunk(payloads[point], score) for point, score in ranked[:k]]

    def record(self) -> dict[str, Any]:
        where = self.config.qdrant_url or str(self.config.directory)
        return {"collection": self.collection, "chunks": self.chunks, "store": where,
                "embedding_model": self.embedder.name, "dimension": self.dimension,
                "chunk_size": self.config.chunk_size, "chunk_overlap": self.config.chunk_overlap,
                "top_k": self.config.top_k, "text_weight": self.config.text_weight,
                "lexical": lexical.SCHEME,
                **({"fusion_depth": max(lexical.DEPTH, self.config.top_k)}
                   if 0 < self.config.text_weight < 1 else {})}

    def close(self) -> None:
        self.client.close()


def open_index(articles: dict[str, Article], config: IndexConfig, embedder: Embedder,
               progress: bool = True) -> VectorIndex:
    """The index for this corpus, chunker and embedder: opened if built, else built (or finished)."""
    chunks = chunk_articles(articles.values(), config.chunk_size, config.chunk_overlap)
    if not chunks:
        raise RetrievalError("the corpus has no text to index")
    collection = "freshrag-" + index_key(articles.values(), config, embedder.name)[:24]
    client = store.connect(config)
    try:
        with store.reading(config):
            missing = store.missing_ids(client, collection, len(chunks))
            if len(missing) < len(chunks):
                store.check_lexical_side(client, collection, config)
        if missing:
            store.store_chunks(client, collection, chunks, missing, embedder, config, progress)
    except BaseException:
        client.close()
        raise
    return VectorIndex(client, collection, embedder, config, len(chunks))
