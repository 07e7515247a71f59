"""The retrieval index the RAG systems share (section IV: naive RAG's database): a corpus's
chunks, opened or built, and the top-k search over them (docs/retrieval.md#the-index).

Every corpus article is chunked (chunking.py), embedded (embeddings.py), and stored in Qdrant
(store.py). Beside each chunk's dense vector its point holds a BM25 sparse vector (lexical.py),
so that a query can be dense (`text_weight` 0, the default), lexical (1), or a fusion of both
(docs/methods.md#hybrid-retrieval).

An index is keyed by (corpus hash, chunker settings, embedding model, lexical scheme, and the
content hash of the background corpus it holds beside the articles, background.py) and lives
in the collection named after that key, so a later run on the same corpus opens it in seconds
instead of embedding again, and an interrupted build resumes where it stopped. Opening reads no
passage of a background corpus: the engine's index has its record, and a collection of a
server's or local mode's is counted against the chunks the articles and the corpus's manifest
give (docs/retrieval.md#on-a-server-or-in-local-mode).

Scores are rounded to `SCORE_DIGITS` significant digits and ties broken by chunk id, so the same
query gets the same chunks in the same order every time: embedded Qdrant's float32 scores can
differ in the last bit between two searches of one index (numpy's summation order), and an
unstable order among equal scores changes the prompt, and with it the response-cache key.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence

from freshrag.core.files import write_json
from freshrag.core.titles import title_form
from freshrag.core.types import Article, RetrievedChunk
from freshrag.retrieval import edge, lexical, store
from freshrag.retrieval.background import Background, open_background
from freshrag.retrieval.chunking import Chunk, chunk_articles
from freshrag.retrieval.config import EDGE_ABOVE, IndexConfig, RetrievalError
from freshrag.retrieval.embeddings import Embedder, embed_checked

SCORE_DIGITS = 6  # significant digits a score keeps: beyond them float32 noise, not ranking


def index_key(articles: Iterable[Article], config: IndexConfig, embedder_name: str,
              background: str | None = None) -> str:
    """The key of an index: its articles, chunker, embedder, lexical scheme, and the content
    hash of its background corpus if it has one."""
    digest = hashlib.sha256()
    for article in articles:
        digest.update(json.dumps([article.title, article.content]).encode())
    digest.update(json.dumps([config.chunk_size, config.chunk_overlap, embedder_name,
                              lexical.SCHEME]).encode())
    if background is not None:
        digest.update(json.dumps(["background", background]).encode())
    return digest.hexdigest()


class Collection(Protocol):
    """A collection in its store, as the index searches it: store.ClientCollection or
    edge.EdgeCollection. `where` names the store (a folder or a URL)."""

    where: str

    def dimension(self) -> int: ...

    def count(self) -> int: ...

    def search(self, requests: Sequence[store.Request]) -> list[list[Any]]: ...

    def payloads(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]: ...

    def points(self) -> Iterator[store.StoredPoint]: ...

    def record(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Candidates:
    """One query's best chunks on each side, (point id, score) best first, and the collection
    that holds their payloads: only the top k's are read (on the engine, a read from disk each)."""

    dense: list[lexical.Hit]
    lexical: list[lexical.Hit]
    collection: Collection

    def top(self, weight: float, k: int) -> list[RetrievedChunk]:
        return _chunks(self.collection, lexical.fuse(self.dense, self.lexical, weight, k))


def _chunks(collection: Collection, hits: list[lexical.Hit]) -> list[RetrievedChunk]:
    payloads = collection.payloads([point for point, _ in hits]) if hits else {}
    return [_chunk(payloads[point], score) for point, score in hits]


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

    `client` is the collection in its store: store.ClientCollection (qdrant-client's local mode
    or a server) or edge.EdgeCollection (the Qdrant engine in-process). Embedders lock what is
    not thread-safe themselves (the local model); the endpoint embedder shares one thread-safe
    openai client. A Qdrant server is reached over HTTP. Local mode answers a query from numpy
    arrays and payload dicts held in memory (qdrant_client.local: no SQLite on the read path,
    whose connection is what fails across threads, qdrant/qdrant-client#367); the engine
    in-process reads its shard from many threads. The index only reads once it is built, so
    queries may run at once. tests/retrieval/test_index.py checks that concurrent queries equal
    serial ones.
    """

    def __init__(self, client: Collection, collection: str, embedder: Embedder,
                 config: IndexConfig, chunks: int, corpus: dict[str, Any] | None = None):
        self.client = client
        self.corpus = corpus  # the background corpus's record (background.py), if any
        self.collection = collection
        self.embedder = embedder
        self.config = config
        self.chunks = chunks
        self.dimension = client.dimension()

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
        vectors = (embed_checked(self.embedder, queries, self.dimension) if dense
                   else [None] * len(queries))
        requests = []
        for query, vector in zip(queries, vectors):
            if vector is not None:
                requests.append(store.Request(vector, depth))
            requests.append(store.Request(lexical.query_vector(query), depth))
        answers = iter(self.client.search(requests))
        found = []
        for vector in vectors:
            hits = [_ranked(next(answers)) for _ in range(2 if vector is not None else 1)]
            found.append(Candidates(hits[0] if vector is not None else [], hits[-1],
                                    self.client))
        return found

    def _dense_top(self, vector: list[float], k: int) -> list[RetrievedChunk]:
        """The k nearest chunks in a stable order: more are fetched while the last one fetched
        ties with the k-th, so that which of equal chunks are kept depends on ids alone."""
        limit = k
        while True:
            limit = min(self.chunks, max(2 * limit, k + 8))
            [points] = self.client.search([store.Request(vector, limit)])
            ranked = _ranked(points)
            if len(points) < limit or limit >= self.chunks or len(ranked) <= k \
                    or _rounded(points[-1].score) < ranked[k - 1][1]:
                return _chunks(self.client, ranked[:k])

    def record(self) -> dict[str, Any]:
        return {"collection": self.collection, "chunks": self.chunks, "store": self.client.where,
                **self.client.record(),
                "embedding_model": self.embedder.name, "dimension": self.dimension,
                "chunk_size": self.config.chunk_size, "chunk_overlap": self.config.chunk_overlap,
                "top_k": self.config.top_k, "text_weight": self.config.text_weight,
                "lexical": lexical.SCHEME, "corpus": self.corpus,
                **({"fusion_depth": max(lexical.DEPTH, self.config.top_k)}
                   if 0 < self.config.text_weight < 1 else {})}

    def close(self) -> None:
        self.client.close()


def engine_of(articles: Iterable[Article], config: IndexConfig, passages: int = 0) -> str:
    """Where the index is kept: "server" with a URL, else the configured engine; "auto" takes
    the engine in-process past `EDGE_ABOVE` chunks, counted from the text without chunking it,
    with a background corpus's `passages` (docs/design.md#a-retrieval-world)."""
    if config.qdrant_url:
        return "server"
    if config.engine != "auto":
        return config.engine
    step = max(config.chunk_size - config.chunk_overlap, 1)
    chunks = sum(len(article.content) // step + 1 for article in articles)
    return "edge" if chunks + passages > EDGE_ABOVE else "local"


STORES = {"server": "qdrant-server", "local": "qdrant-local", "edge": edge.ENGINE}


def store_of(articles: Iterable[Article], config: IndexConfig, passages: int = 0) -> str:
    """The engine an index's record will name (`VectorIndex.record()["engine"]`), known before
    it is opened: a run's identity holds it, since HNSW past a segment is approximate and local
    mode's scan exact, so that a resume never mixes rows retrieved by both."""
    return STORES[engine_of(articles, config, passages)]


def to_embed(articles: dict[str, Article], config: IndexConfig,
             embedder_name: str) -> tuple[int, int] | None:
    """What building this index would embed, (chunks, UTF-8 bytes of their text), counted
    without chunking the corpus (its passages, the dataset's twins among them, and their size
    from the shards' metadata); None if it is built. Only the engine's record is read to know
    that: local mode and a server are counted as not built (opening them takes a lock, and
    local mode's load is slow)."""
    background = (open_background(config.corpus, articles.values(), config.chunk_size,
                                  config.chunk_overlap) if config.corpus else None)
    collection = "freshrag-" + index_key(articles.values(), config, embedder_name,
                                         background.sha256 if background else None)[:24]
    passages = background.passages if background else 0
    if engine_of(articles.values(), config, passages) == "edge":
        record = edge.read_record(config.directory, collection)
        if record and record.get("complete"):
            return None
    own = chunk_articles(articles.values(), config.chunk_size, config.chunk_overlap)
    return (len(own) + passages, sum(len(chunk.text.encode()) for chunk in own)
            + (background.text_bytes() if background else 0))


def open_index(articles: dict[str, Article], config: IndexConfig, embedder: Embedder,
               progress: bool = True) -> VectorIndex:
    """The index for this corpus, chunker and embedder, with the background corpus's passages if
    `config.corpus` names one: opened if built, else built (or finished)."""
    background = (open_background(config.corpus, articles.values(), config.chunk_size,
                                  config.chunk_overlap) if config.corpus else None)
    collection = "freshrag-" + index_key(articles.values(), config, embedder.name,
                                         background.sha256 if background else None)[:24]
    corpus = _skipped_once(background, config.directory, collection) if background else None

    def chunks() -> Iterator[Chunk]:
        yield from chunk_articles(articles.values(), config.chunk_size, config.chunk_overlap)
        if background:
            yield from background.chunks()

    if engine_of(articles.values(), config, background.passages if background else 0) == "edge":
        found = edge.open_built(config.directory, collection)  # read from the shard, not chunked
        if found is None:
            found = edge.build(config.directory, collection, chunks, embedder, config, progress)
        return VectorIndex(found, collection, embedder, config, found.stored["chunks"], corpus)
    # a server or local mode: the chunks there should be are counted from the articles' own
    # and the corpus's manifest, and the corpus is read only into a collection lacking some
    total = len(chunk_articles(articles.values(), config.chunk_size, config.chunk_overlap))
    if background and corpus:
        total += background.passages - corpus["skipped"]
    return _client_index(chunks, total, collection, config, embedder, progress, corpus)


def _skipped_once(background: Background, directory: Path, collection: str) -> dict[str, Any]:
    """The corpus's record, its count of left-out twins kept beside the index: the key fixes it,
    and counting reads every shard's titles (2 s a million passages)."""
    path = directory / "corpora" / f"{collection}.json"
    try:
        skipped = int(json.loads(path.read_text(encoding="utf-8"))["skipped"])
    except (OSError, ValueError, KeyError, TypeError):
        skipped = background.skipped()
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, {"corpus": background.sha256, "skipped": skipped})
    return background.record(skipped)


def _client_index(chunks: Callable[[], Iterable[Chunk]], total: int, collection: str,
                  config: IndexConfig, embedder: Embedder, progress: bool,
                  corpus: dict[str, Any] | None) -> VectorIndex:
    """The collection of qdrant-client's (a server, or local mode) holding the `total` chunks
    `chunks()` yields: opened if it holds them all, else finished with the ids it lacks."""
    if not total:
        raise RetrievalError("the corpus has no text to index")
    client = store.connect(config)
    try:
        with store.reading(config):
            missing = store.missing_ids(client, collection, total)
            if len(missing) < total:
                store.check_lexical_side(client, collection, config)
        if missing:
            store.store_chunks(client, collection, chunks, total, missing, embedder, config,
                               progress)
    except BaseException:
        client.close()
        raise
    return VectorIndex(store.ClientCollection(client, collection, config), collection, embedder,
                       config, total, corpus)
