"""Semantic groups in the report (harness/reporting/groups.py), on rows written by hand: the
verdict rule (match, then the judge), tags, adequacy, refined accuracy, attribution of wrong
forms from their retrieved context, and the paired test per wording axis."""

import pytest
from scipy.stats import binomtest

from freshrag.reporting.groups import analyse_groups, paired_test, verdict
from tests.support.rows import summaries, summary

REFERENCE = "14 March 2026"


def row(group, criterion, answer, *, system="naive", truthfulness=1, context=None,
        status="ok", reference=REFERENCE):
    calls = [{"role": "answer", "model": "m", "messages": [
        {"role": "system", "content": f"Extracts:\n\n{context}"},
        {"role": "user", "content": "q"}]}] if context is not None else []
    return {"dataset": "d", "question_id": f"{group}-{criterion}", "system": system,
            "group": group, "criterion": criterion, "reference": reference, "answer": answer,
            "status": status, "error": "boom" if status != "ok" else None,
            "retrievals": 1 if context is not None else 0, "calls": calls,
            "grade": {"truthfulness": truthfulness, "relevance": 3, "unscored_reason": None}}


@pytest.mark.parametrize("given, expected", [
    pytest.param(row("g", "short", "On 14 March 2026."), ("correct", "match"), id="match"),
    pytest.param(row("g", "short", "In spring.", truthfulness=4), ("correct", "judge"),
                 id="judge-second-opinion"),
    pytest.param(row("g", "short", "In spring.", truthfulness=3),
                 ("incorrect", "no match, judge below threshold"), id="both-say-no"),
    pytest.param({**row("g", "short", "In spring."),
                  "grade": {"truthfulness": None, "relevance": None, "unscored_reason": "garbled"}},
                 ("unscored", "no match, judge unscored: garbled"), id="judge-unscored"),
    pytest.param({**row("g", "short", "14 March 2026"), "grade": None, "status": "failed",
                  "error": "timeout"}, ("unscored", "failed pair: timeout"), id="failed-pair"),
])
def test_verdict(given, expected):
    assert verdict(summary(given)) == expected


def test_tags_adequacy_refined_accuracy_and_attribution():
    rows = [
        # robust: both right
        row("g1", "short", "14 March 2026"), row("g1", "long", "It was 14 March 2026."),
        # gap: both wrong
        row("g2", "short", "No idea."), row("g2", "long", "No idea."),
        # non-robust: long wrong although its context held the answer -> language model
        row("g3", "short", "14 March 2026", context="opened on 14 March 2026"),
        row("g3", "long", "No idea.", context="opened on 14 March 2026"),
        # non-robust: long wrong, its context lacked the answer -> retriever
        row("g4", "short", "14 March 2026", context="opened on 14 March 2026"),
        row("g4", "long", "No idea.", context="something else"),
        # non-robust: short wrong without retrieving -> no retrieval
        row("g5", "short", "No idea."), row("g5", "long", "14 March 2026"),
        # unscored: one form failed
        row("g6", "short", "14 March 2026"), row("g6", "long", None, status="failed"),
    ]
    result = analyse_groups(summaries(rows))
    entry, = result["groups"]
    assert {k: entry[k] for k in ("groups", "robust", "non_robust", "gap", "unscored")} == \
        {"groups": 6, "robust": 1, "non_robust": 3, "gap": 1, "unscored": 1}
    assert entry["adequacy"] == round(1 - 1 / 5, 4)
    assert entry["accuracy"] == 0.5  # 5 of the 10 forms of tagged groups
    assert entry["refined_accuracy"] == round(5 / 8, 4)  # the gap group's 2 forms left out
    assert (entry["wrong_language_model"], entry["wrong_retriever"],
            entry["wrong_no_retrieval"]) == (1, 1, 1)
    causes = {a["group"]: (a["cause"], a["right_form_context_held_answer"])
              for a in result["grounded"]["attribution"]}
    assert causes == {"g3": ("language_model", True), "g4": ("retriever", True),
                      "g5": ("no_retrieval", False)}


def test_systems_are_tagged_apart_and_rows_without_groups_are_left_out():
    rows = [row("g1", "short", "14 March 2026", system="naive"),
            row("g1", "short", "No idea.", system="boolean"),
            {**row("g9", "short", "x"), "group": None, "reference": None}]
    tables = {e["system"]: e for e in analyse_groups(summaries(rows))["groups"]}
    assert (tables["naive"]["robust"], tables["boolean"]["gap"]) == (1, 1)
    assert tables["naive"]["groups"] == tables["boolean"]["groups"] == 1


def test_wording_test_pairs_forms_within_groups():
    rows = []
    for n in range(6):  # short right in 5 groups, long right in 1 of them and in none other
        rows += [row(f"g{n}", "short", REFERENCE if n < 5 else "no"),
                 row(f"g{n}", "long", REFERENCE if n == 0 else "no")]
    rows.append(row("g9", "short", REFERENCE))  # no long form: not paired
    test, = analyse_groups(summaries(rows))["wording"]
    assert (test["axis"], test["a"], test["b"], test["paired_groups"]) == \
        ("length", "short", "long", 6)
    assert (test["accuracy_a"], test["accuracy_b"]) == (round(5 / 6, 4), round(1 / 6, 4))
    assert test["difference"] == round(4 / 6, 4)
    assert (test["only_a_right"], test["only_b_right"]) == (4, 0)
    # 6 paired groups: too few to test (outcomes.MIN_PAIRED), and the cells say so
    assert test["untested"] == "n = 6, below 10"
    assert test["p_value"] is test["interval"] is None


@pytest.mark.parametrize("pairs, p_value", [
    pytest.param([(True, False)] * 6 + [(False, True)] * 6, 1.0, id="balanced"),
    pytest.param([(True, False)] * 9 + [(True, True)], round(binomtest(0, 9, 0.5).pvalue, 4),
                 id="one-sided"),
])
def test_paired_test_p_values(pairs, p_value):
    test = paired_test("length", "short", "long", pairs)
    assert test["p_value"] == p_value
    low, high = test["interval"]
    assert low <= test["difference"] <= high


@pytest.mark.parametrize("pairs, why", [
    pytest.param([(True, True), (False, False)] * 5, "no variance", id="no-discordant-pair"),
    pytest.param([(True, False)] * 10, "no variance", id="every-pair-one-way"),
    pytest.param([(True, False), (False, True)] * 4, "n = 8, below 10", id="eight-pairs"),
])
def test_paired_tests_without_variance_or_enough_groups_say_why(pairs, why):
    test = paired_test("length", "short", "long", pairs)
    assert test["untested"] == why and test["p_value"] is test["interval"] is None
