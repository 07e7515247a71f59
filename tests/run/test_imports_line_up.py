"""Answers made elsewhere line up with a run's (issue 26, item 6), end to end through the CLI on
40 questions and the fake server: `freshrag import` matches rows by id or by question text and
refuses, by file and line, a row that matches neither; `import-legacy` given the dataset's
directory takes the dataset's ids; a judge pass (`freshrag score --scorers judge`) on answers the
run left ungraded is their grade; and the report counts 40 questions and pairs every imported
system with the run's."""

from __future__ import annotations

import csv
import json
import pickle

import pytest

from freshrag.cli.main import main
from freshrag.core.dataset import load_dataset_dir
from freshrag.core.samples import read_samples
from freshrag.reporting import loading, summary_table
from freshrag.reporting.outcomes import total_score
from freshrag.scoring.store import with_judge_pass
from tests.support.datasets import write_dataset
from tests.support.fake_openai_server import default_reply, forced_tool_name
from tests.support.fakes import discerning_judge
from tests.support.rows import summaries, summary

N = 40
TRUE, FALSE = 5 + 5, 1 + 4  # discerning_judge's truthfulness + relevance of each kind of answer


def answer(i: int) -> str:
    """Town i's answer: true (found in its article) for even i, false for odd i."""
    return f"Town {i} has {i + 3 if i % 2 == 0 else 0} bridges."


def reply(request: dict) -> dict:
    """The judge grades as discerning_judge does; naive's answers echo the question."""
    if forced_tool_name(request) == "submit_grade":
        return discerning_judge(request)
    return default_reply(request)


@pytest.fixture
def dataset(tmp_path, fake_server):
    fake_server(reply=reply)
    directory = tmp_path / "towns"
    write_dataset(directory, N)
    return directory


def run_naive(dataset, out) -> None:
    assert main(["run", "--dataset", str(dataset), "--systems", "naive", "--no-probe",
                 "--out", str(out), "--index-dir", str(out.parent / "index")]) == 0


def import_answers(path, system, dataset, out) -> int:
    return main(["import", str(path), "--system", system, "--dataset", str(dataset),
                 "--no-probe", "--out", str(out)])


def write_by_id(path, questions) -> None:
    path.write_text("".join(json.dumps({"question_id": q.id, "answer": answer(i)}) + "\n"
                            for i, q in enumerate(questions)), encoding="utf-8")


def write_by_text(path, questions, extra=()) -> None:
    """Ragas' columns, each question re-cased and re-spaced as another tool might."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["user_input", "response", "retrieved_contexts"])
        writer.writerows([f"  {q.text.upper().replace(' ', '  ')}", answer(i),
                          json.dumps([f"Town {i} has {i + 3} bridges."])]
                         for i, q in enumerate(questions))
        writer.writerows([*row, "[]"] for row in extra)


def paired(analysis, a, b):
    """The paired comparison of systems a and b as a minus b, whichever way the report put it."""
    for row in analysis["paired"]:
        if (row["a"], row["b"]) == (a, b):
            return row["questions"], row["mean_difference"]
        if (row["a"], row["b"]) == (b, a):
            return row["questions"], -row["mean_difference"]
    return None


def expected_difference(run_dir, graded) -> float:
    """naive's grades as its run recorded them, minus the graded answers', over the questions."""
    naive = {row["question_id"]: total_score(summary(row)) for row in read_samples(run_dir / "samples.jsonl")}
    return round(sum(naive[qid] - graded[qid] for qid in graded) / len(graded), 4)


def test_imports_by_id_and_by_text_stand_beside_the_run(tmp_path, dataset, capsys):
    questions = load_dataset_dir(dataset).questions
    run_naive(dataset, tmp_path / "run")
    write_by_id(tmp_path / "by-id.jsonl", questions)
    write_by_text(tmp_path / "by-text.csv", questions)
    capsys.readouterr()
    assert import_answers(tmp_path / "by-id.jsonl", "ids", dataset, tmp_path / "ids") == 0
    assert "40 rows matched to the dataset's questions (40 by id)" in capsys.readouterr().out
    assert import_answers(tmp_path / "by-text.csv", "texts", dataset, tmp_path / "texts") == 0
    assert "40 rows matched to the dataset's questions (40 by question text)" in \
        capsys.readouterr().out
    runs = [tmp_path / "run", tmp_path / "ids", tmp_path / "texts"]
    assert main(["report", *map(str, runs), "--out", str(tmp_path / "report")]) == 0
    rows = loading.load_runs(runs)
    assert {(row["dataset"], row["question_id"]) for row in rows} == {
        ("towns", q.id) for q in questions}  # what the HTML page's "Questions (N)" counts
    summary = {row["system"]: row for row in summary_table.summarise(summaries(rows))}
    assert {name: (row["n"], row["scored"]) for name, row in summary.items()} == {
        "naive": (N, N), "ids": (N, N), "texts": (N, N)}
    analysis = json.loads((tmp_path / "report" / "analysis.json").read_text())
    graded = {q.id: TRUE if i % 2 == 0 else FALSE for i, q in enumerate(questions)}
    for system in ("ids", "texts"):
        assert paired(analysis, "naive", system) == (N, expected_difference(runs[0], graded))
    # the CSV's contexts are bare texts: which article they came from is unknown, not a miss
    assert [row["system"] for row in analysis["retrieval"]] == ["naive"]
    assert summary["texts"]["retrievals"] == N


def test_a_row_matching_no_question_is_refused_by_file_and_line(tmp_path, dataset, capsys):
    questions = load_dataset_dir(dataset).questions
    write_by_text(tmp_path / "answers.csv", questions[:3],
                  extra=[["How many bridges does Atlantis have?", "None."]])
    capsys.readouterr()
    assert import_answers(tmp_path / "answers.csv", "theirs", dataset, tmp_path / "out") != 0
    error = capsys.readouterr().err
    assert f"{tmp_path / 'answers.csv'}:5: matches no question of the dataset: its question " \
           f"'How many bridges does Atlantis have?' is not one of the dataset's" in error
    assert "Traceback" not in error and not (tmp_path / "out" / "samples.jsonl").exists()


def test_a_question_without_a_row_is_listed_and_fails_its_pair(tmp_path, dataset, capsys):
    questions = load_dataset_dir(dataset).questions
    write_by_id(tmp_path / "some.jsonl", questions[:38])
    capsys.readouterr()
    assert import_answers(tmp_path / "some.jsonl", "some", dataset, tmp_path / "out") == 1
    missing = [q.id for q in questions[38:]]
    assert (f"38 rows matched to the dataset's questions (38 by id); 2 questions of the "
            f"dataset without a row: {', '.join(missing)}") in capsys.readouterr().out
    failed = [row for row in read_samples(tmp_path / "out" / "samples.jsonl")
              if row["status"] == "failed"]
    assert sorted(row["question_id"] for row in failed) == sorted(missing)
    assert all("has no answer for question" in row["error"] for row in failed)


def test_a_judge_pass_grades_a_legacy_import_beside_the_run(tmp_path, dataset, capsys):
    questions = load_dataset_dir(dataset).questions
    run_naive(dataset, tmp_path / "run")
    released = [{"title": q.gold_title, "question": q.text.lower(), "answer": answer(i),
                 "n_input_tokens": 100, "n_output_tokens": 10} for i, q in enumerate(questions)]
    (tmp_path / "paper.pkl").write_bytes(pickle.dumps(released))
    capsys.readouterr()
    assert main(["import-legacy", str(tmp_path / "paper.pkl"), "--dataset", str(dataset),
                 "--system", "paper", "--out", str(tmp_path / "paper")]) == 0
    assert "40 rows matched to the dataset's questions (40 by question text)" in \
        capsys.readouterr().out
    runs = [tmp_path / "run", tmp_path / "paper"]
    before = {row["system"]: row for row in summary_table.summarise(summaries(loading.load_runs(runs)))}
    assert (before["paper"]["scored"], before["paper"]["unscored"]) == (0, N)
    assert main(["score", str(tmp_path / "paper"), "--scorers", "judge",
                 "--dataset", str(dataset)]) == 0
    assert main(["report", *map(str, runs), "--out", str(tmp_path / "report")]) == 0
    rows = loading.load_runs(runs)
    assert len({row["question_id"] for row in rows}) == N
    paper = {row["system"]: row for row in summary_table.summarise(summaries(rows))}["paper"]
    assert (paper["n"], paper["scored"], paper["unscored"]) == (N, N, 0)
    assert paper["truthfulness"] == pytest.approx((5 * 20 + 1 * 20) / N)
    assert paper["relevance"] == pytest.approx((5 * 20 + 4 * 20) / N)
    assert paper["models"] == {"answer": "gpt-4-0613", "judge": "fake-model"}
    analysis = json.loads((tmp_path / "report" / "analysis.json").read_text())
    assert not any(row["system"] == "paper" for row in analysis.get("scorers") or [])
    graded = {q.id: TRUE if i % 2 == 0 else FALSE for i, q in enumerate(questions)}
    assert paired(analysis, "naive", "paper") == (N, expected_difference(runs[0], graded))


def grade(truthfulness, relevance, reason=None):
    return {"truthfulness": truthfulness, "relevance": relevance, "unscored_reason": reason,
            "raw": []}


def judge_score(truthfulness, relevance, status="scored", why=None):
    return {"status": status, "metrics": {"truthfulness": truthfulness, "relevance": relevance},
            "usage": {"judge": {"input": 100, "output": 8, "estimated": False}},
            "models": {"judge": "judge-model"}, "raw": ["{}"], "details": {"reason": why},
            "reason": None, "answer_sha256": "sha"}


def row_with(grade_, scores, status="ok"):
    return {"status": status, "grade": grade_, "scores": scores, "models": {"answer": "m"},
            "usage": {"answer": {"input": 5, "output": 2, "estimated": False}}}


def test_a_judge_pass_is_the_grade_only_of_a_row_the_run_did_not_grade():
    ungraded = with_judge_pass(row_with(grade(None, None, "not scored in the released file"),
                                        {"judge": judge_score(4, 3), "claims": {"status": "x"}}))
    assert (ungraded["grade"]["truthfulness"], ungraded["grade"]["relevance"]) == (4, 3)
    assert ungraded["grade"]["unscored_reason"] is None
    assert ungraded["models"] == {"answer": "m", "judge": "judge-model"}
    assert ungraded["usage"]["judge"] == {"input": 100, "output": 8, "estimated": False}
    assert ungraded["scores"] == {"claims": {"status": "x"}}
    assert with_judge_pass(row_with(None, {"judge": judge_score(2, 2)}))["grade"]["relevance"] == 2
    said = with_judge_pass(row_with(None, {"judge": judge_score(2, 2, why="It misses the date.")}))
    assert said["grade"]["reason"] == "It misses the date."  # the judge's reason goes with it
    graded = row_with(grade(5, 5), {"judge": judge_score(1, 1)})  # a second opinion: kept apart
    unusable = row_with(None, {"judge": judge_score(None, None, status="unscored")})
    failed = row_with(None, {"judge": judge_score(3, 3)}, status="failed")
    for row in (graded, unusable, failed):
        assert with_judge_pass(row) == row
