"""A Qdrant server seeded from an index built on the engine: the shard's points copied into a
collection of the server's (docs/retrieval.md#seeding-a-qdrant-server).

An index on the engine (edge.py) and a collection of qdrant-client's (store.py) have one layout:
the dense vector unnamed (cosine), the BM25 vector `bm25` with the IDF applied by Qdrant, the
payload title, position and text, the point id the chunk's position. Seeding copies the shard's
points as they are, a page at a time (never the whole shard in memory), into a collection of the
same name, created in that layout through the client, the way `freshrag run --qdrant-url` writes
one. Nothing is chunked or embedded. A collection is complete, for the store, when it holds every
chunk's id; a seeded one then opens as built: a run with the same dataset, chunker and embedder
names the same collection and embeds nothing.

Resumable as a build is: the ids the collection lacks are found as the gaps between those it
holds (gaps.py), and only the shard's points in those gaps are read and sent. A
collection of another layout, or holding points the index does not have, is refused before
anything is written.
"""

from __future__ import annotations

import contextlib
from itertools import islice, takewhile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from freshrag.retrieval import edge, gaps, store
from freshrag.retrieval.config import IndexConfig, RetrievalError

if TYPE_CHECKING:
    from qdrant_client import QdrantClient


def seed(directory: Path, collection: str | None, target: IndexConfig, batch_size: int = 256,
         progress: bool = True) -> dict[str, Any]:
    """Copy the engine's index `collection` in `directory` (the only complete one there if None)
    into the collection of that name in `target` (a server with `qdrant_url`, else local mode in
    `target.directory`), `batch_size` points a request; what was done, as a dict."""
    name = _named(directory, collection)
    source = _source(directory, name)
    try:
        client = store.connect(target)
        try:
            with _client_errors(target, name):
                return _seed(source, client, name, target.qdrant_url or str(target.directory),
                             batch_size, progress)
        finally:
            client.close()
    finally:
        source.close()


def _named(directory: Path, collection: str | None) -> str:
    """The collection to seed: the one given, or the only complete index on the engine there."""
    if collection is not None:
        if Path(collection).name != collection or collection in (".", ".."):
            raise RetrievalError(f"--collection {collection!r} is not a collection's name (the "
                                 f"name of a shard under {directory / 'edge'}, no path)")
        return collection
    records = sorted((directory / "edge").glob("*.json"))
    built = [path.stem for path in records
             if (edge.read_record(directory, path.stem) or {}).get("complete")]
    if len(built) == 1:
        return built[0]
    if built:
        raise RetrievalError(f"{directory} holds {len(built)} indexes on the Qdrant engine; give "
                             f"--collection, one of: {', '.join(built)}")
    unfinished = f" (unfinished: {', '.join(p.stem for p in records)})" if records else ""
    raise RetrievalError(f"no built index on the Qdrant engine in {directory}{unfinished}: build "
                         f"one with `freshrag index --engine edge --index-dir {directory}`, or "
                         f"give the --index-dir that holds it")


def _source(directory: Path, name: str) -> edge.EdgeCollection:
    found = edge.open_built(directory, name)
    if found is not None:
        return found
    if edge.read_record(directory, name) is None:
        raise RetrievalError(f"no index named {name} on the Qdrant engine in {directory} (no "
                             f"{edge.record_path(directory, name)})")
    raise RetrievalError(f"the index at {edge.shard_path(directory, name)} is unfinished: run "
                         f"the `freshrag index` or `freshrag run` that began it again, which "
                         f"finishes it, then seed")


@contextlib.contextmanager
def _client_errors(target: IndexConfig, name: str) -> Iterator[None]:
    """A server that fails mid-seed (gone, full, refusing a request) as one message naming it;
    what it was sent stays, and the same command resumes."""
    try:
        yield
    except RetrievalError:
        raise
    except Exception as err:
        if not target.qdrant_url:
            raise
        raise RetrievalError(f"Qdrant server at {target.qdrant_url} failed while seeding "
                             f"collection {name} ({type(err).__name__}: {str(err)[:300]}); what "
                             f"it holds stays: run the same command again, and it resumes") \
            from None


def _seed(source: edge.EdgeCollection, client: QdrantClient, name: str, where: str,
          batch_size: int, progress: bool) -> dict[str, Any]:
    from tqdm import tqdm

    total, size = int(source.stored["chunks"]), source.dimension()
    created = not client.collection_exists(name)
    if created:
        store.create_collection(client, name, size)
    else:
        _check_layout(client, name, size, where, total)
        store.commit_without_sync(client, name)
    # the ids the collection lacks, as the gaps between those it holds: only those are read
    missing = gaps.Missing([range(total)]) if created else store.missing_ids(client, name, total)
    seeded = 0
    with tqdm(total=total, initial=total - len(missing), unit="point", desc="seeding",
              disable=not progress or not missing) as bar:
        for stretch in missing.stretches():
            points = _read(source, stretch, batch_size)
            while page := list(islice(points, batch_size)):
                client.upsert(name, points=[store.point_struct(p) for p in page], wait=True)
                seeded += len(page)
                bar.update(len(page))
    held = client.count(name, exact=True).count
    if held != total:  # the store opens it as built only if it holds every chunk's id
        raise RetrievalError(f"collection {name} at {where} holds {held:,} points after seeding, "
                             f"not the {total:,} of the index at {source.path}: delete it, and "
                             f"seed again")
    return {"collection": name, "index": str(source.path), "store": where, "points": total,
            "seeded": seeded, "present": total - seeded, "dimension": size}


def _read(source: edge.EdgeCollection, stretch: range, batch_size: int) \
        -> Iterator[store.StoredPoint]:
    """The index's points with ids in `stretch`, a page at a time (no page past it if short)."""
    points = source.points(page=min(batch_size, len(stretch)), start=stretch.start)
    return takewhile(lambda point: point.id < stretch.stop, points)


def _check_layout(client: QdrantClient, name: str, size: int, where: str, total: int) -> None:
    """Refuse a collection that is not laid out as the index's points need, or that holds more
    points than the index has (another index's), before anything is written to it."""
    from qdrant_client import models

    params = client.get_collection(name).config.params
    vectors, sparse = params.vectors, (params.sparse_vectors or {}).get(store.LEXICAL)
    problems = []
    if not isinstance(vectors, models.VectorParams):
        problems.append("its dense vectors are named, not one unnamed vector")
    else:
        if vectors.size != size:
            problems.append(f"its dense vectors have {vectors.size} dimensions, the index's "
                            f"{size}")
        if vectors.distance != models.Distance.COSINE:
            problems.append(f"its distance is {vectors.distance.value}, not Cosine")
    if sparse is None:
        problems.append(f"it has no {store.LEXICAL} sparse vector")
    elif sparse.modifier != models.Modifier.IDF:
        problems.append(f"its {store.LEXICAL} sparse vector has no IDF modifier")
    held = client.count(name, exact=True).count
    if held > total:
        problems.append(f"it holds {held:,} points, the index {total:,}")
    if problems:
        raise RetrievalError(f"collection {name} at {where} exists and is not this index's: "
                             f"{'; '.join(problems)}; delete it there, or seed another store")
