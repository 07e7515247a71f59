"""Files freshrag reopens get the checks of an input (builders/records.py): a build's record
files and a mix's mix.json, damaged since they were written, end the command in one line naming
the file, the line and the field, never a traceback."""

from __future__ import annotations

import json

import pytest

from freshrag.builders.records import SHAPES, read_document, read_records
from freshrag.cli.main import main
from freshrag.core.jsonl import ResultsError
from tests import WIKIRAG
from tests.support.builds import build
from tests.support.datasets import write_dataset
from tests.support.wikidump import article_pages, write_dump

DAMAGES = [
    pytest.param(lambda row, field: {k: v for k, v in row.items() if k != field},
                 "no {field!r}, which every row of this file has", id="field-missing"),
    pytest.param(lambda row, field: {**row, field: 7}, "{field!r} is 7, not", id="a-number"),
    pytest.param(lambda row, field: {**row, field: None}, "{field!r} is None, not",
                 id="null"),
    pytest.param(lambda row, field: {**row, field: True}, "{field!r} is True, not", id="true"),
]


@pytest.mark.parametrize("damage, says", DAMAGES)
@pytest.mark.parametrize("name, field", [("sample.jsonl", "title"), ("articles.jsonl", "content"),
                                         ("articles.jsonl", "title"),
                                         ("recency.jsonl", "title")])
def test_a_resumed_build_names_a_damaged_record(tmp_path, fake, capsys, name, field, damage,
                                                says):
    dump = write_dump(tmp_path / "wiki.xml", list(article_pages(WIKIRAG / "articles.jsonl", 20)))
    assert build(tmp_path, dump) == 0
    out = tmp_path / "dataset"
    path = out / name
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows[1] = damage(rows[1], field)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    for listed in [*out.glob("*.txt"), out / "manifest.json"]:  # every stage reads its records
        listed.unlink()
    assert build(tmp_path, dump) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith(f"freshrag: error: {path}:2: {says.format(field=field)}"), err
    assert err.endswith("restore it, or write into a new --out")


@pytest.mark.parametrize("name", list(SHAPES))
def test_every_record_file_refuses_a_row_without_a_field_it_reads(tmp_path, name):
    shape = SHAPES[name]
    whole = {field: kinds[0]() if kinds[0] is not type(None) else None
             for field, kinds in shape.items()}
    path = tmp_path / name
    for field in shape:
        broken = {k: v for k, v in whole.items() if k != field}
        path.write_text(json.dumps(whole) + "\n" + json.dumps(broken) + "\n", encoding="utf-8")
        with pytest.raises(ResultsError, match=rf"^{path}:2: no '{field}'"):
            read_records(path)
    path.write_text(json.dumps(whole) + "\n", encoding="utf-8")
    assert read_records(path) == [whole]


@pytest.mark.parametrize("text, says", [
    pytest.param('{"shares": ', ":1: not valid JSON", id="cut"),
    pytest.param("[1, 2]\n", ": expected a JSON object, got list", id="a-list"),
    pytest.param(b'{"seed": "\xff"}', "not UTF-8", id="not-utf-8"),
    pytest.param("[" * 100_000 + "]" * 100_000, "", id="nested-deep"),
])
def test_a_damaged_mix_record_is_named_by_freshrag_mix(tmp_path, capsys, text, says):
    write_dataset(tmp_path / "dataset", fields=lambda i: {"kind": "fresh"})
    argv = ["mix", str(tmp_path / "dataset"), "--fresh", "1", "--n", "1", "--out",
            str(tmp_path / "mixed")]
    assert main(argv) == 0
    record = tmp_path / "mixed" / "mix.json"
    record.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ResultsError):
        read_document(record)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"freshrag: error: {record}") and says in err and err.count("\n") == 1
