"""The Qdrant store behind the retrieval index: where its chunks' vectors are kept, opened, checked
and written (docs/retrieval.md#the-index).

Embedded Qdrant on disk by default (qdrant-client's local mode), a Qdrant server when a URL is
given. Each chunk is one point: its dense vector (the collection's unnamed vector, cosine
distance), its BM25 sparse vector (`LEXICAL`, lexical.py), and a payload of its title, position
and text. A point's id is the chunk's position in the chunk stream, which the index key fixes:
a collection that holds as many points as the index should have chunks is built, and opens
without a chunk read; one that holds fewer (a build or a seed stopped) is finished by embedding
only the ids it lacks (the gaps between those it holds, gaps.py), the chunks streamed, never
held.

qdrant-client and tqdm are imported where they are used: together they take most of a second.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import pickle
import sqlite3
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from freshrag.retrieval import gaps, lexical
from freshrag.retrieval.batches import Batch, batches, embed_batches, picked
from freshrag.retrieval.chunking import Chunk
from freshrag.retrieval.config import IndexConfig, RetrievalError
from freshrag.retrieval.embeddings import Embedder, checked

if TYPE_CHECKING:
    from qdrant_client import QdrantClient, models

LEXICAL = "bm25"  # the sparse vector's name; the dense one is the collection's unnamed vector


@dataclass(frozen=True)
class Request:
    """One search of a collection: a dense vector, or a query's BM25 terms, and how many hits."""

    vector: list[float] | lexical.SparseTerms
    limit: int


@dataclass(frozen=True)
class StoredPoint:
    """A point as stored: its id, dense vector, sparse terms and payload (what the content hash
    reads)."""

    id: int
    dense: list[float] | None
    sparse: lexical.SparseTerms | None
    payload: dict[str, Any]


def stored_point(record: Any) -> StoredPoint:
    """A scrolled record of either store (qdrant-client's or the engine's: the same fields) as
    a StoredPoint."""
    vectors: Any = record.vector or {}
    sparse = vectors.get(LEXICAL)
    return StoredPoint(int(record.id), vectors.get(""),
                       lexical.SparseTerms(list(sparse.indices), list(sparse.values))
                       if sparse is not None else None, record.payload or {})


class ClientCollection:
    """One collection of qdrant-client's (local mode, or a server), as the index searches it;
    edge.EdgeCollection has the same calls. Hits are qdrant-client's points (id, score,
    payload)."""

    def __init__(self, client: QdrantClient, name: str, config: IndexConfig):
        self.client = client
        self.name = name
        self.server = config.qdrant_url
        self.where = config.qdrant_url or str(config.directory)

    def dimension(self) -> int:
        return dimension(self.client, self.name)

    def count(self) -> int:
        return self.client.count(self.name, exact=True).count

    def search(self, requests: Sequence[Request]) -> list[list[Any]]:
        from qdrant_client import models

        queries = [models.QueryRequest(query=models.SparseVector(
                       indices=r.vector.indices, values=r.vector.values), using=LEXICAL,
                       limit=r.limit)
                   if isinstance(r.vector, lexical.SparseTerms) else
                   models.QueryRequest(query=r.vector, limit=r.limit)
                   for r in requests]
        return [answer.points for answer in self.client.query_batch_points(self.name, queries)]

    def payloads(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        return {int(point.id): point.payload or {}
                for point in self.client.retrieve(self.name, list(ids), with_payload=True)}

    def points(self, page: int = 2_000) -> Iterator[StoredPoint]:
        """Every point in id order: (id, dense vector, sparse terms, payload)."""
        offset = None
        while True:
            records, offset = self.client.scroll(self.name, limit=page, offset=offset,
                                                 with_payload=True, with_vectors=True)
            yield from map(stored_point, records)
            if offset is None:
                return

    def record(self) -> dict[str, Any]:
        return {"engine": "qdrant-server" if self.server else "qdrant-local",
                "engine_version": metadata.version("qdrant-client")}

    def close(self) -> None:
        self.client.close()


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
        with reading(config):
            return QdrantClient(path=str(config.directory))
    except RetrievalError:
        raise
    except RuntimeError as err:  # the storage is locked by another process
        raise RetrievalError(f"embedded Qdrant at {config.directory}: {err}") from None


@contextlib.contextmanager
def reading(config: IndexConfig) -> Iterator[None]:
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


def check_lexical_side(client: QdrantClient, collection: str, config: IndexConfig) -> None:
    """Refuse a collection without the sparse vectors (none of ours lacks them: their key names
    the lexical scheme, so an index built before it is rebuilt under a new name, not reopened)."""
    sparse = client.get_collection(collection).config.params.sparse_vectors or {}
    if LEXICAL not in sparse:
        store = config.qdrant_url or config.directory
        raise RetrievalError(f"collection {collection} in {store} has no lexical ({LEXICAL}) "
                             f"vectors, which hybrid retrieval needs; delete it, or give another "
                             f"--index-dir, and the index is built again with them")


def dimension(client: QdrantClient, collection: str) -> int:
    """The size of the collection's dense vectors: one unnamed vector in every collection freshrag
    builds (its lexical side is a sparse vector, named apart)."""
    from qdrant_client import models

    vectors = client.get_collection(collection).config.params.vectors
    if not isinstance(vectors, models.VectorParams):  # named vectors, or none: not one of ours
        raise RetrievalError(f"collection {collection} has no unnamed dense vector, which "
                             "freshrag's index has; delete it, or give another --index-dir")
    return vectors.size


def missing_ids(client: QdrantClient, collection: str, total: int) -> gaps.Missing:
    """The ids of the `total` chunks that the collection does not hold yet, ascending: a count
    alone if it holds them all, else the gaps between the ids it holds (gaps.py)."""
    if not client.collection_exists(collection):
        return gaps.Missing([range(total)])
    if client.count(collection, exact=True).count == total:
        return gaps.Missing()
    return gaps.missing(_held(client, collection), total, f"collection {collection}")


def _held(client: QdrantClient, collection: str, page: int = 10_000) -> Iterator[int]:
    """The collection's point ids, ascending: Qdrant scrolls by id unless asked otherwise."""
    offset = None
    while True:
        points, offset = client.scroll(collection, limit=page, offset=offset,
                                       with_payload=False, with_vectors=False)
        yield from (int(point.id) for point in points)
        if offset is None:
            return


def store_chunks(client: QdrantClient, collection: str, chunks: Callable[[], Iterable[Chunk]],
                 total: int, missing: Sequence[int], embedder: Embedder, config: IndexConfig,
                 progress: bool) -> None:
    """Embed the `missing` ids (ascending) of the `total` chunks `chunks()` yields, a chunk's id
    its position (batches.py: here or on Ray), and store them, creating the collection if it is
    new. The stream is read twice and never held: once for BM25's mean length, over every chunk
    (a resumed build weighs terms as a whole one does), then for the missing chunks, a window of
    batches at a time."""
    from tqdm import tqdm

    count, average = lexical.measure(chunk.text for chunk in chunks())
    if count != total:  # ids past the count, or short of it, would never make a whole collection
        raise RetrievalError(f"collection {collection} should hold {total:,} chunks, but its "
                             f"articles and corpus give {count:,}: was the corpus changed since "
                             f"it was built? Build it again")
    size = dimension(client, collection) if client.collection_exists(collection) else None
    if size is not None:  # a build resumed: the collection is there
        commit_without_sync(client, collection)
    with tqdm(total=total, initial=total - len(missing), unit="chunk", desc="indexing",
              disable=not progress) as bar:
        def stored(batch: Batch, vectors: list[list[float]]) -> None:
            nonlocal size
            vectors = checked(embedder, batch.texts, vectors, size)
            if size is None:
                size = len(vectors[0])
                create_collection(client, collection, size)
            client.upsert(collection, points=[_point(i, chunk, vector, average) for i, chunk, vector
                                              in zip(batch.ids, batch.chunks, vectors)])
            bar.update(len(batch.ids))

        embed_batches(batches(picked(chunks(), missing), config.batch_size), embedder, config,
                      stored)


def create_collection(client: QdrantClient, collection: str, size: int) -> None:
    """A new collection in freshrag's layout (the engine's shards have it too, edge.py): the
    dense vector unnamed, of `size`, cosine; the BM25 vector `LEXICAL`, the IDF applied by
    Qdrant."""
    from qdrant_client import models

    client.create_collection(
        collection,
        vectors_config=models.VectorParams(size=size, distance=models.Distance.COSINE),
        # Qdrant multiplies in the IDF from the collection (lexical.py)
        sparse_vectors_config={LEXICAL: models.SparseVectorParams(modifier=models.Modifier.IDF)})
    commit_without_sync(client, collection)


def commit_without_sync(client: QdrantClient, collection: str) -> None:
    """Let embedded Qdrant's commits reach the disk without waiting for it, for this build.

    Embedded Qdrant stores each point in SQLite in its own transaction, and SQLite's default
    journal syncs the disk several times a commit: storing the paper's 7,452 chunks took 9.3 s,
    two thirds of it in commits. In write-ahead-log mode with `synchronous=NORMAL` a commit is a
    write to the log, synced at checkpoints: the same chunks store in 2.3 s
    (tests/benchmarks/bench_index.py, item 6). A commit survives the process being killed; only
    a power cut can undo the last ones, never corrupt the file, and a point undone is found
    missing when the index is next opened and embedded again (`missing_ids`). The connection is
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
    return point_struct(StoredPoint(i, vector, lexical.document_vector(chunk.text, average),
                                    {"title": chunk.title, "chunk": chunk.index,
                                     "text": chunk.text}))


def point_struct(point: StoredPoint) -> models.PointStruct:
    """A point as qdrant-client writes it: the dense vector unnamed, the sparse one `LEXICAL`."""
    from qdrant_client import models

    vectors: dict[str, Any] = {"": point.dense}
    if point.sparse is not None:
        vectors[LEXICAL] = models.SparseVector(indices=point.sparse.indices,
                                               values=point.sparse.values)
    return models.PointStruct(id=point.id, vector=vectors, payload=point.payload)


HASH_DIGITS = 5  # decimals a vector's components keep in the content hash: float32 noise beyond


def content_hash(points: Iterator[StoredPoint]) -> str:
    """A hash of an index's content, points in id order: ids, dense and sparse vectors rounded to
    `HASH_DIGITS` decimals, payloads. Two builds of the same chunks by the same embedder, on one
    machine or many (Ray), in either store, hash alike however their batches fell. Components
    are read as float32 before they are rounded: the engine keeps a sparse weight in float32
    where local mode keeps the float64 it was given, and the two can round to either side of a
    fifth decimal (1.26011498 and 1.26011503)."""
    digest = hashlib.sha256()
    for point in points:
        sparse = ([point.sparse.indices, _rounded(point.sparse.values)] if point.sparse else None)
        digest.update(json.dumps([point.id, _rounded(point.dense or []), sparse, point.payload],
                                 sort_keys=True, ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def _rounded(values: Sequence[float]) -> list[float]:
    import numpy

    return [round(float(x), HASH_DIGITS) for x in numpy.asarray(values, dtype=numpy.float32)]
