"""The retrieval index the RAG systems share (section IV: naive RAG's database).

Every corpus article is split with `RecursiveCharacterTextSplitter` (1,024 characters, overlap 48,
as in the paper), its title prepended to every chunk, embedded, and stored in Qdrant with cosine
distance: embedded Qdrant on disk by default, a Qdrant server when a URL is given. Beside each
chunk's dense vector its point holds a BM25 sparse vector (harness/retrieval/lexical.py), so that a
query can be dense (`text_weight` 0, the default), lexical (1), or a fusion of both
(docs/methods.md#hybrid-retrieval).

An index is keyed by (corpus hash, chunker settings, embedding model, lexical scheme) and lives
in the collection named after that key, so a later run on the same corpus opens it in seconds
instead of embedding again. Chunk ids are their position in the chunk list, which the key fixes:
a build that was interrupted resumes by embedding only the chunks its collection lacks.

Scores are rounded to `SCORE_DIGITS` significant digits and ties broken by chunk id, so the same
query gets the same chunks in the same order every time: embedded Qdrant's float32 scores can
differ in the last bit between two searches of one index (numpy's summation order), and an
unstable order among equal scores changes the prompt, and with it the response-cache key.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import pickle
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Protocol

from freshrag.core.errors import UserError
from freshrag.core.types import Article, RetrievedChunk
from freshrag.retrieval import lexical

# qdrant-client, the text splitter and tqdm are imported where they are used: together they take
# over a second to import, and every command's --help imports this module (for IndexConfig).
if TYPE_CHECKING:
    from qdrant_client import QdrantClient, models

DEFAULT_DIRECTORY = Path("results") / ".index"
LEXICAL = "bm25"  # the sparse vector's name; the dense one is the collection's unnamed vector
SCORE_DIGITS = 6  # significant digits a score keeps: beyond them float32 noise, not ranking


class RetrievalError(UserError, RuntimeError):
    """A corpus, embedder or Qdrant store the index cannot use; the message names which."""


class Embedder(Protocol):
    """Turns texts into vectors. `name` identifies the model in the index key; `where` names the
    model or endpoint in error messages."""

    name: str
    where: str

    def embed(self, texts: list[str]) -> list[list[float]]: ...


@dataclass(frozen=True)
class IndexConfig:
    directory: Path = DEFAULT_DIRECTORY  # embedded Qdrant's storage, when no URL is given
    qdrant_url: str | None = None
    chunk_size: int = 1024
    chunk_overlap: int = 48
    top_k: int = 5
    text_weight: float = 0.0  # 0 dense only, 1 lexical only, between: fused (harness/retrieval/lexical.py)
    batch_size: int = 256  # chunks embedded and upserted per step


@dataclass(frozen=True)
class Chunk:
    title: str
    index: int  # position within its article
    text: str   # "Title: ...\n" + the article's text piece, as the released runs hold them


def chunk_articles(articles: Iterable[Article], size: int, overlap: int) -> list[Chunk]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
    return [Chunk(article.title, i, f"Title: {article.title}\n{piece}")
            for article in articles
            for i, piece in enumerate(splitter.split_text(article.content))]


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
    return RetrievedChunk(payload["title"], payload["chunk"], payload["text"], score)


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
        self.dimension = _dimension(client, collection)

    def retrieve(self, query: str) -> list[RetrievedChunk]:
        """The top-k chunks at the configured text weight, best first. Their `score` is the
        cosine similarity (weight 0), the BM25 score (weight 1), or the fused score."""
        weight, k = self.config.text_weight, self.config.top_k
        if weight == 0:  # dense only: the query the index made before it had a lexical side
            [vector] = _embed(self.embedder, [query], self.dimension)
            return self._dense_top(vector, k)
        [found] = self.candidates([query], depth=max(lexical.DEPTH, k), dense=weight < 1)
        return found.top(weight, k)

    def candidates(self, queries: list[str], depth: int, dense: bool = True) -> list[Candidates]:
        """Per query, the best `depth` chunks of each side (dense ones only if `dense`), from
        which `Candidates.top` fuses any weight: one search per side however many weights."""
        from qdrant_client import models

        vectors = _embed(self.embedder, queries, self.dimension) if dense else [None] * len(queries)
        requests = []
        for query, vector in zip(queries, vectors):
            terms = lexical.query_vector(query)
            if vector is not None:
                requests.append(models.QueryRequest(query=vector, limit=depth, with_payload=True))
            requests.append(models.QueryRequest(
                query=models.SparseVector(indices=terms.indices, values=terms.values),
                using=LEXICAL, limit=depth, with_payload=True))
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
        store = self.config.qdrant_url or str(self.config.directory)
        return {"collection": self.collection, "chunks": self.chunks, "store": store,
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
    client = connect(config)
    try:
        with _store_read(config):
            missing = _missing_ids(client, collection, len(chunks))
            if len(missing) < len(chunks):
                _check_lexical_side(client, collection, config)
        if missing:
            _embed_and_store(client, collection, chunks, missing, embedder, config, progress)
    except BaseException:
        client.close()
        raise
    return VectorIndex(client, collection, embedder, config, len(chunks))


def connect(config: IndexConfig) -> QdrantClient:
    from qdrant_client import QdrantClient

    if config.qdrant_url:
        client = QdrantClient(url=config.qdrant_url, timeout=30)
        try:
            client.get_collections()
        except Exception as err:  # connection refused, DNS, TLS, HTTP errors: all say "not usable"
            client.close()
            raise RetrievalError(f"Qdrant server at {config.qdrant_url} cannot be used: "
                                 f"{type(err).__name__}: {err}") from None
        return client
    config.directory.mkdir(parents=True, exist_ok=True)
    try:
        with _store_read(config):
            return QdrantClient(path=str(config.directory))
    except RetrievalError:
        raise
    except RuntimeError as err:  # the storage is locked by another process
        raise RetrievalError(f"embedded Qdrant at {config.directory}: {err}") from None


@contextlib.contextmanager
def _store_read(config: IndexConfig) -> Iterator[None]:
    """Reading the embedded store's own files (docs/faults.md#files-freshrag-reopens): a folder
    damaged since it was written (meta.json cut or garbled, a collection's storage.sqlite
    truncated, a pickled point broken) fails in whatever its reader raises; it is refused naming
    the folder, which holds nothing but what the index can be built again from."""
    try:
        yield
    except RuntimeError:  # locked by another process: said as such by the caller
        raise
    except (sqlite3.DatabaseError, pickle.UnpicklingError, IsADirectoryError, NotADirectoryError,
            ValueError, KeyError, TypeError, AttributeError, EOFError) as err:
        if config.qdrant_url:
            raise
        raise RetrievalError(f"embedded Qdrant at {config.directory} cannot be read "
                             f"({type(err).__name__}: {str(err)[:200]}): damaged since it was "
                             f"written; delete the folder and the index is built again, or "
                             f"give another --index-dir") from None


def _check_lexical_side(client: QdrantClient, collection: str, config: IndexConfig) -> None:
    """Refuse a collection without the sparse vectors (none of ours lacks them: their key names
    the lexical scheme, so an index built before it is rebuilt under a new name, not reopened)."""
    sparse = client.get_collection(collection).config.params.sparse_vectors or {}
    if LEXICAL not in sparse:
        store = config.qdrant_url or config.directory
        raise RetrievalError(f"collection {collection} in {store} has no lexical ({LEXICAL}) "
                             f"vectors, which hybrid retrieval needs; delete it, or give another "
                             f"--index-dir, and the index is built again with them")


def _dimension(client: QdrantClient, collection: str) -> int:
    """The size of the collection's dense vectors: one unnamed vector in every collection freshrag
    builds (its lexical side is a sparse vector, named apart)."""
    from qdrant_client import models

    vectors = client.get_collection(collection).config.params.vectors
    if not isinstance(vectors, models.VectorParams):  # named vectors, or none: not one of ours
        raise RetrievalError(f"collection {collection} has no unnamed dense vector, which "
                             "freshrag's index has; delete it, or give another --index-dir")
    return vectors.size


def _missing_ids(client: QdrantClient, collection: str, total: int) -> list[int]:
    if not client.collection_exists(collection):
        return list(range(total))
    if client.count(collection, exact=True).count == total:
        return []
    present: set[int] = set()
    offset = None
    while True:
        points, offset = client.scroll(collection, limit=10_000, offset=offset,
                                       with_payload=False, with_vectors=False)
        present.update(int(point.id) for point in points)
        if offset is None:
            return [i for i in range(total) if i not in present]


def _embed_and_store(client: QdrantClient, collection: str, chunks: list[Chunk],
                     missing: list[int], embedder: Embedder, config: IndexConfig,
                     progress: bool) -> None:
    from qdrant_client import models
    from tqdm import tqdm

    # Chunks of similar length share a batch, so that little of each batch is padding.
    missing = sorted(missing, key=lambda i: len(chunks[i].text))
    # over every chunk, not the missing ones: a resumed build weighs terms as a whole one does
    average = lexical.mean_length(chunk.text for chunk in chunks)
    dimension = _dimension(client, collection) if client.collection_exists(collection) else None
    if dimension is not None:  # a build resumed: the collection is there
        _commit_without_sync(client, collection)
    with tqdm(total=len(chunks), initial=len(chunks) - len(missing), unit="chunk",
              desc="indexing", disable=not progress) as bar:
        for start in range(0, len(missing), config.batch_size):
            ids = missing[start:start + config.batch_size]
            vectors = _embed(embedder, [chunks[i].text for i in ids], dimension)
            if dimension is None:
                dimension = len(vectors[0])
                client.create_collection(
                    collection,
                    vectors_config=models.VectorParams(size=dimension,
                                                       distance=models.Distance.COSINE),
                    # Qdrant multiplies in the IDF from the collection (harness/retrieval/lexical.py)
                    sparse_vectors_config={LEXICAL: models.SparseVectorParams(
                        modifier=models.Modifier.IDF)})
                _commit_without_sync(client, collection)
            client.upsert(collection, points=[_point(i, chunks[i], vector, average)
                                              for i, vector in zip(ids, vectors)])
            bar.update(len(ids))


def _commit_without_sync(client: QdrantClient, collection: str) -> None:
    """Let embedded Qdrant's commits reach the disk without waiting for it, for this build.

    Embedded Qdrant stores each point in SQLite in its own transaction, and SQLite's default
    journal syncs the disk several times a commit: storing the paper's 7,452 chunks took 9.3 s,
    two thirds of it in commits. In write-ahead-log mode with `synchronous=NORMAL` a commit is a
    write to the log, synced at checkpoints: the same chunks store in 2.3 s
    (tests/benchmarks/bench_index.py, item 6). A commit survives the process being killed; only
    a power cut can undo the last ones, never corrupt the file, and a point undone is found
    missing when the index is next opened and embedded again (`_missing_ids`). The connection is
    qdrant-client's own (it has no option for this); a Qdrant server, or a client laid out
    otherwise, is left as it is.
    """
    local = getattr(client, "_client", None)
    store = getattr(getattr(local, "collections", {}).get(collection), "storage", None)
    connection = getattr(store, "storage", None)
    if not isinstance(connection, sqlite3.Connection):
        return
    try:
        mode = connection.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode == "wal":  # not on a file system without shared memory: it keeps its journal
            connection.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.Error:  # the store as it is: slower, never broken by a setting for speed
        return


def _point(i: int, chunk: Chunk, vector: list[float], average: float) -> models.PointStruct:
    from qdrant_client import models

    terms = lexical.document_vector(chunk.text, average)
    return models.PointStruct(
        id=i, vector={"": vector, LEXICAL: models.SparseVector(indices=terms.indices,
                                                                values=terms.values)},
        payload={"title": chunk.title, "chunk": chunk.index, "text": chunk.text})


def _embed(embedder: Embedder, texts: list[str], dimension: int | None) -> list[list[float]]:
    """Vectors for `texts`, checked against the index's dimension and each other."""
    vectors = embedder.embed(texts)
    if len(vectors) != len(texts):
        raise RetrievalError(f"embeddings from {embedder.where}: {len(vectors)} vector(s) "
                             f"for {len(texts)} text(s)")
    sizes = sorted({len(vector) for vector in vectors})
    if sizes != [dimension or sizes[0]]:
        raise RetrievalError(f"embeddings from {embedder.where} have {sizes} dimensions; "
                             f"the index needs {dimension or sizes[0]} for every vector")
    return vectors
