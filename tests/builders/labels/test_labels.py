"""The labeller (builders/labels/labeller.py) and the label composition and agreement
(builders/labels/report.py), on the scripted fake model."""

import json

import pytest

from freshrag.builders.forced import ReplyError
from freshrag.builders.labels.labeller import (
    Item,
    check_no_foreign_labels,
    label_one,
    label_questions,
    parse_label,
    read_hand_labels,
    write_labels,
)
from freshrag.builders.labels.report import (
    agreement,
    composition,
    label_report,
    render,
    write_report,
)
from freshrag.core.dataset import DatasetError, load_dataset
from freshrag.llm.client import ContextTooLong
from tests.support.fakes import ScriptedLLM, ToolReply


def call(arguments: str, name: str = "assign_label") -> ToolReply:
    return ToolReply(name, arguments)


@pytest.mark.parametrize("values, label", [
    pytest.param({"label": "summary"}, "summary", id="known-label"),
    pytest.param({"label": "reasoning", "why": "x"}, "reasoning", id="extra-field-ignored"),
    pytest.param({"label": "Summary"}, None, id="wrong-case"),
    pytest.param({"label": "unknown"}, None, id="unknown-is-ours-not-the-model's"),
    pytest.param({"label": ["summary"]}, None, id="list"),
    pytest.param({}, None, id="missing"),
])
def test_parse_label(values, label):
    if label is None:
        with pytest.raises(ReplyError, match="label is"):
            parse_label(values)
    else:
        assert parse_label(values) == label


ITEM = Item("q1", "Some article", "When did it happen?")


@pytest.mark.parametrize("replies, label, reason", [
    pytest.param([call('{"label": "fact_single"}')], "fact_single", None, id="first-try"),
    pytest.param([call('{"label": "fact_single"'), call('{"label": "summary"}')], "summary", None,
                 id="broken-json-then-good"),
    pytest.param(["It is a summary question.", call('{"label": "maybe"}')], "unknown",
                 "no assign_label call", id="text-then-bad-label"),
    pytest.param([call("[1]"), call('{"label": 3}')], "unknown", "arguments are list",
                 id="array-then-number"),
    pytest.param([call('{"label": "summary"}', name="other_function"),
                  call('{"label": "summary"}', name="other_function")], "unknown",
                 "no assign_label call", id="wrong-function-twice"),
])
def test_an_unparseable_label_is_unknown_with_every_raw_reply(replies, label, reason):
    llm = ScriptedLLM(replies)
    record = label_one(llm, ITEM, "The article's text.")
    assert record["label"] == label
    assert len(record["raw"]) == len(replies)  # every reply kept, text or arguments
    assert (record["reason"] is None) == (reason is None)
    if reason:
        assert reason in record["reason"]
    assert record["usage"]["input"] == 10 * len(replies)
    assert all(r["role"] == "labeller" and r["tool_choice"] == "assign_label"
               for r in llm.requests)
    assert [r["attempt"] for r in llm.requests] == list(range(len(replies)))


def test_an_article_too_long_even_halved_is_unknown_with_the_reason():
    too_long = ContextTooLong("context length exceeded")
    record = label_one(ScriptedLLM([too_long] * 3), ITEM, "x" * 1000)
    assert record["label"] == "unknown" and "too long" in record["reason"]


def test_labelling_resumes_and_relabels_only_a_changed_question(tmp_path):
    path = tmp_path / "labels.jsonl"
    items = [Item("a", "T", "Q one?"), Item("b", "T", "Q two?")]
    llm = ScriptedLLM([call('{"label": "summary"}'), call('{"label": "reasoning"}')])
    first = label_questions(llm, items, {"T": "text"}, path, concurrency=1)
    assert {k: r["label"] for k, r in first.items()} == {"a": "summary", "b": "reasoning"}
    assert label_questions(ScriptedLLM([]), items, {"T": "text"}, path, 1) == first  # no call
    changed = [items[0], Item("b", "T", "Q two, reworded?")]
    again = label_questions(ScriptedLLM([call('{"label": "fact_single"}')]), changed,
                            {"T": "text"}, path, 1)
    assert again["a"] == first["a"] and again["b"]["label"] == "fact_single"


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_labels_are_written_into_the_questions_keeping_lines_and_fields(tmp_path):
    articles = write(tmp_path / "articles.jsonl", [json.dumps({"title": "T", "content": "c"})])
    questions = write(tmp_path / "questions.jsonl", [
        json.dumps({"title": "T", "question": "Q1?", "extra": [1, 2]}), "",
        json.dumps({"id": "x", "title": "T", "question": "Q2?"})])
    ids = [q.id for q in load_dataset(questions, articles).questions]
    write_labels(questions, {ids[0]: "summary", "x": "unknown"})
    loaded = load_dataset(questions, articles).questions
    assert [q.id for q in loaded] == ids  # line-number ids did not move
    assert [q.label for q in loaded] == ["summary", "unknown"]
    assert json.loads(questions.read_text().splitlines()[0])["extra"] == [1, 2]


def test_a_label_the_labeller_did_not_give_is_never_overwritten(tmp_path):
    questions = write(tmp_path / "questions.jsonl", [
        json.dumps({"title": "T", "question": "Q1?"}),
        json.dumps({"title": "T", "question": "Q2?", "label": "reasoning"})])
    with pytest.raises(DatasetError, match=r"questions.jsonl:2: .*'reasoning'.*--hand-labels"):
        check_no_foreign_labels(questions, tmp_path / "labels.jsonl")
    write(tmp_path / "labels.jsonl", [json.dumps({"id": "q00002", "label": "reasoning"})])
    check_no_foreign_labels(questions, tmp_path / "labels.jsonl")  # ours: fine


@pytest.mark.parametrize("line, message", [
    pytest.param("not json", "not valid JSON", id="not-json"),
    pytest.param('{"id": "a", "label": "easy"}', "field 'label' is 'easy'", id="bad-label"),
    pytest.param('{"id": "zz", "label": "summary"}', "'zz' is not a question", id="unknown-id"),
    pytest.param('{"label": "summary"}', "field 'id'", id="missing-id"),
    pytest.param('{"id": true, "label": "summary"}', "field 'id'", id="boolean-id"),
    pytest.param('{"id": "a", "label": "summary"}', "labelled twice", id="duplicate"),
])
def test_a_bad_hand_label_line_is_named_by_file_and_line(tmp_path, line, message):
    path = write(tmp_path / "hand.jsonl", ['{"id": "a", "label": "summary"}', line])
    with pytest.raises(DatasetError, match=f"hand.jsonl:2: .*{message}"):
        read_hand_labels(path, {"a", "b"})


@pytest.mark.parametrize("field", ["id", "label"])
def test_a_huge_wrong_hand_label_value_is_quoted_cut_to_80_characters(tmp_path, field):
    row = {"id": "a", "label": "summary", field: "x" * 5_000_000}
    path = write(tmp_path / "hand.jsonl", [json.dumps(row)])
    with pytest.raises(DatasetError) as caught:
        read_hand_labels(path, {"a"})
    assert f"'{'x' * 79}" in str(caught.value) and len(str(caught.value)) < 400


def test_hand_labels_read_with_whole_number_ids(tmp_path):
    path = write(tmp_path / "hand.jsonl", ['{"id": 7, "label": "summary"}'])
    assert read_hand_labels(path, {"7"}) == {"7": "summary"}
    with pytest.raises(DatasetError, match="no hand labels"):
        read_hand_labels(write(tmp_path / "empty.jsonl", [""]), {"7"})


def test_agreement_counts_unknown_apart_and_fills_the_confusion_matrix():
    reference = ["fact_single", "summary", "summary", "reasoning", "unanswerable"]
    labeller = ["fact_single", "summary", "fact_single", "unknown", "unanswerable"]
    result = agreement(reference, labeller)
    assert result["n"] == 5 and result["labelled"] == 4 and result["unknown"] == 1
    assert result["agree"] == 3
    counts = dict(zip(result["confusion"]["rows"], result["confusion"]["counts"]))
    assert counts["summary"] == [1, 1, 0, 0, 0] and counts["reasoning"] == [0, 0, 0, 0, 1]
    assert 0 < result["kappa"] < 1
    assert agreement(["summary", "reasoning"], ["summary", "reasoning"])["kappa"] == 1.0


def test_kappa_that_is_undefined_is_none_with_a_note():
    result = agreement(["summary", "summary"], ["summary", "summary"])
    assert result["kappa"] is None and "undefined" in result["kappa_note"]
    assert agreement(["summary"], ["unknown"])["kappa"] is None


def test_the_report_has_composition_agreements_table_and_chart(tmp_path):
    rows = [{"id": "a", "label": "summary", "requested_label": "summary"},
            {"id": "b", "label": "unknown", "requested_label": "reasoning"},
            {"id": "c", "label": "fact_single", "requested_label": None}]
    report = label_report(rows, hand={"a": "summary", "c": "reasoning"})
    assert report["labeller"]["counts"]["unknown"] == 1
    assert report["requested"]["counts"]["none"] == 1
    assert report["agreement_requested"]["n"] == 2  # the question without a request is left out
    assert report["agreement_hand"]["n"] == 2 and report["agreement_hand"]["agree"] == 1
    text = render(report)
    assert "| summary | 1 (33%) | 1 (33%) |" in text and "hand labels (rows)" in text
    json_path, png = write_report(tmp_path, report)
    assert json.loads(json_path.read_text()) == report
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert composition([])["shares"]["summary"] is None


def test_a_general_query_without_a_gold_article_is_not_labelled(tmp_path):
    from freshrag.builders.labels.labeller import label_dataset
    write(tmp_path / "articles.jsonl", [json.dumps({"title": "T", "content": "c"})])
    write(tmp_path / "questions.jsonl", [
        json.dumps({"title": "T", "question": "Q1?", "kind": "fresh", "need": True}),
        json.dumps({"title": None, "question": "Hello!", "kind": "general", "need": False})])
    rows = label_dataset(ScriptedLLM([call('{"label": "summary"}')]), tmp_path, 1)
    assert [row["label"] for row in rows] == ["summary"]
    loaded = load_dataset(tmp_path / "questions.jsonl", tmp_path / "articles.jsonl").questions
    assert [q.label for q in loaded] == ["summary", None]
