"""JSON Lines files after a kill: a whole last row is kept (and given its newline), a torn one is
cut off; the repair reads only the file's last line, however large the file."""

import json
import tracemalloc

import pytest

from freshrag.core.jsonl import JsonlWriter, read_jsonl
from tests.support.runs import run_cli

ROW = json.dumps({"question_id": "q1", "system": "baseline", "answer": "Zwölf Brücken"},
                 ensure_ascii=False)
LONG = json.dumps({"question_id": "q2", "answer": "x" * 200_000})  # longer than a read block


@pytest.mark.parametrize("content, repaired", [
    pytest.param(f"{ROW}\n{ROW}", f"{ROW}\n{ROW}\n", id="whole-last-row-without-newline"),
    pytest.param(ROW, f"{ROW}\n", id="only-row-without-newline"),
    pytest.param(f"{ROW}\n{ROW[:25]}", f"{ROW}\n", id="torn-last-row"),
    pytest.param(ROW[:25], "", id="torn-only-row"),
    pytest.param(f"{ROW}\n{ROW[:-2]}", f"{ROW}\n", id="torn-just-before-the-brace"),
    pytest.param(f"{ROW}\n", f"{ROW}\n", id="clean"),
    pytest.param("", "", id="empty"),
    pytest.param(f"{ROW}\n{LONG}", f"{ROW}\n{LONG}\n", id="long-whole-last-row"),
    pytest.param(f"{ROW}\n{LONG[:150_000]}", f"{ROW}\n", id="long-torn-last-row"),
    pytest.param(f"{LONG}\n{LONG[:150_000]}", f"{LONG}\n", id="long-rows-torn"),
])
def test_the_writer_keeps_whole_rows_and_cuts_torn_ones(tmp_path, content, repaired):
    path = tmp_path / "rows.jsonl"
    path.write_text(content, encoding="utf-8")
    writer = JsonlWriter(path)
    writer.write({"question_id": "next"})
    writer.close()
    assert path.read_text(encoding="utf-8") == repaired + '{"question_id": "next"}\n'


def test_a_row_torn_inside_a_multibyte_character_is_cut(tmp_path):
    path = tmp_path / "rows.jsonl"
    data = f"{ROW}\n{ROW}".encode()
    path.write_bytes(data[:data.rindex("ö".encode()) + 1])  # half of the ö
    JsonlWriter(path).close()
    assert path.read_text(encoding="utf-8") == f"{ROW}\n"


@pytest.mark.parametrize("content, rows", [
    pytest.param(f"{ROW}\n{ROW}", 2, id="whole-last-row-without-newline"),
    pytest.param(f"{ROW}\n{ROW[:25]}", 1, id="torn-last-row"),
    pytest.param(f"{ROW}\n\n{ROW}\n", 2, id="blank-line"),
])
def test_reading_agrees_with_the_repair(tmp_path, content, rows):
    path = tmp_path / "rows.jsonl"
    path.write_text(content, encoding="utf-8")
    assert len(read_jsonl(path)) == rows
    JsonlWriter(path).close()
    assert len(read_jsonl(path)) == rows


def test_a_broken_line_before_the_last_is_an_error_naming_it(tmp_path):
    from freshrag.core.jsonl import ResultsError
    path = tmp_path / "rows.jsonl"
    path.write_text(f"{ROW}\n{ROW[:25]}\n{ROW}\n", encoding="utf-8")
    with pytest.raises(ResultsError, match=r"rows.jsonl:2: not valid JSON"):
        read_jsonl(path)


def test_the_repair_reads_the_last_line_only(tmp_path):
    path = tmp_path / "rows.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        for _ in range(40_000):  # about 4 MB
            handle.write(ROW + "\n")
        handle.write(ROW[:30])
    size = path.stat().st_size
    tracemalloc.start()
    try:
        JsonlWriter(path).close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < size / 10, (peak, size)
    assert path.stat().st_size == size - 30


def test_a_whole_last_row_without_newline_is_neither_lost_nor_run_again(tmp_path, fake):  # noqa: F811
    assert run_cli(tmp_path) == 0
    samples = tmp_path / "run" / "samples.jsonl"
    samples.write_text(samples.read_text().rstrip("\n"))  # killed between the row and its newline
    fake.reset_counts()
    assert run_cli(tmp_path, "--no-cache") == 0
    assert fake.calls == 0
    lines = samples.read_text().split("\n")
    assert lines[-1] == "" and len(lines) == 7  # six rows, each on its own line
    assert len({(json.loads(ln)["question_id"], json.loads(ln)["system"]) for ln in lines[:-1]}) == 6


def test_replace_jsonl_writes_the_whole_file_or_leaves_the_old_one(tmp_path):
    from freshrag.core.jsonl import replace_jsonl
    path = tmp_path / "questions.jsonl"
    assert replace_jsonl(path, [{"q": "é"}, {"q": 2}]) == 2
    assert path.read_text(encoding="utf-8") == '{"q": "é"}\n{"q": 2}\n'

    def broken():
        yield {"q": 3}
        raise RuntimeError("killed mid-write")
    with pytest.raises(RuntimeError):
        replace_jsonl(path, broken())
    assert path.read_text(encoding="utf-8") == '{"q": "é"}\n{"q": 2}\n'  # the old file, whole


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_rows_never_hold_nan_or_infinity(tmp_path, value):
    from freshrag.core.jsonl import replace_jsonl
    path = tmp_path / "samples.jsonl"
    path.write_text(f"{ROW}\n", encoding="utf-8")
    writer = JsonlWriter(path)
    with pytest.raises(ValueError, match="not JSON compliant"):
        writer.write({"question_id": "q2", "latency_s": value})
    writer.close()
    with pytest.raises(ValueError, match="not JSON compliant"):
        replace_jsonl(tmp_path / "questions.jsonl", [{"q": value}])
    assert path.read_text(encoding="utf-8") == f"{ROW}\n"
    assert not (tmp_path / "questions.jsonl").exists()
