"""The three-way oracle router and the savings by hops (harness/reporting/savings.py,
docs/reports.md#the-three-way-router) on a scripted run of `baseline`, `naive` and `react` whose
cheapest good option per question is known by construction; which systems are the options
(outcomes.multi_step); the router in the savings curve over traffic mixes; and a run of two
options only, which gets no three-way router.

The rows are made as the runner makes them (core/samples.py sample_row) from Steps made here."""

from __future__ import annotations

from typing import Any

import pytest

from freshrag.core.samples import sample_row
from freshrag.core.stats import holm, min_detectable_difference
from freshrag.core.types import (
    Grade,
    LLMResponse,
    Question,
    RetrievedChunk,
    Step,
    SystemAnswer,
    Usage,
)
from freshrag.reporting import analysis, outcomes, savings, sections
from freshrag.reporting.answers import Answers
from freshrag.reporting.identity import group_rows
from freshrag.reporting.loading import load_summaries
from freshrag.reporting.outcomes import multi_step
from tests.support.rows import summaries
from tests.support.runs import write_run

# input, output tokens of each system's answer: by tokens baseline < naive < react, but at one
# dollar in and ten out per million, q5's baseline (long output) costs more than its naive
TOKENS = {"baseline": (50, 10), "naive": (300, 10), "react": (600, 60)}
Q5 = {"baseline": (10, 100), "naive": (150, 10)}
PRICES = {"m": (1.0, 10.0)}
# truthfulness per question and system (relevance the same): 4 or 5 answered well
TRUTH = {
    "q1": {"baseline": 5, "naive": 5, "react": 5},  # baseline is good: cheapest
    "q2": {"baseline": 2, "naive": 4, "react": 5},  # naive is the cheapest good one
    "q3": {"baseline": 1, "naive": 3, "react": 4},  # only react is good
    "q4": {"baseline": 2, "naive": 1, "react": 3},  # none good: the cheapest answered
    "q5": {"baseline": 4, "naive": 4, "react": 2},  # baseline by tokens, naive by dollars
}
HOPS = {"q1": 1, "q2": 1, "q3": 2, "q4": 2, "q5": 1}
KINDS = {"q1": "control", "q2": "fresh", "q3": "fresh", "q4": "fresh", "q5": "control"}


def call(tokens: tuple[int, int], role: str = "answer", model: str = "m") -> LLMResponse:
    return LLMResponse(role=role, model=model, text="x", tool_name=None, tool_arguments=None,
                       usage=Usage(*tokens), latency_s=0.1, cache_hit=False, messages=[])


def question(qid: str) -> Question:
    two = HOPS[qid] == 2
    return Question(qid, f"question {qid}?", f"A {qid}",
                    gold_titles=(f"A {qid}", f"B {qid}") if two else (),
                    hops=2 if two else None, multihop="bridge" if two else None,
                    kind=KINDS[qid], need=KINDS[qid] == "fresh")


def steps_of(system: str, qid: str, tokens: tuple[int, int]) -> list[Step]:
    found = tuple(RetrievedChunk(f"A {qid}", 0, "text", 0.9) for _ in range(1))
    if system == "baseline":
        return [Step("answer", (call(tokens),), text="a")]
    if system == "naive":
        return [Step("search", query=qid, retrieved=found),
                Step("answer", (call(tokens),), text="a")]
    half = (tokens[0] // 3, tokens[1] // 3)  # react: two searching calls and its answer
    rest = (tokens[0] - 2 * half[0], tokens[1] - 2 * half[1])
    return [Step("search", (call(half),), query=qid, retrieved=found),
            Step("search", (call(half),), query=f"{qid} again", retrieved=found),
            Step("answer", (call(rest),), text="a")]


def answer_row(system: str, qid: str, truth: int | None = None) -> dict[str, Any]:
    tokens = Q5[system] if qid == "q5" and system in Q5 else TOKENS[system]
    steps = steps_of(system, qid, tokens)
    calls = [c for step in steps for c in step.calls]
    given = SystemAnswer("a", calls=calls, steps=steps,
                         retrievals=sum(s.kind == "search" for s in steps))
    truth = TRUTH[qid][system] if truth is None else truth
    return dict(sample_row("D", question(qid), system, given, Grade(truth, truth),
                           [*calls, call((900, 9), "judge", "judge-model")], 1.0))


def scripted(systems: tuple[str, ...] = ("baseline", "naive", "react")) -> list[dict[str, Any]]:
    return [answer_row(system, qid) for system in systems for qid in TRUTH]


def router_rows(table: list[dict[str, Any]], **where: Any) -> list[dict[str, Any]]:
    return [r for r in table if all(r.get(k) == v for k, v in where.items())]


def the_router(table: list[dict[str, Any]], **where: Any) -> dict[str, Any]:
    found = [r for r in router_rows(table, **where) if r["reference"] == savings.THREE_WAY]
    assert len(found) == 1
    return found[0]


# --------------------------------------------------------------------------- the router


def test_the_router_takes_each_questions_cheapest_good_option_by_tokens():
    groups = group_rows(summaries(scripted()))
    (key, (chosen, info)), = savings.three_way_routers(groups, {}).items()
    assert key.system == "oracle-router: baseline | naive | react"
    picked = {row.question_id: row.system for row in chosen}
    assert picked == {"q1": "baseline", "q2": "naive", "q3": "react", "q4": "baseline",
                      "q5": "baseline"}
    assert info["cheapest_by"] == "tokens"
    assert savings.chosen_label(info["options"], info["picks"]) == \
        "baseline 3, naive 1, react 1; none good 1"


def test_priced_the_router_takes_the_cheapest_in_dollars():
    (_, (chosen, info)), = savings.three_way_routers(group_rows(summaries(scripted())), PRICES).items()
    picked = {row.question_id: row.system for row in chosen}
    assert picked["q5"] == "naive" and picked["q1"] == "baseline"
    assert info["cheapest_by"] == "cost_usd"


def test_one_unpriced_answer_makes_the_router_choose_by_tokens():
    rows = scripted()
    # baseline's q1 made a call of one more role, by a model with no price
    rows[0]["calls"].append({**rows[0]["calls"][0], "role": "extra", "model": "unpriced"})
    rows[0]["usage"]["extra"] = {"input": 5, "output": 1, "estimated": False}
    (_, (chosen, info)), = savings.three_way_routers(group_rows(summaries(rows)), PRICES).items()
    assert info["cheapest_by"] == "tokens"


@pytest.fixture
def five_are_enough(monkeypatch):
    """The scripted run's 5 questions tested, as if the minimum were 2 (outcomes.MIN_PAIRED)."""
    monkeypatch.setattr(outcomes, "MIN_PAIRED", 2)


def test_the_router_table_sets_every_system_against_the_router(five_are_enough):
    table = savings.router_tables(Answers(summaries(scripted())))["router3"]
    router = the_router(table)
    # chosen: q1 baseline 5+5, q2 naive 4+4, q3 react 4+4, q4 baseline 2+2, q5 baseline 4+4
    assert router["score"][0] == pytest.approx((10 + 8 + 8 + 4 + 8) / 5)
    assert router["correct"] == 0.8  # q4 none good
    chosen_tokens = [60, 310, 660, 60, 110]
    assert router["tokens_per_question"][0] == pytest.approx(sum(chosen_tokens) / 5)
    assert router["questions"] == 5 and router["chosen"].startswith("baseline 3")
    react = router_rows(table, system="react")[0]
    assert react["tokens_per_question"][0] == 660.0
    assert react["router_saving"] == pytest.approx(round(1 - sum(chosen_tokens) / 5 / 660, 4))
    # react minus the router, per question: 0, +2, 0, +2, -4
    assert react["score_vs_router"] == 0.0
    baseline = router_rows(table, system="baseline")[0]
    # baseline minus the router: 0, -4, -6, 0, 0
    assert baseline["score_vs_router"] == -2.0
    assert baseline["interval"][0] < -2.0 < baseline["interval"][1]
    assert 0 < baseline["p_value"] <= 1
    assert [r["system"] for r in table] == [router["system"], "baseline", "naive", "react"]


def test_the_router_tables_adjust_their_p_values_by_holm_and_give_each_its_mdd(five_are_enough):
    for table in savings.router_tables(Answers(summaries(scripted()))).values():
        assert [r["p_holm"] for r in table] == holm([r["p_value"] for r in table])
        router = [r for r in table if r["p_value"] is None]
        assert router and all(r["mdd"] is None for r in router)  # the router against itself
    baseline = router_rows(savings.router_tables(Answers(summaries(scripted())))["router3"], system="baseline")[0]
    # baseline minus the router, per question: 0, -4, -6, 0, 0
    assert baseline["mdd"] == min_detectable_difference([0, -4, -6, 0, 0])


def test_savings_by_hops_splits_one_article_from_two_article_questions():
    table = savings.router_tables(Answers(summaries(scripted())))["savings_by_hops"]
    one, two = the_router(table, hops=1), the_router(table, hops=2)
    assert (one["questions"], two["questions"]) == (3, 2)
    assert one["chosen"] == "baseline 2, naive 1, react 0; none good 0"
    assert two["chosen"] == "baseline 1, naive 0, react 1; none good 1"
    assert one["tokens_per_question"][0] == pytest.approx((60 + 310 + 110) / 3)
    assert two["tokens_per_question"][0] == pytest.approx((660 + 60) / 2)
    assert two["score"][0] == pytest.approx((8 + 4) / 2)
    naive_two = router_rows(table, system="naive", hops=2)[0]
    assert naive_two["score"][0] == pytest.approx((6 + 2) / 2)
    assert naive_two["correct"] == 0.0
    # naive minus the router on q3 and q4: -2, -2
    assert naive_two["score_vs_router"] == -2.0


def test_one_article_questions_alone_give_no_table_by_hops():
    rows = [row for row in scripted() if HOPS[row["question_id"]] == 1]
    tables = savings.router_tables(Answers(summaries(rows)))
    assert tables["router3"] and not tables["savings_by_hops"]


def test_the_router_joins_the_savings_curve_over_traffic_mixes():
    done = savings.analyse(Answers(summaries(scripted())), mixes=[{"fresh": 1.0, "control": 0.0, "general": 0.0}])
    three = [r for r in done["savings"] if r["reference"] == savings.THREE_WAY]
    assert [r["fresh_share"] for r in three] == list(savings.TABLE_SHARES)
    # all fresh: q2 naive 310, q3 react 660, q4 baseline 60; all control: q1 60, q5 110
    assert three[-1]["tokens_per_question"][0] == pytest.approx((310 + 660 + 60) / 3)
    assert three[0]["tokens_per_question"][0] == pytest.approx((60 + 110) / 2)
    assert any(c["reference"] == savings.THREE_WAY for c in done["savings_curve"])
    assert any(m["reference"] == savings.THREE_WAY for m in done["mixes"])


def test_two_options_give_no_three_way_router_and_leave_the_curve_as_it_was():
    two = scripted(("baseline", "naive"))
    assert savings.router_tables(Answers(summaries(two))) == {"router3": [], "savings_by_hops": []}
    done = savings.analyse(Answers(summaries(two)))
    assert {r["system"] for r in done["savings"]} == {"baseline", "naive", savings.ROUTER}


# --------------------------------------------------------------------------- the options


def test_which_systems_are_multi_step_agents():
    rows = scripted()
    one_search = [answer_row("naive", qid) for qid in TRUTH]
    for r in one_search:
        r["system"] = "react"  # react by name, though it searched once
    iterative = [dict(r, system="iterative") for r in scripted(("react",))]  # two searches
    deciding = [dict(r, system="router", details={"decision": "multi-step"})
                for r in scripted(("react",))]
    groups = group_rows(summaries(rows[:5] + one_search + iterative + deciding))
    agents = {key.system for key, group in groups.items() if multi_step(group)}
    assert agents == {"react", "iterative"}


def test_a_single_search_system_stands_in_for_naive_and_each_agent_gets_a_router():
    rows = scripted()
    hyde = [dict(r, system="hyde") for r in rows if r["system"] == "naive"]
    iterative = [dict(r, system="iterative") for r in rows if r["system"] == "react"]
    without_naive = [r for r in rows if r["system"] != "naive"] + hyde + iterative
    routers = savings.three_way_routers(group_rows(summaries(without_naive)), {})
    assert sorted(key.system for key in routers) == [
        "oracle-router: baseline | hyde | iterative", "oracle-router: baseline | hyde | react"]


def test_the_printed_report_shows_both_tables():
    done = analysis.analyse(summaries(scripted()))
    printed = sections.render_analysis(done)
    assert "### Three-way oracle router" in printed and "### Savings by hops" in printed
    assert "oracle-router: baseline \\| naive \\| react" in printed


def test_an_agent_that_answers_without_searching_stays_the_agent_and_decides_nothing():
    """Which systems decide is what they declare (Declarations.kind), never what their rows
    did: react answering q1 without a search is still the third option, and neither it nor a
    fixed system is judged as a decider; a decider that retrieved every time still decides."""
    rows = scripted()
    plain = answer_row("baseline", "q1", TRUTH["q1"]["react"])
    rows = [dict(plain, system="react") if (r["system"], r["question_id"]) == ("react", "q1")
            else r for r in rows]
    rows += [dict(r, system="boolean") for r in scripted(("naive",))]  # retrieved every time
    assert savings.router_tables(Answers(summaries(rows)))["router3"]  # the router is there
    decided = {r["system"] for r in analysis.analyse(summaries(rows))["decisions"]}
    assert decided == {"oracle-router", "boolean"}


def test_an_agent_the_manifest_records_is_one_whatever_its_rows_did(tmp_path):
    once = [dict(r, system="mine") for r in scripted(("naive",))]  # one search an answer
    assert not multi_step(group_rows(load_summaries(write_run(tmp_path / "before", once))).popitem()[1])
    recorded = write_run(tmp_path / "now", once, {"system_kinds": {"mine": "agent"}})
    assert multi_step(group_rows(load_summaries(recorded)).popitem()[1])
