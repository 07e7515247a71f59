"""The Qdrant engine in-process (`qdrant-edge-py`) behind the retrieval index: a world of millions
of chunks on one machine, kept on disk and searched through HNSW (docs/retrieval.md#a-retrieval-world).

The same store as store.py's in another engine, with the same layout as a Qdrant server's
collection so that a shard built here can seed one: each chunk a point whose id is its position
in the chunk stream, its dense vector unnamed (cosine), its BM25 sparse vector `LEXICAL` (the IDF
applied by the engine), its payload the title, position and text. Vectors, the HNSW graph,
the sparse index and the payloads stay on disk (memory-mapped); only the int8 copy of the dense
vectors that HNSW walks, and the graph, are kept cached. A run reads payloads of the hits only, so
it never holds the corpus's text.

An index is two things under `<directory>/edge/`: the engine's shard folder, named after the
collection, and beside it `<collection>.json`, the record freshrag writes before the shard
(engine, its version, freshrag's format, the chunk count, BM25's mean length) and marks complete
once the HNSW graph is built. An index is opened from its record and shard alone: nothing is
chunked again. A build that stopped resumes by embedding only the ids its shard lacks.

`qdrant_edge` is imported where it is used: only an index on this engine needs it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from freshrag.core.files import write_json
from freshrag.retrieval import gaps, lexical
from freshrag.retrieval.batches import SORT_WINDOW, Batch, batches, embed_batches, picked
from freshrag.retrieval.chunking import Chunk
from freshrag.retrieval.config import EDGE_ABOVE, IndexConfig, RetrievalError
from freshrag.retrieval.embeddings import Embedder, checked
from freshrag.retrieval.store import LEXICAL, Request, StoredPoint, stored_point

if TYPE_CHECKING:
    from qdrant_edge import EdgeShard

ENGINE = "qdrant-edge"
FORMAT = 1  # freshrag's layout in a shard (vector names, payload keys, the record); bump on change
HNSW_EF = 128  # candidates HNSW keeps while searching: recall against time (bench_world.py)


def engine_version() -> str:
    """The installed engine's version; an index on it needs the world extra."""
    try:
        return metadata.version("qdrant-edge-py")
    except metadata.PackageNotFoundError:
        raise RetrievalError(f"an index past {EDGE_ABOVE:,} chunks, or --engine edge, is kept on "
                             f"the Qdrant engine in-process, which is not installed: pip install "
                             f"'freshrag[world]', or give --engine local") from None


def _release(version: str) -> str:
    """The part of the engine's version its storage format follows: it is in beta, so minor
    versions may change the format (0.9.x opens 0.9.y's shards, not 0.10's)."""
    return ".".join(version.split(".")[:2])


def shard_path(directory: Path, collection: str) -> Path:
    return directory / "edge" / collection


def record_path(directory: Path, collection: str) -> Path:
    return directory / "edge" / f"{collection}.json"


@contextlib.contextmanager
def engine_errors(path: Path) -> Iterator[None]:
    """Whatever the engine raises (it raises bare `Exception`s) or the disk refuses, as one
    RetrievalError naming the shard (docs/faults.md#files-freshrag-reopens)."""
    try:
        yield
    except RetrievalError:
        raise
    except OSError as err:  # a disk that fills, a folder that cannot be written
        raise RetrievalError(f"the index at {path} cannot be written: {err.strerror or err}; "
                             f"free space, or give another --index-dir, and the build "
                             f"resumes") from None
    except Exception as err:
        text = str(err)
        hint = ("free space, or give another --index-dir, and the build resumes"
                if "No space left" in text or "os error 28" in text else
                "damaged since it was written: delete it and its .json, and the index is "
                "built again, or give another --index-dir")
        raise RetrievalError(f"the index at {path} cannot be used ({text[:300]}): "
                             f"{hint}") from None


class EdgeCollection:
    """One index's shard as the index searches it (the calls of store.ClientCollection)."""

    def __init__(self, shard: EdgeShard, path: Path, record: dict[str, Any]):
        self.shard = shard
        self.path = path
        self.where = str(path)
        self.stored = record

    def dimension(self) -> int:
        return int(self.stored["dimension"])

    def count(self) -> int:
        from qdrant_edge import CountRequest

        with engine_errors(self.path):
            return self.shard.count(CountRequest(exact=True))

    def search(self, requests: Sequence[Request]) -> list[list[Any]]:
        from qdrant_edge import QueryBatchRequest

        with engine_errors(self.path):
            return self.shard.query_batch(QueryBatchRequest([_query(r) for r in requests]))

    def payloads(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        with engine_errors(self.path):
            return {int(point.id): point.payload or {}
                    for point in self.shard.retrieve(list(ids), with_payload=True,
                                                     with_vector=False)}

    def points(self, with_vectors: bool = True, page: int = 2_000,
               start: int | None = None) -> Iterator[StoredPoint]:
        """Every point in id order, from id `start` on: (id, dense vector, sparse terms,
        payload)."""
        from qdrant_edge import ScrollRequest

        offset: Any = start
        while True:
            with engine_errors(self.path):
                records, offset = self.shard.scroll(ScrollRequest(
                    offset=offset, limit=page, with_payload=with_vectors,
                    with_vector=with_vectors))
            yield from map(stored_point, records)
            if offset is None:
                return

    def record(self) -> dict[str, Any]:
        return {"engine": ENGINE, "engine_version": self.stored["engine_version"],
                "format": FORMAT}

    def close(self) -> None:
        self.shard.close()


def _query(request: Request) -> Any:
    from qdrant_edge import (
        QuantizationSearchParams,
        Query,
        QueryRequest,
        SearchParams,
        SparseVector,
    )

    if isinstance(request.vector, lexical.SparseTerms):
        terms = request.vector
        return QueryRequest(limit=request.limit, query=Query.Nearest(
            SparseVector(indices=terms.indices, values=terms.values), using=LEXICAL))
    # HNSW walks the int8 copy; the hits' float vectors, read from disk, give their scores
    return QueryRequest(limit=request.limit, query=Query.Nearest(request.vector),
                        params=SearchParams(hnsw_ef=max(HNSW_EF, request.limit),
                                            quantization=QuantizationSearchParams(rescore=True)))


def read_record(directory: Path, collection: str) -> dict[str, Any] | None:
    """The index's record, None if it was never begun; one written by another engine or format
    is refused, naming the path."""
    path = record_path(directory, collection)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise RetrievalError(f"the index record {path} cannot be read ({err}): delete it and "
                             f"{shard_path(directory, collection)}, and the index is built "
                             f"again") from None
    if not isinstance(record, dict):
        raise RetrievalError(f"the index record {path} is not one of freshrag's")
    written = (record.get("engine"), record.get("format"), _release(record.get("engine_version",
                                                                                "")))
    if written != (ENGINE, FORMAT, _release(engine_version())):
        raise RetrievalError(
            f"the index at {shard_path(directory, collection)} was written by "
            f"{record.get('engine')} {record.get('engine_version')} in format "
            f"{record.get('format')}; this freshrag reads {ENGINE} {_release(engine_version())}.x "
            f"in format {FORMAT}: delete it and {path}, and it is built again, or give another "
            f"--index-dir")
    return record


def open_built(directory: Path, collection: str) -> EdgeCollection | None:
    """The finished index of this collection, or None if it was never built or is unfinished."""
    engine_version()
    record = read_record(directory, collection)
    if record is None or not record.get("complete"):
        return None
    path = shard_path(directory, collection)
    if not path.is_dir():
        raise RetrievalError(f"the index at {path} is missing (its record "
                             f"{record_path(directory, collection)} is there): delete the record, "
                             f"and the index is built again")
    return EdgeCollection(_load(path), path, record)


# The files the engine loads into memory at open (the int8 vectors, the HNSW graph, the id
# tracker), as they are named in a shard's segments.
CACHED = ("*/vector_storage/quantized.data", "*/vector_index/links*.bin", "*/id_tracker.*")


def _load(path: Path) -> EdgeShard:
    from qdrant_edge import EdgeShard

    with engine_errors(path):
        _read_ahead(path)
        return EdgeShard.load(str(path))


def _read_ahead(path: Path) -> None:
    """Read the files the engine caches, in order, before it opens them. The engine turns
    read-ahead off for them and then loads them page by page (`MADV_RANDOM`, then
    `MADV_POPULATE_READ`): one 4 KB read at a time, 15 s for the 19 MB of 50k vectors on this
    machine's disk, and the engine drops them from the page cache again when it closes. Read in
    order first, they take 0.02 s, and the engine finds them in memory
    (docs/measurements.md#a-retrieval-world)."""
    for pattern in CACHED:
        for name in (path / "segments").glob(pattern):
            with open(name, "rb") as handle:
                while handle.read(1 << 22):
                    pass


def _config(dimension: int) -> Any:
    from qdrant_edge import (
        Distance,
        EdgeConfig,
        EdgeSparseVectorParams,
        EdgeVectorParams,
        HnswIndexConfig,
        Memory,
        Modifier,
        ScalarQuantizationConfig,
        ScalarType,
    )

    return EdgeConfig(
        vectors=EdgeVectorParams(size=dimension, distance=Distance.Cosine, memory=Memory.Cold),
        sparse_vectors={LEXICAL: EdgeSparseVectorParams(modifier=Modifier.Idf,
                                                         memory=Memory.Cold)},
        payload_memory=Memory.Cold,
        # a build writes everything once: a batch is durable at the flush after it (`_store`),
        # and what a kill loses before that is found missing and embedded again
        wal_enabled=False,
        # the server's defaults; the graph and the int8 vectors it walks are what stays cached
        hnsw_config=HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=10_000,
                                    memory=Memory.Cached),
        quantization_config=ScalarQuantizationConfig(type=ScalarType.Int8, quantile=0.99,
                                                     memory=Memory.Cached))


def build(directory: Path, collection: str, chunks: Callable[[], Iterable[Chunk]],
          embedder: Embedder, config: IndexConfig, progress: bool) -> EdgeCollection:
    """Build (or finish) the index of the chunks `chunks()` yields, in the same order every call:
    a chunk's id is its position. The stream is read twice on a first build (BM25's mean length,
    then the points) and never held whole."""
    path = shard_path(directory, collection)
    with building(path):
        return _build(directory, collection, chunks, embedder, config, progress)


@contextlib.contextmanager
def building(path: Path) -> Iterator[None]:
    """One build of a shard at a time: a second process is refused, naming it (the engine
    itself locks nothing once its write-ahead log is off)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f"{path.name}.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RetrievalError(f"the index at {path} is being built by another process; "
                                 f"wait for it, or give another --index-dir") from None
        yield


def _build(directory: Path, collection: str, chunks: Callable[[], Iterable[Chunk]],
           embedder: Embedder, config: IndexConfig, progress: bool) -> EdgeCollection:
    path = shard_path(directory, collection)
    record = read_record(directory, collection)
    if record is None:
        with engine_errors(path):
            record = _begin(directory, collection, chunks())
    shard = None
    try:
        if path.is_dir() and any((path / "segments").glob("*")):
            shard = _load(path)
        shard = _store(shard, path, chunks(), record, embedder, config, progress)
        with engine_errors(path):
            shard.optimize()  # the HNSW graph and the int8 vectors, one segment at a time
            shard.flush()
            record = {**record, "complete": True}
            write_json(record_path(directory, collection), record)
    except BaseException:
        if shard is not None:
            shard.close()
        raise
    return EdgeCollection(shard, path, record)


def _begin(directory: Path, collection: str, chunks: Iterable[Chunk]) -> dict[str, Any]:
    """The record of a build begun: written before the shard, so a shard is never without one."""
    count, average = lexical.measure(chunk.text for chunk in chunks)
    if not count:
        raise RetrievalError("the corpus has no text to index")
    record = {"engine": ENGINE, "engine_version": engine_version(), "format": FORMAT,
              "collection": collection, "chunks": count, "dimension": None,
              "average_length": average, "lexical": lexical.SCHEME, "complete": False}
    path = record_path(directory, collection)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, record)
    return record


def _missing(shard: EdgeShard | None, path: Path, total: int) -> gaps.Missing:
    """The ids of the `total` chunks the shard lacks: the gaps between those it holds."""
    if shard is None:
        return gaps.Missing([range(total)])
    held = EdgeCollection(shard, path, {})
    if held.count() == total:
        return gaps.Missing()
    return gaps.missing((point.id for point in held.points(with_vectors=False, page=20_000)),
                        total, f"the index at {path}")


def _store(shard: EdgeShard | None, path: Path, chunks: Iterable[Chunk], record: dict[str, Any],
           embedder: Embedder, config: IndexConfig, progress: bool) -> EdgeShard:
    """Embed and write the chunks the shard lacks (batches.py: here or on Ray); the shard,
    created at the first batch."""
    from tqdm import tqdm

    total = record["chunks"]
    missing = _missing(shard, path, total)
    with tqdm(total=total, initial=total - len(missing), unit="chunk", desc="indexing",
              disable=not progress) as bar:
        writer = _Writer(shard, path, record, embedder, bar.update)
        try:
            embed_batches(batches(picked(chunks, missing), config.batch_size), embedder,
                          config, writer)
            with engine_errors(path):
                if writer.shard is not None:
                    writer.shard.flush()
        except BaseException:
            if writer.shard is not None and shard is None:  # made here: closed here
                writer.shard.close()
            raise
    if writer.shard is None:  # nothing was missing, and nothing was there: an empty stream
        raise RetrievalError(f"the index at {path} has no chunks to store")
    return writer.shard


class _Writer:
    """A build's writes to its shard, on the calling thread whichever executor embeds: the
    shard created at the first batch (its record first: a shard is never without its size),
    flushed every SORT_WINDOW batches, so that a kill loses at most those."""

    def __init__(self, shard: EdgeShard | None, path: Path, record: dict[str, Any],
                 embedder: Embedder, progressed: Callable[[int], object]):
        self.shard = shard
        self.path = path
        self.record = record
        self.embedder = embedder
        self.progressed = progressed
        self.written = 0

    def __call__(self, batch: Batch, vectors: list[list[float]]) -> None:
        from qdrant_edge import EdgeShard, UpdateOperation

        vectors = checked(self.embedder, batch.texts, vectors, self.record["dimension"])
        with engine_errors(self.path):
            if self.shard is None:
                self.record["dimension"] = len(vectors[0])
                write_json(self.path.parent / f"{self.path.name}.json", self.record)
                self.shard = EdgeShard.create(str(self.path), _config(len(vectors[0])))
            self.shard.update(UpdateOperation.upsert_points(
                [_point(i, chunk, vector, self.record["average_length"])
                 for i, chunk, vector in zip(batch.ids, batch.chunks, vectors)]))
            self.written += 1
            if self.written % SORT_WINDOW == 0:
                self.shard.flush()
        self.progressed(len(batch.ids))


def _point(i: int, chunk: Chunk, vector: list[float], average: float) -> Any:
    from qdrant_edge import Point, SparseVector

    terms = lexical.document_vector(chunk.text, average)
    return Point(i, {"": vector, LEXICAL: SparseVector(indices=terms.indices,
                                                        values=terms.values)},
                 {"title": chunk.title, "chunk": chunk.index, "text": chunk.text})

