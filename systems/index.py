"""The retrieval index the RAG systems share (section IV: naive RAG's database).

Every corpus article is split with `RecursiveCharacterTextSplitter` (1,024 characters, overlap 48,
as in the paper), its title prepended to every chunk, embedded, and stored in Qdrant with cosine
distance: embedded Qdrant on disk by default, a Qdrant server when a URL is given.

An index is keyed by (corpus hash, chunker settings, embedding model) and lives in the collection
named after that key, so a later run on the same corpus opens it in seconds instead of embedding
again. Chunk ids are their position in the chunk list, which the key fixes: a build that was
interrupted resumes by embedding only the chunks its collection lacks.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Protocol

from langchain_text_splitters import RecursiveCharacterTextSplitter
from qdrant_client import QdrantClient, models
from tqdm import tqdm

from harness.types import Article, RetrievedChunk

DEFAULT_DIRECTORY = Path("results") / ".index"


class RetrievalError(RuntimeError):
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
    batch_size: int = 256  # chunks embedded and upserted per step


@dataclass(frozen=True)
class Chunk:
    title: str
    index: int  # position within its article
    text: str   # "Title: ...\n" + the article's text piece, as the released runs hold them


def chunk_articles(articles: Iterable[Article], size: int, overlap: int) -> list[Chunk]:
    splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
    return [Chunk(article.title, i, f"Title: {article.title}\n{piece}")
            for article in articles
            for i, piece in enumerate(splitter.split_text(article.content))]


def index_key(articles: Iterable[Article], config: IndexConfig, embedder_name: str) -> str:
    digest = hashlib.sha256()
    for article in articles:
        digest.update(json.dumps([article.title, article.content]).encode())
    digest.update(json.dumps([config.chunk_size, config.chunk_overlap, embedder_name]).encode())
    return digest.hexdigest()


class VectorIndex:
    """Top-k chunk search over one collection; safe to share between threads, without a lock of
    its own, so that retrievals overlap (8 at once against a remote embeddings endpoint).

    Embedders lock what is not thread-safe themselves (the local model); the endpoint embedder
    shares one thread-safe openai client. A Qdrant server is reached over HTTP. Embedded Qdrant
    answers a query from numpy arrays and payload dicts held in memory (qdrant_client.local:
    no SQLite on the read path, whose connection is what fails across threads,
    qdrant/qdrant-client#367); the index only reads once it is built, so queries may run at
    once. tests/systems/test_index.py checks that concurrent queries equal serial ones.
    """

    def __init__(self, client: QdrantClient, collection: str, embedder: Embedder,
                 config: IndexConfig, chunks: int):
        self.client = client
        self.collection = collection
        self.embedder = embedder
        self.config = config
        self.chunks = chunks
        self.dimension = client.get_collection(collection).config.params.vectors.size

    def retrieve(self, query: str) -> list[RetrievedChunk]:
        [vector] = _embed(self.embedder, [query], self.dimension)
        hits = self.client.query_points(self.collection, query=vector, limit=self.config.top_k,
                                        with_payload=True).points
        return [RetrievedChunk(hit.payload["title"], hit.payload["chunk"], hit.payload["text"],
                               hit.score) for hit in hits]

    def record(self) -> dict[str, Any]:
        store = self.config.qdrant_url or str(self.config.directory)
        return {"collection": self.collection, "chunks": self.chunks, "store": store,
                "embedding_model": self.embedder.name, "dimension": self.dimension,
                "chunk_size": self.config.chunk_size, "chunk_overlap": self.config.chunk_overlap,
                "top_k": self.config.top_k}

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
        missing = _missing_ids(client, collection, len(chunks))
        if missing:
            _embed_and_store(client, collection, chunks, missing, embedder, config, progress)
    except BaseException:
        client.close()
        raise
    return VectorIndex(client, collection, embedder, config, len(chunks))


def connect(config: IndexConfig) -> QdrantClient:
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
        return QdrantClient(path=str(config.directory))
    except RuntimeError as err:  # the storage is locked by another process
        raise RetrievalError(f"embedded Qdrant at {config.directory}: {err}") from None


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
    # Chunks of similar length share a batch, so that little of each batch is padding.
    missing = sorted(missing, key=lambda i: len(chunks[i].text))
    dimension = (client.get_collection(collection).config.params.vectors.size
                 if client.collection_exists(collection) else None)
    with tqdm(total=len(chunks), initial=len(chunks) - len(missing), unit="chunk",
              desc="indexing", disable=not progress) as bar:
        for start in range(0, len(missing), config.batch_size):
            ids = missing[start:start + config.batch_size]
            vectors = _embed(embedder, [chunks[i].text for i in ids], dimension)
            if dimension is None:
                dimension = len(vectors[0])
                client.create_collection(collection, vectors_config=models.VectorParams(
                    size=dimension, distance=models.Distance.COSINE))
            client.upsert(collection, points=[
                models.PointStruct(id=i, vector=vector, payload={
                    "title": chunks[i].title, "chunk": chunks[i].index, "text": chunks[i].text})
                for i, vector in zip(ids, vectors)])
            bar.update(len(ids))


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
