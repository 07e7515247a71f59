"""The ids a store lacks, found as the gaps between those it holds (retrieval/gaps.py,
docs/retrieval.md#the-index): equal to the set difference for holes anywhere, held in memory
that grows with the gaps, not the ids, and a resume on either store embeds exactly those ids."""

from __future__ import annotations

import json
import tracemalloc
from itertools import chain

import pytest
from qdrant_client import QdrantClient, models

from freshrag.retrieval import edge, store
from freshrag.retrieval.chunking import chunk_articles
from freshrag.retrieval.config import IndexConfig, RetrievalError
from freshrag.retrieval.gaps import Missing, missing
from freshrag.retrieval.index import open_index
from tests.support.fakes import BagOfWordsEmbedder
from tests.support.systems import CORPUS

CHUNKS = chunk_articles(CORPUS.values(), 300, 20)
TOTAL = len(CHUNKS)


def holes(total: int) -> list[set[int]]:
    """Missing ids of every shape: the first, the last, runs, single holes, all, none."""
    return [set(), set(range(total)), {0}, {total - 1}, {0, total - 1},
            {3, 4, 5, 6, 11, total - 2}, set(range(2, total, 2)), set(range(5, total)),
            set(range(0, 7)) | {9} | set(range(total - 4, total))]


@pytest.mark.parametrize("lacking", holes(40), ids=str)
def test_the_missing_ids_are_the_set_difference_as_a_sequence(lacking):
    found = missing(iter(sorted(set(range(40)) - lacking)), 40, "the store")
    expected = sorted(lacking)
    assert list(found) == expected and len(found) == len(expected)
    assert [found[i] for i in range(len(found))] == expected  # indexed as a list would be
    assert found[-1:] == expected[-1:] and found[1:5] == expected[1:5]
    assert [i for i in range(-2, 42) if i in found] == expected
    assert bool(found) == bool(expected)


def test_ids_past_the_total_end_the_walk():
    read: list[int] = []

    def held():
        for i in (1, 2, 5, 9, 10, 11):
            read.append(i)
            yield i

    assert list(missing(held(), 9, "the store")) == [0, 3, 4, 6, 7, 8]
    assert read == [1, 2, 5, 9]  # stopped at the first id past the total


def test_ids_out_of_order_are_refused_naming_the_store():
    with pytest.raises(RetrievalError, match="collection c gave point id 3 after 6: .*ascending"):
        missing(iter([0, 6, 3]), 10, "collection c")


def test_a_million_missing_ids_in_a_few_gaps_are_a_few_stretches():
    total = 1_000_030
    held = chain(range(0, 10), range(300_010, 300_020), range(1_000_020, total))
    tracemalloc.start()
    try:
        found = missing(held, total, "the store")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(found) == 1_000_000 and found.gaps == 2
    assert list(found.stretches()) == [range(10, 300_010), range(300_020, 1_000_020)]
    assert found[300_000] == 300_020 and 999_999 in found and 300_015 not in found
    assert peak < 64_000  # a list of the ids alone would take 8 MB, their ints 28 MB more


def test_adjoining_stretches_are_one_and_overlapping_ones_are_refused():
    assert Missing([range(0, 3), range(3, 5), range(7, 8)]).gaps == 2
    with pytest.raises(ValueError, match="ascending"):
        Missing([range(4, 6), range(5, 8)])


class Recording(BagOfWordsEmbedder):
    """The bag-of-words embedder (same name, same index), keeping every text it embedded."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.seen += texts
        return super().embed(texts)


def config(tmp_path, engine):
    return IndexConfig(directory=tmp_path / engine, engine=engine, batch_size=4, chunk_size=300,
                       chunk_overlap=20)


LACKING = sorted(holes(TOTAL)[-1] | {12, 20, 21})  # the first and last ids, runs, single holes


def built(tmp_path, engine):
    """The index of CORPUS on `engine`, and its content hash."""
    index = open_index(CORPUS, config(tmp_path, engine), BagOfWordsEmbedder(), progress=False)
    return index, store.content_hash(index.client.points())


def resumed(tmp_path, engine, whole: str) -> Recording:
    """The index opened again after losing LACKING, checked whole (`whole`, its content hash);
    the embedder that finished it."""
    embedder = Recording()
    index = open_index(CORPUS, config(tmp_path, engine), embedder, progress=False)
    try:
        assert index.client.count() == TOTAL
        assert store.content_hash(index.client.points()) == whole
    finally:
        index.close()
    return embedder


def test_a_local_collection_with_scattered_holes_resumes_with_exactly_those(tmp_path):
    index, whole = built(tmp_path, "local")
    name = index.record()["collection"]
    index.close()
    client = QdrantClient(path=str(tmp_path / "local"))
    try:
        client.delete(name, points_selector=models.PointIdsList(points=LACKING))
        found = store.missing_ids(client, name, TOTAL)
        assert list(found) == sorted(set(range(TOTAL)) - {int(p.id) for p in
                                                           client.scroll(name, limit=TOTAL)[0]})
        assert list(found) == LACKING and found.gaps == 5
    finally:
        client.close()
    embedder = resumed(tmp_path, "local", whole)
    assert sorted(embedder.seen) == sorted(CHUNKS[i].text for i in LACKING)


def test_a_shard_with_scattered_holes_resumes_with_exactly_those(tmp_path):
    from qdrant_edge import UpdateOperation

    index, whole = built(tmp_path, "edge")
    shard, path = index.client.shard, index.client.path
    shard.update(UpdateOperation.delete_points(LACKING))
    shard.flush()
    found = edge._missing(shard, path, TOTAL)
    held = {point.id for point in index.client.points(with_vectors=False)}
    assert list(found) == sorted(set(range(TOTAL)) - held) == LACKING and found.gaps == 5
    index.close()
    record = path.parent / f"{path.name}.json"  # a build stopped after it lost them
    record.write_text(json.dumps({**json.loads(record.read_text()), "complete": False}))
    embedder = resumed(tmp_path, "edge", whole)
    assert sorted(embedder.seen) == sorted(CHUNKS[i].text for i in LACKING)
