"""`freshrag report RUN --human LABELS...` (docs/human-labels.md#in-the-report): the judge
section gains the judge against people and the means the labels correct, in the printed
markdown, the JSON report, analysis.json and the HTML page; bad labels stop it before anything
is written."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from freshrag.cli.main import main
from tests.support.runs import sample, write_run

JUDGE = {"q0": (5, 5), "q1": (5, 4), "q2": (4, 5), "q3": (5, 5), "q4": (3, 4)}
PERSON = {"q0": (4, 5), "q1": (3, 4), "q2": (3, 4)}  # the judge grades higher


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def label(question: str, grades: tuple[int, int], labeller: str = "ada") -> dict[str, Any]:
    return {"freshrag_labels": 1, "key": sha(f"A_f\n{question}\nnaive"), "dataset": "A_f",
            "question_id": question, "answer_sha256": sha("an answer"),
            "truthfulness": grades[0], "relevance": grades[1], "note": "",
            "labeller": labeller, "labelled_at": "2026-11-26T20:00:00Z", "seed": 0}


@pytest.fixture
def run_and_labels(tmp_path):
    run = write_run(tmp_path / "run", [sample(q, "naive", *g) for q, g in JUDGE.items()])
    labels = tmp_path / "ada.jsonl"
    labels.write_text("".join(json.dumps(label(q, g)) + "\n" for q, g in PERSON.items()),
                      encoding="utf-8")
    return run, labels


def test_the_printed_report_shows_the_judge_against_people_and_the_corrected_means(
        run_and_labels, tmp_path, capsys):
    run, labels = run_and_labels
    assert main(["report", str(run), "--human", str(labels), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    # truthfulness: judge 5, 5, 4 against 4, 3, 3: bias (14 - 10) / 3
    assert "Judge against people (3 labels by 1 labeller): truthfulness kappa" in printed
    assert "bias +1.33" in printed
    assert "### Means with people's labels" in printed and "truthfulness_ppi" in printed
    saved = json.loads((tmp_path / "out" / "analysis.json").read_text(encoding="utf-8"))
    (means,) = saved["judge"]["human"]["intervals"]
    assert (means["labelled"], means["judged"]) == (3, 2)
    assert means["truthfulness_ppi"][0] < means["truthfulness"][0]  # the labels pull it down


def test_the_json_report_and_the_html_page_carry_it(run_and_labels, tmp_path, capsys):
    run, labels = run_and_labels
    page = tmp_path / "report.html"
    assert main(["report", str(run), "--human", str(labels), "--format", "json",
                 "--out", str(tmp_path / "out"), "--html", str(page)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["judge"]["human"]["judge"]["pairs"] == 3
    text = page.read_text(encoding="utf-8")
    assert '<section id="people">' in text and 'id="people-intervals"' in text
    assert "Judge against people (3 labels" in text  # in the judge's box at the top


def test_without_labels_the_report_has_no_such_section(run_and_labels, tmp_path, capsys):
    run, _ = run_and_labels
    assert main(["report", str(run), "--format", "json", "--out", str(tmp_path / "out")]) == 0
    assert "human" not in json.loads(capsys.readouterr().out)["judge"]


def test_a_bad_labels_file_stops_the_report_before_anything_is_written(run_and_labels, tmp_path,
                                                                        capsys):
    run, labels = run_and_labels
    labels.write_text(json.dumps(label("q0", (4, 5))) + "\n{not json\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["report", str(run), "--human", str(labels), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{labels}:2: not valid JSON" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_an_output_that_is_a_labels_file_is_refused(run_and_labels, capsys):
    run, labels = run_and_labels
    before = labels.read_bytes()
    assert main(["report", str(run), "--human", str(labels), "--html", str(labels)]) == 2
    assert "--human" in capsys.readouterr().err and labels.read_bytes() == before
