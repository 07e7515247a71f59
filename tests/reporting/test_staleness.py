"""Stale answers to changed facts: the staleness scorer's verdicts against a scripted model that
answers the value then, the value now, something else or "I don't know" (matched without a
model for numbers and names, the judge shown both values otherwise), and the staleness tables
made from them (shares with intervals, fixed, memory over context, paired comparisons), and
again per value of a question field (`--by premise`, `--by change`: each value's tables count only
its questions); a report without changed-fact questions has no staleness table at all, not even
in the line of empty tables."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from freshrag.core.summary import AnswerSummary
from freshrag.core.types import Question
from freshrag.reporting import breakdown, staleness
from freshrag.reporting.answers import Answers
from freshrag.reporting.known import known_decisions
from freshrag.reporting.render.html import render_html
from freshrag.reporting.sections import nothing_to_show
from freshrag.reporting.table import tables
from freshrag.scoring import SCORERS
from freshrag.scoring.base import ScoreInput
from freshrag.scoring.staleness import NOT_CHANGED, Staleness
from tests.support.dom import parse
from tests.support.fakes import ScriptedLLM, ToolReply
from tests.support.rows import analysis_row, summaries, summary

QUESTION = Question("q1", "What is the current population total of Springfield?", "Springfield",
                    reference="5,020", value_then="4,812", change="slow")
STATUS = Question("q2", "What is the current status of Old Mill?", "Old Mill",
                  reference="converted into a museum of local history and crafts",
                  value_then="an abandoned ruin closed to visitors since the fire")


def judged(verdict: str, reason: str = "it says so") -> ToolReply:
    return ToolReply("classify_staleness", json.dumps({"verdict": verdict, "reason": reason}))


def scored(answer: str, script=(), question: Question = QUESTION, context: str | None = None):
    llm = ScriptedLLM(list(script))
    result = SCORERS["staleness"]().score(llm, ScoreInput(question, answer, context))
    assert not llm.script, "every scripted reply was asked for"
    return result, llm


@pytest.mark.parametrize("answer, script, question, verdict, source", [
    pytest.param("Springfield has 5,020 inhabitants.", [], QUESTION, "current", "match",
                 id="value-now"),
    pytest.param("About 4812 people live there.", [], QUESTION, "stale", "match",
                 id="value-then"),
    pytest.param("Roughly 7,000.", [], QUESTION, "other", "match", id="something-else"),
    pytest.param("I don't know.", [], QUESTION, "abstained", "pattern", id="i-dont-know"),
    pytest.param("", [], QUESTION, "abstained", "pattern", id="empty"),
    pytest.param("It grew from 4,812 to 5,020.", [judged("current")], QUESTION, "current",
                 "judge", id="both-values-to-the-judge"),
    pytest.param("It is a ruin nobody may enter.", [judged("stale")], STATUS, "stale", "judge",
                 id="long-values-to-the-judge"),
])
def test_each_answer_gets_its_verdict(answer, script, question, verdict, source):
    result, llm = scored(answer, script, question)
    assert result.status == "scored"
    assert result.details["verdict"] == verdict and result.details["source"] == source
    assert result.metrics == {name: float(name == verdict) for name in Staleness.metrics}
    assert result.details["reason"]
    if script:  # the judge saw both values
        shown = llm.requests[0]["messages"][-1]["content"]
        assert question.value_then in shown and question.reference in shown
        assert llm.requests[0]["role"] == "judge"


@pytest.mark.parametrize("reply, reason", [
    pytest.param(judged("maybe"), "verdict must be one of", id="unknown-verdict"),
    pytest.param(ToolReply("classify_staleness", "{broken"), "invalid JSON", id="broken-json"),
    pytest.param("It is current.", "no classify_staleness call", id="text-reply"),
])
def test_a_judge_reply_that_is_no_verdict_leaves_the_answer_unscored(reply, reason):
    result, _ = scored("It is a ruin.", [reply], STATUS)
    assert result.status == "unscored" and reason in result.reason


def test_a_question_without_a_value_then_is_not_applicable():
    result, _ = scored("5,020", question=Question("q", "?", "T", reference="5,020"))
    assert (result.status, result.reason) == ("not_applicable", NOT_CHANGED)


def test_the_context_is_checked_for_both_values():
    result, _ = scored("4,812", context="Springfield had 5,020 inhabitants in 2024.")
    assert result.details["new_in_context"] is True and result.details["old_in_context"] is False
    assert scored("4,812")[0].details["new_in_context"] is None


# The scripted answers of three systems to twelve changed facts (population n: then 100+n,
# now 200+n): the baseline answers the old value, naive the new one but for two (one of them
# with the new value retrieved), the agent something else or "I don't know" at times.
N = 12


def answers(system: str, n: int) -> tuple[str, bool]:
    if system == "baseline":
        return (f"{100 + n}" if n < 10 else "I don't know."), False
    if system == "naive":
        return (f"{100 + n}" if n in (0, 1) else f"It is {200 + n}."), n != 1
    return (f"{200 + n}" if n % 3 else "Maybe 7."), True


def rows_of(systems=("baseline", "naive", "agent")) -> list[AnswerSummary]:
    return [scored_row(system, n, *answers(system, n)) for system in systems for n in range(N)]


def scored_row(system: str, n: int, answer: str, retrieved: bool, premise: str | None = None,
               script=(), change: str | None = None) -> AnswerSummary:
    """Question n's row of `system`, scored by the staleness scorer (no call where the values
    match, else the judge's `script`), its question's `premise` and `change` on the row."""
    question = Question(f"q{n}", "What is the current population?", "T",
                        reference=f"{200 + n}", value_then=f"{100 + n}", premise=premise)
    context = f"The population is {200 + n}." if retrieved else None
    llm = ScriptedLLM(list(script))
    result = Staleness().score(llm, ScoreInput(question, answer, context))
    assert not llm.script, "every scripted verdict was asked for"
    row = analysis_row(f"q{n}", system, retrieved=["T"] if retrieved else None)
    row["scores"] = {"staleness": {"scorer": "staleness", **asdict(result), "usage": {},
                                   "models": {}}}  # as a report attaches it (scoring/store.py)
    return summary({**row, "premise": premise, "change": change})


def test_the_table_counts_each_verdict_per_system_with_intervals():
    table = {row["system"]: row for row in staleness.analyse(Answers(rows_of()))["staleness"]}
    base, naive, agent = table["baseline"], table["naive"], table["agent"]
    assert base["answers"] == N and base["stale"][0] == round(10 / N, 4)
    assert base["abstained"][0] == round(2 / N, 4) and base["current"][0] == 0
    low, high = base["stale"][1:]
    assert low < 10 / N < high
    assert naive["current"][0] == round(10 / N, 4) and naive["stale"][0] == round(2 / N, 4)
    assert agent["other"][0] == round(4 / N, 4) and agent["current"][0] == round(8 / N, 4)
    # of the baseline's ten stale answers, naive gave the value now to eight, the agent to six
    assert naive["fixed"][0] == 0.8 and agent["fixed"][0] == 0.6 and base["fixed"] is None
    # naive had the value now in its context for eleven answers and still gave the old one once
    assert naive["new_retrieved"] == N - 1
    assert naive["memory_over_context"][0] == round(1 / (N - 1), 4)
    assert base["new_retrieved"] == 0 and base["memory_over_context"] is None


def test_paired_comparisons_of_the_stale_share_are_holm_adjusted():
    paired = staleness.analyse(Answers(rows_of()))["staleness_paired"]
    pairs = {(row["a"], row["b"]): row for row in paired}
    assert len(pairs) == 3
    first = pairs[("baseline", "naive")]
    assert first["questions"] == N and first["difference"] == round((10 - 2) / N, 4)
    assert first["p_holm"] >= first["p_value"]
    assert first["interval"][0] > 0


def test_a_decider_is_judged_against_what_the_baseline_knew_of_the_changed_facts():
    """The baseline knows the value now of q0-q3; `boolean` retrieves for the even questions
    and gives the value now when it does, the value then when it does not: the table of every
    question set (reporting/known.py), its known from the staleness verdicts."""
    rows = [scored_row("baseline", n, f"{200 + n}" if n < 4 else f"{100 + n}", False)
            for n in range(N)]
    rows += [scored_row("boolean", n, f"{200 + n}" if n % 2 == 0 else f"{100 + n}", n % 2 == 0)
             for n in range(N)]
    [boolean] = known_decisions(Answers(rows))
    assert (boolean["system"], boolean["questions"], boolean["known"], boolean["retrieved"]) == (
        "boolean", N, 4, 6)
    assert boolean["precision"][0] == round(4 / 6, 4)  # q4, q6, q8, q10 were needed
    assert boolean["recall"][0] == round(4 / 8, 4)
    assert boolean["wasted_tokens"] == 2 * 110  # q0 and q2: known, retrieved all the same
    assert boolean["stale_unretrieved"] == 6  # every odd question
    assert known_decisions(Answers(rows_of())) == []  # no decider
    assert "staleness_decisions" not in staleness.analyse(Answers(rows))  # one table, not two


def test_the_printed_section_shows_both_tables_and_the_note():
    shown = staleness.render(staleness.analyse(Answers(rows_of())))
    assert "| baseline |" in shown and "memory_over_context" in shown
    assert shown.endswith(staleness.NOTE)


def test_a_report_without_changed_facts_has_no_staleness_table_anywhere():
    rows = summaries([analysis_row(f"q{n}", "naive") for n in range(3)])
    assert staleness.analyse(Answers(rows)) == {} and staleness.render({}) == ""
    from freshrag.reporting.analysis import analyse
    made = analyse(rows)
    assert "staleness" not in made and "staleness_paired" not in made
    assert "stale" not in nothing_to_show(made, tables() + tables("scorers"))


# --------------------------------------------------------------------------- broken down by --by
# Twelve questions: the even ones plain (premise none, q0-q3 fast), the odd ones presuming the
# value then (premise false, which the judge decides unless an answer gives the value now
# alone). The baseline answers the plain ones stale but q10 ("I don't know"), and accepts the
# premise of q1-q7 (stale) but corrects that of q9 and q11 (current); naive gives the value now
# to all but q3, whose premise it accepts.
def premise_rows() -> list[AnswerSummary]:
    rows = []
    for n in range(N):
        premise, change = ("false" if n % 2 else "none"), ("fast" if n < 4 else "slow")
        if premise == "none":
            said = [("baseline", f"{100 + n}" if n != 10 else "I don't know.", ()),
                    ("naive", f"It is {200 + n}.", ())]
        else:
            said = [("baseline", "Because it grew slowly.", [judged("stale" if n < 9
                                                                    else "current")]),
                    ("naive", f"It is {200 + n} now." if n != 3 else "Few moved there.",
                     [judged("stale")] if n == 3 else ())]
        rows += [scored_row(system, n, answer, system == "naive", premise, script, change)
                 for system, answer, script in said]
    return rows


def verdicts_of(rows: list[AnswerSummary], system: str) -> dict[str, str]:
    return {row.question_id: row.scores["staleness"]["details"]["verdict"] for row in rows
            if row.system == system}


@pytest.mark.parametrize("field", ["premise", "change"])
def test_the_staleness_tables_are_broken_down_by_a_question_field(field):
    rows = premise_rows()
    document = breakdown.breakdown(rows, field)
    values = sorted({getattr(row, field) for row in rows})
    assert sorted(document["groups"]) == values
    for value in values:
        subset = [row for row in rows if getattr(row, field) == value]
        base, naive = verdicts_of(subset, "baseline"), verdicts_of(subset, "naive")
        table = {entry["system"]: entry for entry in document["tables"]["staleness"]
                 if entry[field] == value}
        for system, found in (("baseline", base), ("naive", naive)):
            assert table[system]["answers"] == len(found) == document["groups"][value]
            for name in staleness.VERDICTS:
                share = list(found.values()).count(name) / len(found)
                assert table[system][name][0] == round(share, 4), (value, system, name)
        stale = [q for q, verdict in base.items() if verdict == "stale"]
        fixed = sum(naive[q] == "current" for q in stale) / len(stale)
        assert table["naive"]["fixed"][0] == round(fixed, 4)
        [paired] = [entry for entry in document["tables"]["staleness_paired"]
                    if entry[field] == value]
        assert (paired["a"], paired["b"], paired["questions"]) == ("baseline", "naive", len(base))
        assert paired["stale_a"] == round(list(base.values()).count("stale") / len(base), 4)
        assert paired["stale_b"] == round(list(naive.values()).count("stale") / len(naive), 4)
        assert next(iter(table["baseline"])) == field  # the value first, as in every breakdown
    whole = {entry["system"]: entry for entry in staleness.analyse(Answers(rows))["staleness"]}
    shares = {entry[field]: entry["stale"][0] for entry in document["tables"]["staleness"]
              if entry["system"] == "baseline"}
    assert whole["baseline"]["stale"][0] not in shares.values()  # not both kinds together


def test_with_premise_each_kind_s_figures_are_its_own():
    """The figures of the rows spelled out: plain, the baseline stale on 5 of 6 and naive
    fixing all 5; presumed, the baseline stale on 4 of 6 and naive fixing 3 of them."""
    document = breakdown.breakdown(premise_rows(), "premise")
    table = {(entry["premise"], entry["system"]): entry
             for entry in document["tables"]["staleness"]}
    assert table[("none", "baseline")]["stale"][0] == round(5 / 6, 4)
    assert table[("none", "baseline")]["abstained"][0] == round(1 / 6, 4)
    assert table[("false", "baseline")]["stale"][0] == round(4 / 6, 4)
    assert table[("false", "baseline")]["current"][0] == round(2 / 6, 4)
    assert table[("none", "naive")]["fixed"][0] == 1.0
    assert table[("false", "naive")]["fixed"][0] == 0.75


def test_the_broken_down_staleness_tables_are_printed_and_on_the_page():
    document = breakdown.breakdown(premise_rows(), "premise")
    text = breakdown.render(document)
    title = tables("changed")[0].title
    assert f"### {title}, by premise\n\n| premise | dataset | system |" in text
    assert "| false | A_f | baseline | 6 |" in text and "| none | A_f | naive | 6 |" in text
    assert "stale_a" in text and staleness.NOTE in text
    assert "stale answers" not in text.split("\n")[-1]  # never in the line of empty tables
    page = parse(render_html([], [], {}, [], breakdowns={"premise": document}))
    shown = page.by_id("by-premise-staleness").rows()
    assert {tuple(cells[:2]) for cells in shown} == {("none", "A_f"), ("false", "A_f")}
    assert page.by_id("by-premise-staleness_paired").tag == "table"


def test_a_field_no_question_has_breaks_down_as_it_did():
    document = breakdown.breakdown(premise_rows(), "label")
    assert document["groups"] == {} and set(document["tables"]) == {
        table.key for table in breakdown.broken_down()} and not any(document["tables"].values())
    assert breakdown.render(document) == ("## By label\n\n### Notes\n\n- no question of these "
                                          "runs carries `label`: nothing to break down")


def test_a_breakdown_without_verdicts_has_no_staleness_table():
    rows = summaries([{**analysis_row(f"q{n}", "naive"), "premise": "none"} for n in range(3)])
    document = breakdown.breakdown(rows, "premise")
    assert document["groups"] == {"none": 3}
    assert "staleness" not in document["tables"] and "staleness_paired" not in document["tables"]
    assert staleness.NOTE not in breakdown.render(document)
