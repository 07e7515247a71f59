"""`freshrag agreement --human` (harness/reporting/human.py, docs/human-labels.md): the judge
against people and people against each other on labels written here by hand, each figure
against its definition or scikit-learn, the means people's labels give against core/ppi.py and
the report's bootstrap, and the command end to end with its errors.

Keys and answer digests are computed here from their definition (SHA-256 of the UTF-8 text)."""

from __future__ import annotations

import hashlib
import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score

from freshrag.cli.main import main
from freshrag.core.ppi import ppi_mean
from freshrag.core.stats import bootstrap_interval, mean
from freshrag.reporting import human
from freshrag.reporting.labels import read_labels, resolve
from freshrag.reporting.loading import load_summaries
from tests.support.runs import sample, write_run

# the judge's grades of q0..q5 of `naive` (truthfulness, relevance), and two people's
JUDGE = [(5, 5), (4, 5), (5, 4), (2, 3), (5, 5), (3, 4)]
ADA = [(4, 5), (4, 4), (2, 4), (2, 3), (4, 5), (1, 3)]
BEN = [(5, 5), (3, 4), (2, 3), None, (4, 4), (2, 3)]  # ben skipped q3


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def label(question: str, grades: tuple[int, int], labeller: str, system: str = "naive",
          answer: str | None = None, note: str = "") -> dict[str, Any]:
    return {"freshrag_labels": 1, "key": sha(f"A_f\n{question}\n{system}"), "dataset": "A_f",
            "question_id": question, "answer_sha256": sha(answer or f"{system} says {question}"),
            "truthfulness": grades[0], "relevance": grades[1], "note": note,
            "labeller": labeller, "labelled_at": "2026-11-26T20:00:00Z", "seed": 7}


def write_labels(path: Path, *records: Any) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in records), encoding="utf-8")
    return path


def graded(question: str, system: str, grades: tuple[int, int], reason: str | None = None):
    row = {**sample(question, system, *grades), "answer": f"{system} says {question}"}
    row["grade"]["reason"] = reason
    return row


@pytest.fixture
def labelled(tmp_path):
    """A run of `naive` (q0..q5) and `react` (q0..q9, unlabelled but for q0), and two people's
    files; ada's note and the judge's reason on q2, where they differ most."""
    rows = [graded(f"q{i}", "naive", g, "Says what the article says." if i == 2 else None)
            for i, g in enumerate(JUDGE)]
    rows += [graded(f"q{i}", "react", (3 + i % 3, 4)) for i in range(10)]
    run = write_run(tmp_path / "run", rows)
    ada = write_labels(tmp_path / "ada.jsonl", *(
        label(f"q{i}", g, "ada", note="the year is wrong" if i == 2 else "")
        for i, g in enumerate(ADA)), label("q0", (2, 2), "ada", system="react",
                                           answer="react says q0"))
    ben = write_labels(tmp_path / "ben.jsonl", *(
        label(f"q{i}", g, "ben") for i, g in enumerate(BEN) if g is not None))
    return run, ada, ben


def document(run: Path, *files: Path) -> dict[str, Any]:
    answers = load_summaries([run])
    read = read_labels(list(files))
    return human.human_document(read, resolve(read, answers), answers)


def test_the_judge_against_people_per_field(labelled):
    run, ada, ben = labelled
    judge = document(run, ada, ben)["judge"]
    # every label is one pair: ada's six and react's one, ben's five
    pairs = [(ADA[i], JUDGE[i]) for i in range(6)] + [((2, 2), (3, 4))] + \
        [(BEN[i], JUDGE[i]) for i in range(6) if BEN[i] is not None]
    assert judge["pairs"] == 12 and judge["unscored"] == 0
    for index, field in enumerate(("truthfulness", "relevance")):
        people = [p[index] for p, _ in pairs]
        grades = [j[index] for _, j in pairs]
        figures = judge["fields"][field]
        assert figures["n"] == 12
        assert figures["kappa"] == pytest.approx(cohen_kappa_score(people, grades), abs=1e-4)
        assert figures["kappa_quadratic"] == pytest.approx(
            cohen_kappa_score(people, grades, weights="quadratic"), abs=1e-4)
        assert figures["bias"] == pytest.approx(statistics.mean(grades) - statistics.mean(people),
                                                abs=1e-4)
        assert figures["mean_judge"] == pytest.approx(statistics.mean(grades), abs=1e-4)
        assert figures["exact"] == pytest.approx(
            sum(p == g for p, g in zip(people, grades)) / 12, abs=1e-4)


def test_the_answers_that_differ_most_carry_the_judges_reason_and_the_persons_note(labelled):
    run, ada, ben = labelled
    found = document(run, ada, ben)["judge"]["divergent"]
    # apart over both fields: ben's q2 (5/4 against 2/3) by 4, then by 3 ada's q2, q5 and
    # react's q0, in key order (system, question), then by 2 ben's q1 first of five
    assert [(d["system"], d["question_id"], d["person"]["labeller"], d["difference"])
            for d in found] == [("naive", "q2", "ben", 4), ("naive", "q2", "ada", 3),
                                ("naive", "q5", "ada", 3), ("react", "q0", "ada", 3),
                                ("naive", "q1", "ben", 2)]
    assert found[1]["judge"] == {"truthfulness": 5, "relevance": 4,
                                 "reason": "Says what the article says."}
    assert found[1]["person"] == {"truthfulness": 2, "relevance": 4, "note": "the year is wrong",
                                  "labeller": "ada"}
    assert found[0]["person"]["note"] is None and found[2]["judge"]["reason"] is None


def test_people_against_each_other_over_the_answers_both_labelled(labelled):
    run, ada, ben = labelled
    people = document(run, ada, ben)["people"]
    (pair,) = people["table"]
    shared = [i for i in range(6) if BEN[i] is not None]  # not q3, nor react's q0
    assert (pair["a"], pair["b"], pair["n"]) == ("ada", "ben", len(shared))
    assert (people["pairs"], people["counted"], people["sampled"], people["labeller_pairs"]) \
        == (5, 5, False, 1)
    assert people["pooled"] == {field: pair[field] for field in ("truthfulness", "relevance")}
    a, b = [ADA[i][0] for i in shared], [BEN[i][0] for i in shared]
    assert pair["truthfulness"]["kappa_quadratic"] == pytest.approx(
        cohen_kappa_score(a, b, weights="quadratic"), abs=1e-4)
    assert pair["truthfulness"]["bias"] == pytest.approx(mean(b) - mean(a), abs=1e-4)


def test_the_means_with_labels_are_ppi_beside_the_judges_bootstrap(labelled):
    run, ada, ben = labelled
    table = {row["system"]: row for row in document(run, ada, ben)["intervals"]}
    naive = table["naive"]
    assert (naive["labelled"], naive["judged"]) == (6, 0)
    truth = [j[0] for j in JUDGE]
    assert naive["truthfulness"] == [mean(truth, places=4),
                                     *bootstrap_interval([float(t) for t in truth], mean)]
    # an answer two people labelled counts once, with their mean grade
    people = [statistics.mean([ADA[i][0]] + ([BEN[i][0]] if BEN[i] else [])) for i in range(6)]
    found = ppi_mean(people, truth, [])
    assert found is not None
    assert naive["truthfulness_ppi"] == [round(found.mean, 4), round(found.low, 4),
                                         round(found.high, 4)]
    assert naive["truthfulness_lambda"] == 0.0  # nothing judged only
    react = table["react"]  # one labelled answer: no interval of people's grades
    assert (react["labelled"], react["judged"], react["truthfulness_ppi"]) == (1, 9, None)


def test_a_label_of_another_answer_text_is_left_out_and_counted(labelled, tmp_path):
    run, ada, _ = labelled
    stale = write_labels(tmp_path / "stale.jsonl", label("q1", (1, 1), "cy", answer="old text"),
                         label("q99", (1, 1), "cy"))
    found = document(run, ada, stale)
    assert found["labels"] | {"labellers": None} == {
        "read": 9, "labellers": None, "answers": 9, "matched": 7, "unknown": 1, "changed": 1}
    assert any("another answer text" in note for note in found["notes"])
    assert found["judge"]["pairs"] == 7  # cy's labels compared with nothing


def test_the_command_with_the_run_after_the_files(labelled, tmp_path, capsys):
    run, ada, ben = labelled
    out = tmp_path / "out"
    assert main(["agreement", "--human", str(ada), str(ben), str(run), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "### The judge against people (12 labels" in printed
    assert "the year is wrong" in printed and "Says what the article says." in printed
    assert "### People against each other" in printed and "truthfulness_ppi" in printed
    saved = json.loads((out / "agreement.json").read_text(encoding="utf-8"))
    assert saved["run"] == str(run) and saved["judge"]["pairs"] == 12


def test_the_command_without_a_run_compares_people_only(labelled, tmp_path, capsys):
    _, ada, ben = labelled
    assert main(["agreement", "--human", str(ada), str(ben), "--format", "json",
                 "--out", str(tmp_path / "out")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert "judge" not in printed and printed["people"]["table"][0]["n"] == 5


def test_one_labellers_repeated_label_the_last_line_wins(labelled, tmp_path, capsys):
    run, ada, _ = labelled
    again = write_labels(tmp_path / "again.jsonl", label("q2", (5, 4), "ada"))
    assert main(["agreement", "--human", str(ada), str(again), str(run), "--format", "json",
                 "--out", str(tmp_path / "out")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["judge"]["pairs"] == 7
    assert all(d["question_id"] != "q2" for d in printed["judge"]["divergent"])


@pytest.mark.parametrize("args, message", [
    pytest.param(["RUN", "RUN2"], "give one run directory, not 2", id="two-runs"),
    pytest.param(["RUN", "--repeat-a", "0"], "--repeat-a and --repeat-b compare two gradings",
                 id="repeats"),
    pytest.param(["BAD"], "bad.jsonl:2: `truthfulness` is 7", id="a-bad-line"),
    pytest.param(["MISSING"], "missing.jsonl", id="no-such-file"),
])
def test_bad_input_is_one_line_naming_it(labelled, tmp_path, capsys, args, message):
    run, ada, _ = labelled
    bad = write_labels(tmp_path / "bad.jsonl", label("q1", (3, 3), "x"), label("q2", (7, 3), "x"))
    other = write_run(tmp_path / "run2", [graded("q0", "naive", (4, 4))])
    named = {"RUN": str(run), "RUN2": str(other), "BAD": str(bad),
             "MISSING": str(tmp_path / "missing.jsonl")}
    code = main(["agreement", "--human", str(ada), *(named.get(a, a) for a in args),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_two_runs_without_human_are_still_required(tmp_path, capsys):
    run = write_run(tmp_path / "run", [graded("q0", "naive", (4, 4))])
    assert main(["agreement", str(run)]) == 2
    assert "give two run directories (RUN_A RUN_B), or --human LABELS" in capsys.readouterr().err


def crowd(labellers: int, answers: int, per_labeller: int) -> list[Any]:
    """`labellers` people, each labelling `per_labeller` answers (a round robin over
    `answers`), with grades from the question and the person."""
    return [label(f"q{(person * per_labeller + k) % answers}",
                  (1 + (person + k) % 5, 1 + person % 5), f"p{person:05d}")
            for person in range(labellers) for k in range(per_labeller)]


def test_a_crowd_is_compared_in_bounded_work_and_output(tmp_path, capsys, monkeypatch):
    # 10,000 labels by 2,000 labellers: every pair of labellers was 2 million rows, unending
    path = write_labels(tmp_path / "crowd.jsonl", *crowd(2_000, 500, 5))
    assert main(["agreement", "--human", str(path), "--format", "json",
                 "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    document = json.loads(printed)
    people = document["people"]
    assert document["labels"]["read"] == 10_000 and len(people["table"]) == human.PEOPLE_SHOWN
    assert people["pairs"] == people["counted"] == 500 * 190  # 20 labels per answer
    assert people["pooled"]["truthfulness"]["n"] == 500 * 190
    assert len(printed) < 200_000
    assert any("pairs of labellers with the most answers in common listed" in note
               for note in document["notes"])
    markdown = human.render(document)
    assert "2,000 labellers (p00000," in markdown and markdown.count("\n") < 100

    # past PAIRS_COUNTED, a seeded sample of that many, stated
    monkeypatch.setattr(human, "PAIRS_COUNTED", 1_000)
    labels = read_labels([path])
    sampled = human.human_document(labels, None, None, seed=3)
    assert (sampled["people"]["counted"], sampled["people"]["sampled"]) == (1_000, True)
    assert human.human_document(labels, None, None, seed=3)["people"] == sampled["people"]
    assert any("1,000 pairs of labels of one answer drawn at random (seed 3) of 95,000" in note
               for note in sampled["notes"])
