"""A local index damaged since it was written (docs/faults.md#files-freshrag-reopens): embedded
Qdrant's folder with its meta.json, a collection's storage.sqlite or one pickled point cut,
garbled or replaced is refused in one line naming the folder, and built again once removed."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing

import pytest

from freshrag.core.errors import UserError
from freshrag.retrieval.config import IndexConfig, RetrievalError
from freshrag.retrieval.index import open_index
from tests.support.fakes import BagOfWordsEmbedder
from tests.support.systems import CORPUS

QUERY = "which comet did the shepherds see at dawn"


def config(directory):
    return IndexConfig(directory=directory, batch_size=4, chunk_size=300, chunk_overlap=20)


def top_title(directory):
    index = open_index(CORPUS, config(directory), BagOfWordsEmbedder(), progress=False)
    try:
        return index.retrieve(QUERY)[0].title
    finally:
        index.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    directory = tmp_path_factory.mktemp("built") / "index"
    assert top_title(directory) == "Kettering Comet"
    return directory


def storage(directory):
    [found] = directory.glob("collection/*/storage.sqlite")
    return found


def set_first_point(directory, value):
    with closing(sqlite3.connect(storage(directory))) as db:
        db.execute("UPDATE points SET point = ? WHERE rowid = (SELECT min(rowid) FROM points)",
                   (value,))
        db.commit()


def replace_by_folder(path):
    path.unlink()
    path.mkdir()


DAMAGES = [
    pytest.param(lambda d: (d / "meta.json").write_bytes(b"\x00garbage"), id="meta-garbled"),
    pytest.param(lambda d: (d / "meta.json").write_bytes((d / "meta.json").read_bytes()[:100]),
                 id="meta-cut"),
    pytest.param(lambda d: (d / "meta.json").write_text(""), id="meta-empty"),
    pytest.param(lambda d: (d / "meta.json").write_text("[]"), id="meta-a-list"),
    pytest.param(lambda d: (d / "meta.json").write_text('{"collections": 5}'),
                 id="meta-wrong-shape"),
    pytest.param(lambda d: replace_by_folder(d / "meta.json"), id="meta-a-folder"),
    pytest.param(lambda d: storage(d).write_bytes(b"not a database" * 100), id="store-garbled"),
    pytest.param(lambda d: storage(d).write_bytes(storage(d).read_bytes()[:30_000]),
                 id="store-cut"),
    pytest.param(lambda d: replace_by_folder(storage(d)), id="store-a-folder"),
    pytest.param(lambda d: set_first_point(d, b"\x80\x04\x95garbage"), id="point-cut"),
    pytest.param(lambda d: set_first_point(d, b""), id="point-empty"),
]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_index_is_refused_naming_its_folder_and_rebuilt_once_removed(tmp_path, built,
                                                                               damage):
    directory = tmp_path / "index"
    shutil.copytree(built, directory)
    damage(directory)
    with pytest.raises(RetrievalError) as raised:
        top_title(directory)
    message = str(raised.value)
    assert message.startswith(f"embedded Qdrant at {directory} cannot be read (")
    assert message.endswith("delete the folder and the index is built again, or give another "
                            "--index-dir") and "\n" not in message
    assert isinstance(raised.value, UserError)
    shutil.rmtree(directory)
    assert top_title(directory) == "Kettering Comet"


def test_an_index_without_its_meta_or_with_an_empty_store_is_built_again(tmp_path, built):
    for damage in (lambda d: (d / "meta.json").unlink(), lambda d: storage(d).write_bytes(b"")):
        directory = tmp_path / "index"
        shutil.rmtree(directory, ignore_errors=True)
        shutil.copytree(built, directory)
        damage(directory)
        assert top_title(directory) == "Kettering Comet"
