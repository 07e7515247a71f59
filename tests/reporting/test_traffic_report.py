"""Decision quality against need by construction, the threshold sweep, ROC and the savings
curve (harness/reporting/decisions.py, savings.py), on rows written by hand."""

import pytest

from freshrag.reporting import decisions, savings
from freshrag.reporting.answers import Answers
from freshrag.reporting.decisions import (
    auroc,
    average_precision,
    metrics,
    pr_points,
    roc_points,
    wilson,
)
from tests.support.rows import summaries
from tests.support.runs import sample

KINDS = {"f1": "fresh", "f2": "fresh", "f3": "fresh", "f4": "fresh",
         "c1": "control", "c2": "control", "c3": "control", "g1": "general", "g2": "general"}


def row(q, system, truth=4, rel=4, **options):
    made = sample(q, system, truth, rel, **options)
    made.update(kind=KINDS[q], need=KINDS[q] == "fresh")
    if KINDS[q] == "general":
        made["gold_title"] = None
    return made


@pytest.mark.parametrize("k, n, expected", [
    pytest.param(0, 0, None, id="none"),
    pytest.param(5, 10, [0.5, 0.2366, 0.7634], id="half"),
    pytest.param(10, 10, [1.0, 0.7225, 1.0], id="all"),
    pytest.param(0, 4, [0.0, 0.0, 0.4899], id="zero"),
])
def test_wilson_interval(k, n, expected):
    assert wilson(k, n) == expected


@pytest.mark.parametrize("pairs, accuracy, precision, recall, f1", [
    pytest.param([(True, True), (False, False)], 1.0, 1.0, 1.0, 1.0, id="perfect"),
    pytest.param([(True, True), (True, False), (False, True), (False, False)],
                 0.5, 0.5, 0.5, 0.5, id="half"),
    pytest.param([(False, False), (False, False)], 1.0, None, None, None,
                 id="only-negatives-none-retrieved"),
    pytest.param([(True, True), (True, True), (False, True)], 2 / 3, 1.0, 2 / 3, 0.8,
                 id="only-positives"),
])
def test_decision_metrics(pairs, accuracy, precision, recall, f1):
    got = metrics(pairs, intervals=False)
    assert got["accuracy"] == pytest.approx(accuracy, abs=1e-4)
    for name, value in (("precision", precision), ("recall", recall), ("f1", f1)):
        assert got[name] == (None if value is None else pytest.approx(value, abs=1e-4)), name


@pytest.mark.parametrize("scored, expected_auroc, expected_ap", [
    pytest.param([(0.9, True), (0.8, True), (0.2, False), (0.1, False)], 1.0, 1.0, id="separates"),
    pytest.param([(0.1, True), (0.2, True), (0.8, False), (0.9, False)], 0.0, 0.4167, id="inverted"),
    pytest.param([(0.5, True), (0.5, False)], 0.5, 0.5, id="tie"),
    pytest.param([(0.9, True), (0.7, False), (0.6, True), (0.1, False)], 0.75, 0.8333, id="mixed"),
])
def test_auroc_and_average_precision(scored, expected_auroc, expected_ap):
    assert auroc(scored) == pytest.approx(expected_auroc, abs=1e-4)
    assert average_precision(scored) == pytest.approx(expected_ap, abs=1e-4)
    roc = roc_points(scored)
    assert roc[0] == [0.0, 0.0] and roc[-1] == [1.0, 1.0]
    assert pr_points(scored)[-1][0] == 1.0  # every needing question retrieved at the lowest cut


def boolean_rows():
    """A boolean agent retrieving for f1, f2, f3 (needed) and c1 (not needed)."""
    return [row(q, "boolean", decision="model-a", decided="retrieve" if q in ("f1", "f2", "f3", "c1")
                else "no-retrieve", retrieved=q in ("f1", "f2", "f3", "c1")) for q in KINDS]


def test_decisions_per_kind_against_need():
    table = decisions.decisions_by_kind(Answers(summaries(boolean_rows())))
    by_kind = {entry["kind"]: entry for entry in table}
    assert set(by_kind) == {"fresh", "control", "general", "all"}
    everything = by_kind["all"]
    assert (everything["questions"], everything["needed"], everything["retrieved"]) == (9, 4, 4)
    assert everything["precision"][0] == 0.75 and everything["recall"][0] == 0.75
    assert everything["accuracy"][0] == pytest.approx(7 / 9, abs=1e-4)
    low, high = everything["f1"][1:]
    assert low <= everything["f1"][0] == 0.75 <= high
    assert by_kind["fresh"]["recall"][0] == 0.75 and by_kind["fresh"]["accuracy"][0] == 0.75
    assert by_kind["control"]["recall"] is None and by_kind["control"]["precision"][0] == 0.0
    assert by_kind["general"]["retrieved"] == 0 and by_kind["general"]["precision"] is None


def test_systems_without_need_or_decisions_are_left_out_with_a_note():
    rows = [sample(q, "boolean", decision="model-a", decided="retrieve", retrieved=True)
            for q in ("x1", "x2")] + [row(q, "baseline") for q in KINDS]
    result = decisions.analyse(Answers(summaries(rows)))
    assert result["decisions_by_kind"] == [] and result["thresholds"] == []
    assert result["decision_notes"] == ["A_f / boolean: decisions not judged against need by "
                                        "construction: its questions carry no `need`"]


P = {"f1": 0.9, "f2": 0.7, "f3": 0.3, "f4": None, "c1": 0.6, "c2": 0.2, "c3": 0.1, "g1": 0.05,
     "g2": 0.4}


def confidence_rows():
    rows = []
    for q, p in P.items():
        retrieves = p is not None and p >= 0.5
        made = row(q, "confidence", decision="model-a", retrieved=retrieves, tokens=(50, 1),
                   decided="none" if p is None else "retrieve" if retrieves else "no-retrieve")
        made["details"].update(p_retrieve=p, threshold=0.5)
        rows.append(made)
    return rows


def references():
    """Baseline scores 2 on fresh questions and 10 on the others; naive 8 everywhere."""
    return ([row(q, "baseline", 1 if KINDS[q] == "fresh" else 5, 1 if KINDS[q] == "fresh" else 5,
                 tokens=(100, 10)) for q in KINDS]
            + [row(q, "naive", 4, 4, retrieved=True, tokens=(1000, 10)) for q in KINDS])


def test_threshold_sweep_decides_again_from_recorded_scores():
    sweep = [e for e in decisions.threshold_sweep(Answers(summaries(confidence_rows() + references())))]
    assert [e["threshold"] for e in sweep] == [i / 10 for i in range(11)]
    for entry in sweep:
        expected = [q for q, p in P.items() if p is not None and p >= entry["threshold"]]
        assert entry["retrieved"] == len(expected), entry["threshold"]
        assert entry["current"] == (entry["threshold"] == 0.5)
        scores = [8 if q in expected else (2 if KINDS[q] == "fresh" else 10) for q in KINDS]
        assert entry["estimated_score"] == pytest.approx(sum(scores) / len(scores), abs=1e-4)
        tokens = [51 + (1010 if q in expected else 110) for q in KINDS]
        assert entry["estimated_tokens_per_question"] == pytest.approx(sum(tokens) / 9, abs=0.1)
    never = sweep[-1]  # p >= 1.0: no question retrieves (the unavailable one never does)
    assert never["retrieved"] == 0 and never["recall"] == 0.0


def test_self_check_sweep_reads_ratings_and_keeps_its_own_first_answer_cost():
    ratings = {"f1": 1, "f2": 2, "f3": 5, "f4": 3, "c1": 4, "c2": 5, "c3": 5, "g1": 5, "g2": None}
    rows = []
    for q, rating in ratings.items():
        made = row(q, "self-check", decision="model-a", tokens=(60, 5))
        made["details"].update(confidence=rating, threshold=4, decision="retrieve"
                               if rating is not None and rating < 4 else "no-retrieve")
        rows.append(made)
    sweep = {e["threshold"]: e for e in decisions.threshold_sweep(Answers(summaries(rows + references())))}
    assert list(sweep) == [1, 2, 3, 4, 5, 6]
    assert sweep[1]["retrieved"] == 0 and sweep[6]["retrieved"] == 8  # g2's rating is unusable
    assert sweep[4]["retrieved"] == 3 and sweep[4]["recall"] == 0.75 and sweep[4]["precision"] == 1.0
    # not retrieving costs only its decision calls: first answer and rating (65 tokens here)
    assert sweep[1]["estimated_tokens_per_question"] == pytest.approx(65 + 0, abs=0.1)


def test_roc_of_the_recorded_probabilities():
    [entry] = decisions.roc_curves(Answers(summaries(confidence_rows())))
    assert entry["unavailable"] == 1 and entry["questions"] == 9 and entry["needed"] == 3
    scored = [(p, KINDS[q] == "fresh") for q, p in P.items() if p is not None]
    assert entry["auroc"][0] == auroc(scored)
    assert entry["auroc"][1] <= entry["auroc"][0] <= entry["auroc"][2]
    assert entry["roc"] == roc_points(scored) and entry["pr"] == pr_points(scored)


def test_savings_curve_recombines_kinds_and_names_the_references():
    result = savings.analyse(Answers(summaries(references() + boolean_rows())))
    table = {(e["system"], e["fresh_share"]): e for e in result["savings"]}
    # at share 0 only control and general count, at 1 only fresh
    assert table["baseline", 0.0]["score"][0] == 10 and table["baseline", 1.0]["score"][0] == 2
    assert table["naive", 0.5]["score"][0] == 8
    assert table["baseline", 0.5]["score"][0] == pytest.approx(6)
    router = table[savings.ROUTER, 0.5]
    assert router["score"][0] == pytest.approx(0.5 * 8 + 0.5 * 10)
    assert router["reference"] == "oracle router" and table["naive", 0.0]["reference"] == \
        "always retrieve"
    assert router["tokens_per_question"][0] == pytest.approx(0.5 * 1010 + 0.5 * 110)
    assert router["saving_vs_naive"] == pytest.approx(1 - (0.5 * 1010 + 0.5 * 110) / 1010, abs=1e-4)
    for entry in result["savings"]:
        for field in ("score", "tokens_per_question"):
            value, low, high = entry[field]
            assert low <= value <= high, (entry["system"], field)
    curve = next(c for c in result["savings_curve"] if c["system"] == "boolean")
    assert len(curve["points"]) == 11 and curve["shares"][0] == 0.0


def test_mixes_weigh_each_kind_as_given():
    mix = {"fresh": 0.1, "control": 0.6, "general": 0.3}
    result = savings.analyse(Answers(summaries(references())), mixes=[mix])
    by_system = {e["system"]: e for e in result["mixes"]}
    assert by_system["baseline"]["score"][0] == pytest.approx(0.1 * 2 + 0.9 * 10)
    assert by_system["baseline"]["mix"] == "fresh 0.1, control 0.6, general 0.3"
    assert by_system["baseline"]["saving_vs_naive"] == pytest.approx(1 - 110 / 1010, abs=1e-4)


def test_no_curve_without_both_sides_of_the_traffic():
    rows = [row(q, "baseline") for q in ("f1", "f2")]
    result = savings.analyse(Answers(summaries(rows)))
    assert result["savings"] == [] and result["savings_notes"] == [
        "A_f: no savings curve: it needs fresh questions and control or general ones (kinds "
        "held: 2 fresh)"]


def test_auroc_from_ranks_equals_the_pairwise_definition():
    import random
    rng = random.Random(15)
    for _ in range(200):
        scored = [(rng.choice([0.1, 0.2, 0.5, 0.7, 0.9]), rng.random() < 0.4)
                  for _ in range(rng.randint(2, 30))]
        positives = [s for s, n in scored if n]
        negatives = [s for s, n in scored if not n]
        if positives and negatives:
            pairwise = sum((p > q) + 0.5 * (p == q) for p in positives for q in negatives)
            assert auroc(scored) == round(pairwise / (len(positives) * len(negatives)), 4)
