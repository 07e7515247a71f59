"""Reading a corpus (harness/retrieval/passages.py): its manifest checked, its passages in
batches; the corpus is written by hand here, as builders/corpus writes one."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from freshrag.core.files import write_json
from freshrag.retrieval.passages import (
    Corpus,
    CorpusError,
    file_sha256,
    passage_id,
    read_corpus_manifest,
    shard_path,
)


def corpus(directory, shards=2, rows=5, complete=True):
    (directory / "shards").mkdir(parents=True)
    records = []
    for s in range(shards):
        name = f"shard-{s:05d}"
        table = pa.table({"id": [passage_id(s + 1, c) for c in range(rows)],
                          "title": [f"Page {s}"] * rows, "chunk": list(range(rows)),
                          "text": [f"Title: Page {s}\n{c}" for c in range(rows)],
                          "created": ["2024-01-01T00:00:00Z"] * rows})
        pq.write_table(table, shard_path(directory, name))
        path = shard_path(directory, name)
        records.append({"name": name, "sha256": file_sha256(path),
                        "bytes": path.stat().st_size})
    write_json(directory / "manifest.json", {"kind": "corpus", "format": 1, "complete": complete,
                                             "shards": records,
                                             "counts": {"passages": shards * rows}})
    return directory


def test_passages_come_in_batches_within_a_shard(tmp_path):
    read = Corpus(corpus(tmp_path))
    batches = list(read.batches(3))
    assert [len(b) for b in batches] == [3, 2, 3, 2] and len(read) == 10
    assert batches[2].ids[0] == 200_000 and batches[2].titles[0] == "Page 1"
    assert batches[1].chunks == [3, 4] and batches[0].created[0] == "2024-01-01T00:00:00Z"
    assert [b.texts for b in read.batches(10, shards=["shard-00001"])][0][0] == "Title: Page 1\n0"


def test_an_unfinished_build_is_refused(tmp_path):
    with pytest.raises(CorpusError, match="has not finished"):
        Corpus(corpus(tmp_path, complete=False))
    assert read_corpus_manifest(tmp_path, complete=False)["complete"] is False


def test_a_shard_listed_twice_is_refused(tmp_path):
    corpus(tmp_path)
    manifest = read_corpus_manifest(tmp_path)
    manifest["shards"].append(manifest["shards"][0])
    write_json(tmp_path / "manifest.json", manifest)
    with pytest.raises(CorpusError, match="shard shard-00000 is written twice"):
        Corpus(tmp_path)


def test_a_changed_shard_is_refused_when_verified(tmp_path):
    corpus(tmp_path)
    path = shard_path(tmp_path, "shard-00001")
    data = bytearray(path.read_bytes())
    data[10] ^= 1
    path.write_bytes(bytes(data))
    Corpus(tmp_path)  # same size: only the hash tells
    with pytest.raises(CorpusError, match="shard-00001 differs"):
        Corpus(tmp_path, verify=True)


def test_no_corpus_is_named(tmp_path):
    with pytest.raises(CorpusError, match="no corpus here"):
        Corpus(tmp_path)
