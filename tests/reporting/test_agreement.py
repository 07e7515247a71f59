"""`freshrag agreement` (docs/scoring.md#judge-agreement): the statistics against examples worked
out by hand (each expected value is written as the arithmetic that gives it), then the command end
to end on run directories written by hand, degenerate ones included."""

from __future__ import annotations

import json
import math
import pickle
import random

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import SAMPLES, read_samples
from freshrag.core.stats import cohen_kappa
from freshrag.reporting.agreement import average_ranks, field_agreement, pair_runs, spearman
from freshrag.scoring.judge import SCALE
from tests.support.datasets import bridges_and_mayor, write_dataset
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import discerning_judge, grade_call, use_endpoint
from tests.support.rows import summaries
from tests.support.runs import sample, write_run

# ------------------------------------------------------------------ weighted kappa

# kappa_w = 1 - observed / expected mean squared disagreement. Expected, for independent draws
# from the two sides' marginals, is var(A) + var(B) + (mean A - mean B)^2 (population moments),
# or written out over the 5 x 5 cells; weights (i - j)^2 / 16 cancel in the ratio.
KAPPAS = [
    pytest.param([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], 1 - 0 / 2, id="identical"),
    # two swaps of one step; uniform marginals: sum over 25 cells of (i - j)^2 is 100
    pytest.param([1, 2, 3, 4, 5], [1, 2, 3, 5, 4], 1 - ((1 + 1) / 5) / (100 / 25), id="one-swap"),
    pytest.param([1, 2, 3, 4, 5], [5, 4, 3, 2, 1], 1 - ((16 + 4 + 0 + 4 + 16) / 5) / (100 / 25),
                 id="reversed"),
    # B = A + 1: ranks agree perfectly, yet the bias costs agreement
    pytest.param([1, 1, 2, 2], [2, 2, 3, 3], 1 - 1 / ((1 + 4 + 0 + 1) / 4), id="bias-of-one"),
    pytest.param([1, 2, 3, 3, 5], [2, 2, 3, 4, 4],
                 1 - ((1 + 0 + 0 + 1 + 1) / 5)
                 / ((48 / 5 - (14 / 5) ** 2) + (49 / 5 - 3 ** 2) + (14 / 5 - 3) ** 2),
                 id="uneven-marginals"),
    # one side constant: every cell observed is what chance predicts
    pytest.param([3, 3, 3], [1, 3, 5], 1 - ((4 + 0 + 4) / 3) / ((4 + 0 + 4) / 3), id="a-constant"),
    pytest.param([2, 2], [4, 4], 1 - 4 / 4, id="both-constant-apart"),
    pytest.param([4, 4, 4], [4, 4, 4], None, id="both-constant-alike"),
    pytest.param([5], [5], None, id="one-pair-alike"),
    pytest.param([], [], None, id="no-pairs"),
]


def quadratic_kappa(a, b):
    """The kappa `freshrag agreement` reports (harness/core/stats.py, on the judge's scale)."""
    return cohen_kappa(a, b, SCALE, weights="quadratic")


@pytest.mark.parametrize("a, b, expected", KAPPAS)
def test_quadratic_kappa_matches_the_hand_computation(a, b, expected):
    kappa = quadratic_kappa(a, b)
    assert kappa == (None if expected is None else pytest.approx(expected, abs=1e-12))


def test_kappa_with_one_constant_side_is_exactly_zero_not_a_rounding_away_from_it():
    assert quadratic_kappa([1] * 7, [1, 2, 3, 4, 5, 5, 2]) == 0.0
    assert quadratic_kappa([1, 2, 3, 4, 5, 5, 2], [5] * 7) == 0.0


# ------------------------------------------------------------------ Spearman


@pytest.mark.parametrize("values, ranks", [
    pytest.param([10, 30, 20], [1, 3, 2], id="no-ties"),
    pytest.param([3, 1, 3, 2], [(3 + 4) / 2, 1, (3 + 4) / 2, 2], id="a-tie-shares-its-ranks"),
    pytest.param([5, 5, 5], [(1 + 2 + 3) / 3] * 3, id="all-tied"),
])
def test_average_ranks(values, ranks):
    assert average_ranks(values) == ranks


SPEARMANS = [
    # no ties: 1 - 6 * sum d^2 / (n (n^2 - 1)), d = rank differences 1, 1, 1, 1, 0
    pytest.param([1, 2, 3, 4, 5], [2, 1, 4, 3, 5], 1 - 6 * 4 / (5 * (25 - 1)), id="textbook"),
    # ties: Pearson of the average ranks A (1, 2.5, 2.5, 4) and B (1, 3.5, 2, 3.5), means 2.5
    pytest.param([1, 2, 2, 3], [1, 3, 2, 3],
                 ((-1.5) * (-1.5) + 0 * 1 + 0 * (-0.5) + 1.5 * 1)
                 / math.sqrt((1.5 ** 2 + 0 + 0 + 1.5 ** 2) * (1.5 ** 2 + 1 + 0.5 ** 2 + 1)),
                 id="ties"),
    pytest.param([1, 2, 3], [1, 4, 5], 1.0, id="monotone-not-linear"),
    pytest.param([1, 2, 3, 4], [4, 3, 2, 1], -1.0, id="reversed"),
    pytest.param([1, 2, 3], [3, 3, 3], None, id="b-constant"),
    pytest.param([2], [4], None, id="one-pair"),
]


@pytest.mark.parametrize("a, b, expected", SPEARMANS)
def test_spearman_matches_the_hand_computation(a, b, expected):
    rho = spearman(a, b)
    assert rho == (None if expected is None else pytest.approx(expected, abs=1e-12))


def test_spearman_agrees_with_scipy():
    from scipy import stats  # the test extra
    rng = random.Random(14)
    for _ in range(50):
        n = rng.randint(2, 40)
        a = [rng.randint(1, 5) for _ in range(n)]
        b = [min(5, max(1, x + rng.choice([-2, -1, 0, 0, 1]))) for x in a]
        if len(set(a)) > 1 and len(set(b)) > 1:
            assert spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-9)


# ------------------------------------------------------------------ one field's figures


def test_field_agreement_counts_and_means():
    a, b = [1, 2, 3, 4], [1, 3, 3, 2]  # differences B - A: 0, +1, 0, -2
    figures = field_agreement(a, b)
    assert figures["n"] == 4
    assert figures["exact"] == 2 / 4 and figures["within_one"] == 3 / 4
    assert figures["mean_abs_difference"] == (0 + 1 + 0 + 2) / 4
    assert figures["mean_difference"] == (0 + 1 + 0 - 2) / 4
    cells = {(i + 1, j + 1): n for i, row in enumerate(figures["confusion"])
             for j, n in enumerate(row) if n}
    assert cells == {(1, 1): 1, (2, 3): 1, (3, 3): 1, (4, 2): 1}  # (A, B)
    assert figures["undefined"] == {} and figures["constant"] == {"a": None, "b": None}


@pytest.mark.parametrize("a, b, kappa, undefined", [
    pytest.param([1, 1, 1], [1, 3, 5], 0.0, {"spearman": "A gives every pair 1"}, id="a-constant"),
    pytest.param([2, 4, 5], [5, 5, 5], 0.0, {"spearman": "B gives every pair 5"}, id="b-constant"),
    pytest.param([3, 3], [3, 3], None, {"kappa": "A gives every pair 3 and B gives every pair 3",
                                         "spearman": "A gives every pair 3 and B"},
                 id="both-constant-alike"),
    pytest.param([2], [4], 0.0, {"spearman": "fewer than 2 pairs"}, id="one-pair"),
])
def test_degenerate_grades_give_null_with_a_reason_never_nan(a, b, kappa, undefined):
    figures = field_agreement(a, b)
    assert figures["kappa"] == kappa
    assert set(figures["undefined"]) == set(undefined)
    for name, reason in undefined.items():
        assert figures[name] is None and reason in figures["undefined"][name]
    json.dumps(figures, allow_nan=False)  # raises on a NaN or an infinity


# ------------------------------------------------------------------ the command

TRUTH_A, TRUTH_B = [1, 2, 3, 3, 5], [2, 2, 3, 4, 4]  # the uneven-marginals example above
KAPPA_AB = 1 - (3 / 5) / ((48 / 5 - (14 / 5) ** 2) + (49 / 5 - 3 ** 2) + (14 / 5 - 3) ** 2)


def graded(question, system, truth, rel, judge, answer=None, **kw):
    return {**sample(question, system, truth, rel, judge=judge, **kw),
            "answer": answer or f"{system} says {question}"}


def run_pair(tmp_path, rows_a, rows_b, *args, fmt="markdown"):
    a, b = write_run(tmp_path / "a", rows_a), write_run(tmp_path / "b", rows_b)
    out = tmp_path / "out"
    code = main(["agreement", str(a), str(b), "--format", fmt, "--out", str(out), *args])
    return code, a, b, out


def five_pairs(judge, truths, system="naive"):
    return [graded(f"q{i}", system, t, 4, judge) for i, t in enumerate(truths)]


def test_two_judges_on_the_same_answers(tmp_path, capsys):
    extra_a = [graded("q5", "naive", 1, 1, "gpt-4", answer="first wording"),  # answer differs
               graded("q6", "naive", None, 1, "gpt-4"),  # unscored in A
               graded("q7", "naive", 4, 4, "gpt-4"),  # only in A
               {**graded("q8", "naive", 4, 4, "gpt-4", status="failed"), "answer": None}]
    extra_b = [graded("q5", "naive", 5, 5, "small", answer="second wording"),
               graded("q6", "naive", 2, 2, "small"),
               graded("q8", "naive", 4, 4, "small"),  # answered in B, failed in A: unscored
               graded("q9", "naive", 4, 4, "small")]  # only in B
    code, a, b, out = run_pair(tmp_path, five_pairs("gpt-4", TRUTH_A) + extra_a,
                               five_pairs("small", TRUTH_B) + extra_b)
    printed = capsys.readouterr().out
    assert code == 0
    document = json.loads((out / "agreement.json").read_text())
    assert document["judges"] == {"a": "gpt-4", "b": "small"}
    assert document["pairs"] == {
        "rows_a": 9, "rows_b": 9, "matched": 8, "only_in_a": 1, "only_in_b": 1,
        "different_answers": 1, "unscored_a": 2, "unscored_b": 0, "unscored_either": 2,
        "off_scale": 0, "compared": 5}
    truth = document["fields"]["truthfulness"]
    assert truth["n"] == 5 and truth["exact"] == 2 / 5 and truth["within_one"] == 5 / 5
    assert truth["kappa"] == round(KAPPA_AB, 4)
    assert truth["mean_difference"] == (1 + 0 + 0 + 1 - 1) / 5
    assert truth["confusion"][2][2] == 1 and truth["confusion"][4][3] == 1  # (3, 3), (5, 4)
    assert document["systems"] == []  # one system: no per-system table
    relevance = document["fields"]["relevance"]  # 4 everywhere on both sides
    assert relevance["exact"] == 1.0 and relevance["kappa"] is None
    assert "chance alone predicts full agreement" in relevance["undefined"]["kappa"]
    assert f"A = {a} (judge: gpt-4), B = {b} (judge: small)" in printed
    assert "1 with different answers, 2 unscored on either side (A 2, B 0)" in printed
    assert "rows in one run only (no pair): A 1, B 1" in printed
    assert "NaN" not in printed and "NaN" not in (out / "agreement.json").read_text()


def test_the_pairs_that_disagree_most_come_first(tmp_path, capsys):
    rows_a = five_pairs("j1", [3, 3, 3, 3, 3])
    rows_b = five_pairs("j2", [3, 5, 1, 4, 3])  # differences 0, +2, -2, +1, 0
    rows_b[1]["answer"] = rows_a[1]["answer"] = "a | piped\nanswer"
    code, *_, out = run_pair(tmp_path, rows_a, rows_b, "--top", "2")
    printed = capsys.readouterr().out
    assert code == 0
    listed = json.loads((out / "agreement.json").read_text())["fields"]["truthfulness"]
    assert [(d["question_id"], d["a"], d["b"]) for d in listed["disagreements"]] == [
        ("q1", 3, 5), ("q2", 3, 1)]  # the two differences of 2; q3's 1 is cut by --top 2
    assert "| A_f | naive | What is q1? | a \\| piped answer | 3 | 5 |" in printed
    assert listed["spearman"] is None and "A gives every pair 3" in listed["undefined"]["spearman"]
    assert "truthfulness: kappa is 0 by construction" in printed


def test_per_system_figures_when_there_are_several_systems(tmp_path):
    rows_a = five_pairs("j1", TRUTH_A) + five_pairs("j1", [1, 2, 3, 4, 5], "baseline")
    rows_b = five_pairs("j2", TRUTH_B) + five_pairs("j2", [1, 2, 3, 5, 4], "baseline")
    code, *_, out = run_pair(tmp_path, rows_a, rows_b)
    assert code == 0
    systems = json.loads((out / "agreement.json").read_text())["systems"]
    by_system = {row["system"]: row for row in systems}
    assert set(by_system) == {"naive", "baseline"}
    assert by_system["naive"]["n"] == 5
    assert by_system["naive"]["truthfulness"]["kappa"] == round(KAPPA_AB, 4)
    assert by_system["baseline"]["truthfulness"]["exact"] == 3 / 5
    assert by_system["baseline"]["truthfulness"]["kappa"] == 1 - ((1 + 1) / 5) / (100 / 25)


def test_json_output_stays_parseable(tmp_path, capsys):
    code, *_, out = run_pair(tmp_path, five_pairs("j1", TRUTH_A), five_pairs("j2", TRUTH_B),
                             fmt="json")
    printed, err = capsys.readouterr()
    assert code == 0
    assert json.loads(printed) == json.loads((out / "agreement.json").read_text())
    assert "agreement.json written" in err


def test_the_default_output_directory_names_both_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_run(tmp_path / "gpt4", five_pairs("j1", TRUTH_A))
    write_run(tmp_path / "small", five_pairs("j2", TRUTH_B))
    assert main(["agreement", "gpt4", "small"]) == 0
    assert (tmp_path / "results" / "agreement-gpt4-vs-small" / "agreement.json").exists()


@pytest.mark.parametrize("rows_a, rows_b, said", [
    pytest.param(five_pairs("j1", TRUTH_A), [graded("q0", "naive", 3, 3, "j2", dataset="A_r")],
                 "0 rows matched", id="no-key-in-common"),
    pytest.param(five_pairs("j1", TRUTH_A),
                 [graded(f"q{i}", "naive", 3, 3, "j2", answer="other") for i in range(5)],
                 "5 with different answers", id="every-answer-differs"),
    pytest.param(five_pairs("j1", TRUTH_A), five_pairs("j2", [None] * 5),
                 "5 unscored on either side (A 0, B 5)", id="unscored-in-b"),
    pytest.param([], five_pairs("j2", TRUTH_B), "of 0 in A and 5 in B", id="a-empty"),
    pytest.param(five_pairs("j1", TRUTH_A), five_pairs("j2", [3.5, 1.5, 2.5, 4.5, 3.5]),
                 "5 with a grade off the 1..5 scale", id="off-scale"),
])
def test_no_pair_to_compare_exits_2_naming_both_directories(tmp_path, capsys, rows_a, rows_b,
                                                            said):
    code, a, b, out = run_pair(tmp_path, rows_a, rows_b)
    err = capsys.readouterr().err
    assert code == 2
    assert f"{a} and {b}: no answer scored in both" in err and said in err
    assert "Traceback" not in err and not out.exists()


@pytest.mark.parametrize("given, named", [
    pytest.param(["good", "empty"], "empty", id="b-holds-no-samples"),
    pytest.param(["empty", "good"], "empty", id="a-holds-no-samples"),
    pytest.param(["good", "missing"], "missing", id="b-does-not-exist"),
])
def test_a_directory_without_samples_exits_2_naming_it(tmp_path, capsys, given, named):
    write_run(tmp_path / "good", five_pairs("j1", TRUTH_A))
    (tmp_path / "empty").mkdir()
    args = [str(tmp_path / name) for name in given]
    assert main(["agreement", *args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / named}: no {SAMPLES}" in err and "Traceback" not in err


def test_one_directory_given_twice_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = write_run(tmp_path / "run", five_pairs("j1", TRUTH_A))
    assert main(["agreement", "run", str(run)]) == 2
    assert "are one directory" in capsys.readouterr().err


def test_released_grades_as_floats_pair_with_a_new_judge(tmp_path, capsys):
    """An import-legacy run (no calls, grades 4.0 as the released files hold some) against the
    same answers graded again."""
    released = [{"title": f"T{i}", "question": f"Q{i}?", "answer": f"A{i}", "n_input_tokens": 10,
                 "n_output_tokens": 2, "truthfulness": float(t), "relevance": 5}
                for i, t in enumerate(TRUTH_A)]
    pkl = tmp_path / "naive_A_f.pkl"
    pkl.write_bytes(pickle.dumps(released))
    assert main(["import-legacy", str(pkl), "--dataset", "A_f", "--system", "naive",
                 "--out", str(tmp_path / "paper")]) == 0
    regraded = [{**row, "grade": {**row["grade"], "truthfulness": t},
                 "calls": [{"role": "judge", "model": "small"}]}
                for row, t in zip(read_samples(tmp_path / "paper" / SAMPLES), TRUTH_B)]
    write_run(tmp_path / "small", regraded)
    capsys.readouterr()
    assert main(["agreement", str(tmp_path / "paper"), str(tmp_path / "small"),
                 "--out", str(tmp_path / "out"), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["judges"] == {"a": None, "b": "small"}
    assert document["pairs"]["compared"] == 5
    assert document["fields"]["truthfulness"]["kappa"] == round(KAPPA_AB, 4)


def test_pair_runs_keys_on_dataset_too():
    rows_a = [graded("q0", "naive", 3, 3, "j1", dataset="A_f"),
              graded("q0", "naive", 4, 4, "j1", dataset="A_r")]
    rows_b = [graded("q0", "naive", 5, 5, "j2", dataset="A_r")]
    pairs, counts = pair_runs(summaries(rows_a), summaries(rows_b))
    assert [(p["dataset"], p["a"]["truthfulness"], p["b"]["truthfulness"]) for p in pairs] == [
        ("A_r", 4, 5)]
    assert counts["only_in_a"] == 1


def two_judges(request):
    """Answers right for even towns, wrong for odd ones; judge-x grades as a working judge,
    judge-y gives 2 and 4 to every answer."""
    if request.get("tool_choice") in (None, "auto"):
        town = int(request["messages"][-1]["content"].split("Town ")[1].split()[0])
        return {"content": f"Town {town} has {town + 3 if town % 2 == 0 else 99} bridges"}
    return discerning_judge(request) if request["model"] == "judge-x" else grade_call(2, 4)


def test_a_second_run_with_only_the_judge_changed_grades_the_same_answers(tmp_path, monkeypatch,
                                                                          capsys):
    """What docs/scoring.md#judge-agreement promises: the answers replay from the response cache,
    the grades are the other judge's, and every pair is compared."""
    questions, articles = write_dataset(tmp_path, n=4, content=bridges_and_mayor)
    with FakeOpenAIServer(reply=two_judges) as server:
        use_endpoint(monkeypatch, server.base_url, "sk-x")
        for judge in ("judge-x", "judge-y"):
            monkeypatch.setenv("FRESHRAG_JUDGE_MODEL", judge)
            assert main(["run", "--questions", str(questions), "--articles", str(articles),
                         "--out", str(tmp_path / judge), "--systems", "baseline,oracle",
                         "--concurrency", "2", "--no-probe"]) == 0
        answered = [r for r in server.requests if r.get("tool_choice") in (None, "auto")]
    assert len(answered) == 4 * 2  # the second run's answers all came from the cache
    capsys.readouterr()
    assert main(["agreement", str(tmp_path / "judge-x"), str(tmp_path / "judge-y"),
                 "--out", str(tmp_path / "out"), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["judges"] == {"a": "judge-x", "b": "judge-y"}
    assert document["pairs"]["compared"] == 8 and document["pairs"]["different_answers"] == 0
    truth = document["fields"]["truthfulness"]
    assert truth["confusion"][0][1] == 4 and truth["confusion"][4][1] == 4  # 1 -> 2 and 5 -> 2
    assert truth["kappa"] == 0.0 and truth["spearman"] is None  # a constant judge: chance
    assert len(document["systems"]) == 2


def with_reason(row, reason):
    return {**row, "grade": {**row["grade"], "reason": reason}}


def test_the_pairs_that_differ_most_over_both_fields_are_shown_with_both_reasons(tmp_path,
                                                                               capsys):
    rows_a = [graded("q0", "naive", 3, 3, "j1"), graded("q1", "naive", 3, 3, "j1"),
              graded("q2", "naive", 4, 4, "j1"), graded("q3", "naive", 2, 2, "j1")]
    rows_b = [graded("q0", "naive", 3, 3, "j2"), graded("q1", "naive", 4, 4, "j2"),
              graded("q2", "naive", 1, 2, "j2"), graded("q3", "naive", 3, 2, "j2")]
    # apart by 0, 1 + 1, 3 + 2, 1 + 0 over both fields; q2's reasons given, q3's on A only
    rows_a[2], rows_b[2] = with_reason(rows_a[2], "Right | as the article says."), \
        with_reason(rows_b[2], "Contradicts the article.")
    rows_a[3] = with_reason(rows_a[3], "Vague.")
    code, *_, out = run_pair(tmp_path, rows_a, rows_b, "--top", "2")
    printed = capsys.readouterr().out
    assert code == 0
    divergent = json.loads((out / "agreement.json").read_text())["divergent"]
    assert [(d["question_id"], d["difference"]) for d in divergent] == [("q2", 5), ("q1", 2)]
    assert divergent[0]["a"] == {"truthfulness": 4, "relevance": 4,
                                 "reason": "Right | as the article says."}
    assert divergent[0]["b"] == {"truthfulness": 1, "relevance": 2,
                                 "reason": "Contradicts the article."}
    assert divergent[1]["a"]["reason"] is None and divergent[1]["b"]["reason"] is None
    assert ("| naive | What is q2? | 4/4 | 1/2 | Right \\| as the article says. | "
            "Contradicts the article. |") in printed
    assert "| naive | What is q1? | 3/3 | 4/4 | – | – |" in printed


def test_grades_that_agree_on_both_fields_list_no_divergent_pair(tmp_path, capsys):
    rows = five_pairs("j1", TRUTH_A)
    code, *_, out = run_pair(tmp_path, rows, [{**r, "calls": [{"role": "judge", "model": "j2"}]}
                                              for r in rows])
    assert code == 0
    assert json.loads((out / "agreement.json").read_text())["divergent"] == []
    assert "differ most" not in capsys.readouterr().out
