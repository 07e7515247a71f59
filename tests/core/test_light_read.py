"""The light read of samples.jsonl (harness/core/light.py, docs/design.md#the-light-read): it
keeps and skips exactly the rows the whole read does, with the same warning; its typed records
read as the mappings they were decoded from and are written back as the same JSON; their fields
are those of the typed records of core/records.py."""

import json
from typing import get_args, get_type_hints

import pytest

from freshrag.core import light, summary
from freshrag.core.files import dumps
from freshrag.core.light_steps import whole_steps
from freshrag.core.records import CallRecord, ChunkRecord, StepRecord, UsageRecord
from freshrag.core.row_check import sample_problem
from freshrag.core.samples import read_samples, read_summaries
from freshrag.core.summary import summary_of
from freshrag.core.types import STEP_KINDS, SYSTEM_KINDS
from tests.support.rows import changed, dropped, good

ROWS = [
    pytest.param(changed("steps.0.kind", "think"), id="step-kind-unknown"),
    pytest.param(changed("steps.0", "search"), id="step-not-an-object"),
    pytest.param(changed("steps.0.calls", True), id="step-calls-boolean"),
    pytest.param(changed("steps.0.calls", None), id="step-calls-null"),
    pytest.param(changed("steps.0.query", 3), id="step-query-number"),
    pytest.param(changed("steps.0.repeated", None), id="step-repeated-null"),
    pytest.param(changed("steps.0.latency_s", "fast"), id="step-latency-text"),
    pytest.param(changed("steps.0.latency_s", 1e400), id="step-latency-infinite"),
    pytest.param(changed("steps.0.retrieved", None), id="step-retrieved-null"),
    pytest.param(dropped("steps.0.retrieved.0.index"), id="chunk-without-index"),
    pytest.param(changed("steps.0.retrieved.0.score", True), id="chunk-score-boolean"),
    pytest.param(changed("steps.0.retrieved.0.score", 1), id="chunk-score-whole"),
    pytest.param(changed("steps.0.retrieved.0.title", None), id="chunk-title-null"),
    pytest.param(changed("steps.0.retrieved.0.extra", [1]), id="chunk-extra-field"),
    pytest.param(changed("steps.0.usage.answer.input", -1), id="step-usage-negative"),
    pytest.param(changed("steps.0.usage.answer.estimated", "maybe"), id="estimated-any"),
    pytest.param(changed("steps.0.note", {"a": 1}), id="step-extra-field"),
    pytest.param(changed("usage.answer.output", 2.5), id="usage-not-whole"),
    pytest.param(changed("usage.answer", 70), id="usage-not-an-object"),
    pytest.param(changed("usage", None), id="usage-null"),
    pytest.param(changed("calls.0.role", 1), id="call-role-number"),
    pytest.param(changed("calls.0.model", ["m"]), id="call-model-list"),
    pytest.param(changed("calls.0.usage", "lots"), id="call-usage-unchecked"),
    pytest.param(changed("calls.0", "a call"), id="call-not-an-object"),
    pytest.param(changed("details.retrieved.0", "Velmora"), id="seen-chunk-not-an-object"),
    pytest.param(dropped("details.retrieved.0.title"), id="seen-chunk-without-title"),
    pytest.param(changed("details.retrieved", {"title": "V"}), id="seen-not-a-list"),
    pytest.param(changed("question", None), id="question-null"),
    pytest.param(changed("hops", 2), id="hops-without-titles"),
    pytest.param(changed("grade.truthfulness", 9), id="grade-off-the-scale"),
    pytest.param(changed("answer", "lone \ud800 surrogate"), id="lone-surrogate"),
    pytest.param(changed("reference", "a passage"), id="grounded"),
    pytest.param(changed("steps", []), id="no-steps"),
    pytest.param(dropped("steps"), id="steps-absent"),
]


@pytest.mark.parametrize("bad", ROWS)
def test_both_reads_keep_and_skip_the_same_rows_with_the_same_warning(bad, tmp_path, capsys):
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in (good("q1"), bad, good("q3"))))
    whole = read_samples(path)
    whole_warnings = capsys.readouterr().err
    lightly = read_summaries(path)
    assert capsys.readouterr().err == whole_warnings
    assert [made.question_id for made in lightly] == [row["question_id"] for row in whole]
    for made, whole_row in zip(lightly, whole):
        assert made.steps == traced(whole_row.get("steps"))
    assert list(whole_steps([made.steps for made in lightly if made.steps is not None])) == [
        known(row.get("steps")) for row in whole if row.get("steps") is not None]
    # and both give the same summaries (core/summary.py), as the whole row's does
    assert lightly == read_summaries(path, light=False) == [summary_of(row) for row in whole]
    assert capsys.readouterr().err == whole_warnings


def known(steps):
    """Steps as the second pass reads them: the fields of StepRecord and of its ChunkRecords."""
    if steps is None:
        return None
    fields, chunk_fields = get_type_hints(StepRecord), get_type_hints(ChunkRecord)
    return [{key: [{k: v for k, v in chunk.items() if k in chunk_fields} for chunk in value]
             if key == "retrieved" else value for key, value in step.items() if key in fields}
            for step in steps]


def traced(steps):
    """Steps as a summary keeps them: kind, repeated and the chunks' titles."""
    if steps is None:
        return None
    return [{key: [{"title": chunk["title"]} for chunk in value] if key == "retrieved" else value
             for key, value in step.items() if key in ("kind", "repeated", "retrieved")}
            for step in steps]


def test_a_skipped_row_is_named_by_file_and_line(tmp_path, capsys):
    path = tmp_path / "samples.jsonl"
    bad = changed("steps.0.kind", "think")
    path.write_text("".join(json.dumps(row) + "\n" for row in (good("q1"), bad)))
    assert [made.question_id for made in read_summaries(path)] == ["q1"]
    assert f"{path}:2: skipped" in capsys.readouterr().err


def test_a_light_summary_holds_only_what_the_tables_read(tmp_path):
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(good()) + "\n")
    [made] = read_summaries(path)
    assert [dict(call) for call in made.calls] == [  # no batch call: no usage kept
        {"role": "answer", "model": "m", "batch": False}] * 2 + [
        {"role": "judge", "model": "j", "batch": False}]
    assert made.calls.models == {"answer": "m", "judge": "j"}
    assert made.retrieved == ({"title": "Velmora"},)
    assert "raw" not in made.grade and made.grade.truthfulness == 5
    assert made.label is None and made.error is None
    step = made.steps[0]
    assert step == {"kind": "search", "repeated": False, "retrieved": [{"title": "Velmora"}]}
    assert made.steps[1] == {"kind": "answer", "repeated": False, "retrieved": []}
    assert made.steps.searched() == [(1, ["Velmora"])]  # each search's place and titles
    assert made.usage["answer"].input == 70 and made.usage["answer"].estimated is False


def test_the_second_pass_gives_the_steps_as_the_row_holds_them(tmp_path):
    path = tmp_path / "samples.jsonl"
    whole = good()
    path.write_text(json.dumps(whole) + "\n")
    [made] = read_summaries(path)
    assert json.loads(dumps(list(whole_steps([made.steps])))) == [whole["steps"]]


def test_a_batch_call_keeps_its_usage_and_other_calls_are_shared_records(tmp_path):
    path = tmp_path / "samples.jsonl"
    batched = good("q2")
    batched["calls"][1]["batch"] = True
    path.write_text(json.dumps(good("q1")) + "\n" + json.dumps(batched) + "\n")
    first, second = (made.calls for made in read_summaries(path))
    assert second[1] == {"role": "answer", "model": "m", "batch": True,
                         "usage": batched["calls"][1]["usage"]}
    assert first[0] is second[0] and first[2] is second[2] and first[1] is not second[1]
    assert "usage" not in first[1]


def test_every_chunk_of_a_title_is_one_shared_record(tmp_path):
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(good("q1")) + "\n" + json.dumps(good("q2")) + "\n")
    first, second = (made.steps[0].retrieved[0] for made in read_summaries(path))
    assert first is second and first.title == "Velmora"


def test_the_second_pass_reads_the_row_each_summary_was_made_from(tmp_path):
    path = tmp_path / "samples.jsonl"
    rows = [changed("steps.0.query", query) for query in ("old", "bad", "new")]
    rows[0]["question_id"] = rows[2]["question_id"] = "q1"  # q1 twice: the last row wins
    rows[1]["steps"][0]["kind"] = "think"  # skipped by both reads
    epoch2 = changed("steps.0.query", "second epoch")
    epoch2.update(question_id="q1", epoch=2)  # read by no table
    text = "".join(json.dumps(row) + "\n" for row in [rows[0], "", rows[1], rows[2], epoch2])
    path.write_text(text.replace('""', ""))  # a blank line: numbered, never a row
    [made] = read_summaries(path)
    [steps] = whole_steps([made.steps])
    assert steps[0]["query"] == "new" and steps == known(rows[2]["steps"])


def test_a_grounded_summary_holds_its_answer_context(tmp_path):
    path = tmp_path / "samples.jsonl"
    grounded = changed("reference", "Nine spans.")
    path.write_text(json.dumps(grounded) + "\n")
    [made] = read_summaries(path)
    assert made == summary_of(grounded) and made.reference == "Nine spans."


def test_the_records_have_the_fields_of_core_records():
    assert set(light.Step.__struct_fields__) == set(get_type_hints(StepRecord))
    assert set(light.Chunk.__struct_fields__) == set(get_type_hints(ChunkRecord))
    assert set(summary.Usage.__struct_fields__) == set(get_type_hints(UsageRecord))
    assert set(light.CALL_SUMMARY) <= set(get_type_hints(CallRecord))
    assert get_args(summary.StepKind) == STEP_KINDS
    assert get_args(summary.SystemKind) == SYSTEM_KINDS


@pytest.mark.parametrize("row, typed", [
    pytest.param(good(), ("usage", "calls", "steps", "grade", "retrieved"), id="typed"),
    pytest.param(changed("reference", "a passage"), ("usage", "steps", "grade", "retrieved"),
                 id="grounded-calls-whole"),
    pytest.param(changed("details.retrieved.0", "Velmora"), ("usage", "calls", "steps", "grade"),
                 id="chunks-left-to-the-check"),
    pytest.param(changed("steps.0.kind", "think"), (), id="refused-none-typed")])
def test_the_light_read_names_the_parts_its_records_typed(row, typed):
    """What the row check leaves to the records (core/row_check.py): exactly what they typed."""
    decoded = light.decode(json.dumps(row))
    assert decoded.typed == typed
    assert all(type(value) is not dict for value in decoded["usage"].values()) == bool(typed)
    # and the check of what the light read decoded names what it names of the whole row
    assert light.light_problem(decoded) == sample_problem(json.loads(json.dumps(row)))
