"""The statements style's parts on the scripted fake model: `--labels` and `--min-critique`
parsing, the plan, statement extraction with malformed replies, a slot's candidate, the critique
filter."""

import argparse
import json
from collections import Counter
from dataclasses import dataclass

import pytest

from freshrag.builders.forced import ReplyError
from freshrag.builders.styles.critiques import drop_reason, parse_critique, parse_thresholds
from freshrag.builders.styles.statement_questions import write_candidate
from freshrag.builders.styles.statements import (
    Slot,
    extract,
    parse_label_spec,
    pick_statement,
    plan,
)
from tests.support.fakes import ScriptedLLM, ToolReply


@pytest.mark.parametrize("text, values, shares", [
    pytest.param("fact_single=2,summary=1", (("fact_single", 2), ("summary", 1)), False,
                 id="counts"),
    pytest.param(" reasoning = 3 ", (("reasoning", 3),), False, id="spaces"),
    pytest.param("fact_single=0.5,unanswerable=0.5", (("fact_single", .5), ("unanswerable", .5)),
                 True, id="shares"),
    pytest.param("fact_single=1.0", (("fact_single", 1),), True, id="one-share"),
    pytest.param("summary=0.5,reasoning=1", (("summary", .5), ("reasoning", 1)), None,
                 id="mixed-is-shares-not-adding-to-1"),
    pytest.param("fact_single=0.3,summary=0.3", None, None, id="shares-below-1"),
    pytest.param("easy=2", None, None, id="unknown-label"),
    pytest.param("unknown=2", None, None, id="unknown-is-not-requestable"),
    pytest.param("summary=1,summary=2", None, None, id="duplicate"),
    pytest.param("summary=0,reasoning=0", None, None, id="zero-questions"),
    pytest.param("summary=-1", None, None, id="negative"),
    pytest.param("summary", None, None, id="no-number"),
    pytest.param("", None, None, id="empty"),
])
def test_parse_label_spec(text, values, shares):
    if shares is None:
        with pytest.raises(argparse.ArgumentTypeError, match="got"):
            parse_label_spec(text)
    else:
        spec = parse_label_spec(text)
        assert spec.values == values and spec.shares == shares


@pytest.mark.parametrize("spec, questions, totals", [
    pytest.param("fact_single=0.5,summary=0.25,reasoning=0.25", 3,
                 {"fact_single": 1, "summary": 1, "reasoning": 1}, id="largest-remainder"),
    pytest.param("fact_single=0.25,summary=0.25,reasoning=0.25,unanswerable=0.25", 10,
                 {"fact_single": 3, "summary": 3, "reasoning": 2, "unanswerable": 2},
                 id="ties-in-label-order"),
    pytest.param("summary=4,reasoning=1", 99, {"summary": 4, "reasoning": 1}, id="counts"),
])
def test_totals(spec, questions, totals):
    result = parse_label_spec(spec).totals(questions)
    assert result == totals
    if parse_label_spec(spec).shares:
        assert sum(result.values()) == questions


def test_the_plan_deals_every_requested_label_to_the_articles():
    spec = parse_label_spec("fact_single=3,summary=2,reasoning=2,unanswerable=1")
    slots = plan(["A", "B", "C"], spec, 1, seed=5, stage="A_f")
    assert Counter(slot.label for slot in slots) == {"fact_single": 3, "summary": 2,
                                                     "reasoning": 2, "unanswerable": 1}
    assert len({slot.id for slot in slots}) == 8
    assert Counter(slot.title for slot in slots) == {"A": 3, "B": 3, "C": 2}
    for slot in slots:  # nth counts the article's earlier questions of the same label
        same = [s for s in slots if (s.title, s.label) == (slot.title, slot.label)]
        assert slot.nth == same.index(slot)
    assert plan(["A", "B", "C"], spec, 1, seed=5, stage="A_f") == slots  # seeded
    assert plan([], spec, 1, 5, "A_f") == []


def theme(text="Subject of it."):
    return ToolReply("report_theme", json.dumps({"theme": text}))


def statements(*items):
    return ToolReply("report_statements", json.dumps({"statements": list(items)}))


def test_extraction_asks_four_steps_and_keeps_each_record():
    llm = ScriptedLLM([theme(), statements("F1.", "F2.", " F1."), statements("S1."),
                       statements("C1.", "C2.")])
    record = extract(llm, "T", "Article text.")
    assert record["theme"] == "Subject of it." and record["facts"] == ["F1.", "F2."]
    assert record["summaries"] == ["S1."] and record["conclusions"] == ["C1.", "C2."]
    assert all(step["reason"] is None for step in record["steps"].values())
    assert [r["tool_choice"] for r in llm.requests] == [
        "report_theme", "report_statements", "report_statements", "report_statements"]
    assert "F1." in llm.requests[2]["messages"][1]["content"]  # summaries are made of the facts
    assert all(r["role"] == "builder" and r["temperature"] == 0 for r in llm.requests)


def test_facts_that_cannot_be_parsed_leave_the_derived_steps_unasked():
    llm = ScriptedLLM([ToolReply("report_theme", "{broken"), "no call at all",
                       statements(), statements(5)])
    record = extract(llm, "T", "Article text.")
    assert record["theme"] is None and "invalid JSON" in record["steps"]["theme"]["reason"]
    assert record["facts"] == [] and "not a non-empty list" in record["steps"]["facts"]["reason"]
    assert "no report_theme call" in record["steps"]["theme"]["reason"]
    assert record["steps"]["facts"]["raw"] == ['{"statements": []}', '{"statements": [5]}']
    assert record["steps"]["summaries"]["reason"].startswith("not asked")
    assert record["summaries"] == record["conclusions"] == []
    assert len(llm.requests) == 4 and not llm.script


@dataclass(frozen=True)
class Config:
    questions_from: str = "A_f"
    seed: int = 0


RECORD = {"theme": "About T.", "facts": ["F1.", "F2."], "summaries": [], "conclusions": ["C1."],
          "steps": {"summaries": {"reason": "rate_question said nothing"}}}
ARTICLE = {"content": "Article text.", "revision_id": 9}


def question(text="What is it?"):
    return ToolReply("write_question", json.dumps({"question": text}))


def ratings(**values):
    base = {"stand_alone": 4, "specificity": 4, "question_grounding": 4, "answer_grounding": 4}
    return ToolReply("rate_question", json.dumps(base | values))


def test_a_candidate_has_its_statement_question_and_critique():
    llm = ScriptedLLM([question(), ratings(specificity=2)])
    row = write_candidate(llm, Slot("A_f-00000-0", 0, "T", 0, "reasoning", 0), ARTICLE, RECORD,
                          Config())
    assert row["status"] == "ok" and row["question"] == "What is it?"
    assert row["reference"] == "C1." and row["requested_label"] == "reasoning"
    assert row["critique"]["specificity"] == 2 and row["revision_id"] == 9
    assert "C1." in llm.requests[0]["messages"][1]["content"]
    assert llm.requests[0]["temperature"] == 1.0 and row["usage"]["input"] == 20


def test_no_statement_of_the_wanted_kind_fails_without_a_call():
    llm = ScriptedLLM([])
    row = write_candidate(llm, Slot("x", 0, "T", 0, "summary", 0), ARTICLE, RECORD, Config())
    assert row["status"] == "failed" and row["failure"] == "no_statements"
    assert "rate_question said nothing" in row["reason"] and row["question"] is None


def test_an_unparseable_question_fails_with_its_raw_replies_and_no_critique():
    llm = ScriptedLLM([question(""), ToolReply("write_question", '{"question": ')])
    row = write_candidate(llm, Slot("x", 0, "T", 0, "fact_single", 0), ARTICLE, RECORD, Config())
    assert row["failure"] == "no_question" and len(row["question_raw"]) == 2
    assert row["critique"] is None and row["usage"]["input"] == 20


def test_an_unanswerable_question_is_written_from_the_article_and_has_no_reference():
    llm = ScriptedLLM([question("Who will win next year?"), ToolReply("rate_question", "{}"),
                       ToolReply("rate_question", '{"stand_alone": true}')])
    row = write_candidate(llm, Slot("x", 0, "T", 1, "unanswerable", 1), ARTICLE, RECORD, Config())
    assert row["status"] == "ok" and row["reference"] is None
    assert "Article text." in llm.requests[0]["messages"][1]["content"]
    assert llm.requests[0]["attempt"] == 2  # its second unanswerable slot: a fresh sample
    assert row["critique"] is None and "stand_alone" in row["critique_reason"]


def test_statements_are_taken_in_turn():
    record = {"facts": ["F1.", "F2.", "F3."], "steps": {}}
    picked = [pick_statement(record, Slot("x", 0, "T", i, "fact_single", i), 1)[0]
              for i in range(3)]
    assert sorted(picked) == ["F1.", "F2.", "F3."]


@pytest.mark.parametrize("text, thresholds", [
    pytest.param("3", tuple((name, 3) for name in ("stand_alone", "specificity",
                                                   "question_grounding", "answer_grounding")),
                 id="all"),
    pytest.param("stand_alone=4, specificity=2", (("stand_alone", 4), ("specificity", 2)),
                 id="some"),
    pytest.param("6", None, id="out-of-range"),
    pytest.param("clarity=3", None, id="unknown-criterion"),
    pytest.param("stand_alone=3,stand_alone=4", None, id="twice"),
    pytest.param("stand_alone=0", None, id="zero"),
])
def test_parse_thresholds(text, thresholds):
    if thresholds is None:
        with pytest.raises(argparse.ArgumentTypeError, match="criterion=rating"):
            parse_thresholds(text)
    else:
        assert parse_thresholds(text) == thresholds


@pytest.mark.parametrize("values", [
    pytest.param({"stand_alone": 6}, id="above-5"),
    pytest.param({"specificity": 2.5}, id="fraction"),
    pytest.param({"answer_grounding": "4"}, id="string"),
    pytest.param({"question_grounding": None}, id="missing"),
])
def test_a_critique_outside_the_scale_is_refused(values):
    full = {"stand_alone": 3, "specificity": 3, "question_grounding": 3, "answer_grounding": 3}
    with pytest.raises(ReplyError, match="not a whole number from 1 to 5"):
        parse_critique(full | values)


def test_drop_reasons():
    low = {"stand_alone": 5, "specificity": 5, "question_grounding": 1, "answer_grounding": 2}
    assert drop_reason(low, (), False) is None  # no threshold: everything kept
    assert drop_reason(low, parse_thresholds("3"), False) == "critique_question_grounding"
    assert drop_reason(low, parse_thresholds("3"), True) is None  # unanswerable by design
    assert drop_reason(None, parse_thresholds("1"), False) == "critique_unscored"
    assert drop_reason(low, parse_thresholds("answer_grounding=3"), False) == \
        "critique_answer_grounding"
