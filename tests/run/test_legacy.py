"""`freshrag import-legacy` on pickles written in the format of the paper's released runs, then
`freshrag report` on them. The released pickles are not in the repository, so the table values
are checked on rows made here: a few by hand with their means and sums worked out as arithmetic
in the test, and many at random against sums the test keeps while making them. A pickle that
would run code is refused; every command's exit code is checked."""

import json
import pickle
import random
from datetime import datetime
from fractions import Fraction

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from freshrag.run.legacy import LegacyError, load_pickle, retrieved_titles
from tests.support.datasets import write_dataset
from tests.support.legacy import import_rows, row


def chunks(*titles):
    return "\n\n".join(f"Title: {title}\nSome retrieved text." for title in titles)


def report_rows(run_dir, capsys):
    capsys.readouterr()
    assert main(["report", str(run_dir), "--format", "json"]) == 0
    return {(r["dataset"], r["system"]): r for r in json.loads(capsys.readouterr().out)["rows"]}


# As released: the naive runs say retrieved=False though every answer retrieved; a retrieval is
# counted where the context holds chunks, or where the flag says so (advanced, row 1).
NAIVE = [row(0, 5, 4, 1200, 30, context=chunks("Velmora", "Ostrava Line")),
         row(1, 4.0, 5, 800, 20, context=chunks("Velmora")),
         row(2, 2, 1, 1000, 25),
         row(3, 5, 5, 1500, 45, context=[chunks("Kestrel Dam"), chunks("Velmora")])]
ADVANCED = [row(0, 5, 5, 2000, 60, retrieved=True, context=chunks("Velmora")),
            row(1, 3, 4, 2500, 80, retrieved=True),
            row(2, 4, 4, 900, 40)]


def test_table_values_are_plain_means_and_sums_of_the_rows(tmp_path, capsys):
    import_rows(tmp_path, NAIVE, "A_f", "naive", tmp_path / "runs")
    import_rows(tmp_path, ADVANCED, "A_f", "advanced", tmp_path / "runs")
    table = report_rows(tmp_path / "runs", capsys)
    assert set(table) == {("A_f", "naive"), ("A_f", "advanced")}
    naive, advanced = table[("A_f", "naive")], table[("A_f", "advanced")]
    assert (naive["n"], naive["scored"], naive["unscored"]) == (4, 4, 0)
    assert naive["truthfulness"] == pytest.approx((5 + 4 + 2 + 5) / 4)  # 4.0
    assert naive["relevance"] == pytest.approx((4 + 5 + 1 + 5) / 4)  # 3.75
    assert naive["input_tokens"] == 1200 + 800 + 1000 + 1500
    assert naive["output_tokens"] == 30 + 20 + 25 + 45
    assert naive["retrievals"] == 3  # rows 0, 1 and 3 hold chunks; row 2 none
    assert (advanced["n"], advanced["scored"]) == (3, 3)
    assert advanced["truthfulness"] == pytest.approx((5 + 3 + 4) / 3)  # 4.0
    assert advanced["relevance"] == pytest.approx((5 + 4 + 4) / 3, abs=1e-4)  # 4.3333
    assert advanced["input_tokens"] == 2000 + 2500 + 900
    assert advanced["output_tokens"] == 60 + 80 + 40
    assert advanced["retrievals"] == 2  # flagged, with and without chunks


def random_run(n, rng):
    """n rows with scores and token counts drawn freely (aimed at no table), and the sums and
    retrieving rows as they were drawn."""
    rows, kept = [], {"truthfulness": Fraction(0), "relevance": Fraction(0), "input": 0,
                      "output": 0, "retrieving": 0}
    for i in range(n):
        t, r = rng.randint(1, 5), rng.choice([1, 2, 3, 4, 5, 1.0, 5.0])
        n_in, n_out = rng.randint(0, 5000), rng.randint(0, 400)
        kind = rng.choice(["chunks", "flag", "none"])
        rows.append(row(i, t, r, n_in, n_out, retrieved=kind == "flag",
                        context=chunks(f"Hit {i}") if kind == "chunks" else ""))
        kept["truthfulness"] += Fraction(t)
        kept["relevance"] += Fraction(r)
        kept["input"] += n_in
        kept["output"] += n_out
        kept["retrieving"] += kind != "none"
    return rows, kept


@pytest.mark.parametrize("seed, n", [pytest.param(1, 1, id="one-row"), pytest.param(2, 37, id="37"),
                                     pytest.param(3, 300, id="300")])
def test_random_runs_report_the_sums_kept_while_making_them(tmp_path, capsys, seed, n):
    rows, kept = random_run(n, random.Random(seed))
    import_rows(tmp_path, rows, "A_r", "naive", tmp_path / "run")
    got = report_rows(tmp_path / "run", capsys)[("A_r", "naive")]
    assert got["n"] == got["scored"] == n
    assert got["truthfulness"] == pytest.approx(float(kept["truthfulness"] / n), abs=1e-4)
    assert got["relevance"] == pytest.approx(float(kept["relevance"] / n), abs=1e-4)
    assert (got["input_tokens"], got["output_tokens"]) == (kept["input"], kept["output"])
    assert got["retrievals"] == kept["retrieving"]


def test_retrieved_titles_come_from_the_chunk_headers(tmp_path):
    rows = [row(0, 5, 5, context=chunks("Velmora", "Ostrava Line")),
            row(1, 5, 5, context=[chunks("Kestrel Dam"),
                                  "Title: Marrow\nIts sign reads Title: Deed, mid-line"]),
            row(2, 5, 5, retrieved=True),  # flagged, but no chunks to name: unknown, not a miss
            row(3, 5, 5)]
    import_rows(tmp_path, rows, "A_f", "naive", tmp_path / "run", protocol=2)  # old protocols too
    imported = read_samples(tmp_path / "run" / "samples.jsonl")
    assert [s["details"]["retrieved"] for s in imported] == [
        [{"title": "Velmora"}, {"title": "Ostrava Line"}],
        [{"title": "Kestrel Dam"}, {"title": "Marrow"}], None, None]
    assert [s["retrievals"] for s in imported] == [1, 1, 1, 0]
    assert retrieved_titles(["Title: A\ntext", "Title: B\nmore"]) == ["A", "B"]


def test_titles_are_imported_in_the_one_form_gold_titles_are_compared_in(tmp_path):
    decomposed = "Zu\u0308rich Line"  # "ü" as u and a combining diaeresis: NFC makes it one
    rows = [{**row(0, 5, 5, context=chunks(decomposed, "Line\u2028Two")), "title": decomposed}]
    import_rows(tmp_path, rows, "A_f", "naive", tmp_path / "run")
    [imported] = read_samples(tmp_path / "run" / "samples.jsonl")
    assert imported["gold_title"] == "Z\u00fcrich Line"
    assert imported["details"]["retrieved"] == [{"title": "Z\u00fcrich Line"},
                                                {"title": "Line\u2028Two"}]


def test_importing_again_replaces_never_duplicates(tmp_path, capsys):
    import_rows(tmp_path, NAIVE, "A_f", "naive", tmp_path / "run")
    import_rows(tmp_path, ADVANCED, "A_f", "advanced", tmp_path / "run")
    import_rows(tmp_path, NAIVE[:2], "A_f", "naive", tmp_path / "run")
    systems = [s["system"] for s in read_samples(tmp_path / "run" / "samples.jsonl")]
    assert sorted(systems) == ["advanced"] * 3 + ["naive"] * 2
    table = report_rows(tmp_path / "run", capsys)
    assert table[("A_f", "naive")]["input_tokens"] == 1200 + 800


def test_unscored_files_are_counted_not_averaged(tmp_path, capsys):
    import_rows(tmp_path, [row(i) for i in range(10)], "A_r", "baseline", tmp_path / "run")
    (got,) = report_rows(tmp_path / "run", capsys).values()
    assert (got["n"], got["scored"], got["unscored"], got["truthfulness"]) == (10, 0, 10, None)


class Exploit:
    def __reduce__(self):
        import os
        return os.system, ("touch exploited",)


def test_a_pickle_that_would_run_code_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps([{"title": "x", "question": "q", "answer": Exploit()}]))
    assert main(["import-legacy", str(path), "--dataset", "A_f", "--system", "naive",
                 "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "refused to load" in err and "system" in err
    assert not (tmp_path / "exploited").exists() and not (tmp_path / "run").exists()


@pytest.mark.parametrize("payload, message", [
    ([{"title": "x", "question": "q", "answer": "a", "n_input_tokens": 1,
       "n_output_tokens": 1, "date": datetime(2023, 1, 1)}], "refused to load datetime"),
    ({"title": "x"}, "expected a list of dicts"),
    ([{"title": "x", "question": "q", "answer": "a", "n_input_tokens": 1}],
     "row 0: missing n_output_tokens"),
    ([{"title": "x", "question": "q", "answer": "a", "n_input_tokens": "12",
       "n_output_tokens": 1}], "row 0: n_input_tokens is '12'"),
    ([{"title": "x", "question": "q", "answer": "a", "n_input_tokens": 1, "n_output_tokens": 1,
       "truthfulness": "high", "relevance": 4}], "row 0: truthfulness is 'high'"),
])
def test_bad_files_name_the_file_row_and_field(tmp_path, payload, message, capsys):
    path = tmp_path / "bad.pkl"
    path.write_bytes(pickle.dumps(payload))
    assert main(["import-legacy", str(path), "--dataset", "A", "--system", "s",
                 "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and message in err


def test_a_file_that_is_not_a_pickle(tmp_path):
    path = tmp_path / "notes.pkl"
    path.write_text("not a pickle")
    with pytest.raises(LegacyError, match="not a plain pickle"):
        load_pickle(path)
    with pytest.raises(LegacyError, match="no such file"):
        load_pickle(tmp_path / "absent.pkl")


def questions_dir(tmp_path, n):
    """A dataset whose questions are "Question i?" about "Article i", as the rows above ask."""
    write_dataset(tmp_path / "A_f", questions=[
        {"id": f"q{i}", "title": f"Article {i}", "question": f"Question {i}?", "label": "summary"}
        for i in range(n)], articles=[{"title": f"Article {i}", "content": "text"}
                                      for i in range(n)])
    return tmp_path / "A_f"


def test_given_the_dataset_rows_take_its_question_ids(tmp_path, capsys):
    dataset = questions_dir(tmp_path, 4)
    released = [{**row(2, 5, 4), "question": "  QUESTION 2? "}, row(0, 3, 3)]
    path = tmp_path / "paper.pkl"
    path.write_bytes(pickle.dumps(released))
    assert main(["import-legacy", str(path), "--dataset", str(dataset), "--system", "naive",
                 "--out", str(tmp_path / "run")]) == 0
    assert (f"{path}: 2 row(s) matched to the dataset's questions (2 by question text); 2 "
            f"question(s) of the dataset have no row: q1, q3") in capsys.readouterr().out
    imported = read_samples(tmp_path / "run" / "samples.jsonl")
    assert [(r["dataset"], r["question_id"], r["question"], r["label"]) for r in imported] == [
        ("A_f", "q2", "Question 2?", "summary"), ("A_f", "q0", "Question 0?", "summary")]


@pytest.mark.parametrize("released, message", [
    ([row(0), row(7)], "row 1: matches no question of the dataset: its question 'Question 7?' "
                       "is not one of the dataset's"),
    ([row(1), row(0), {**row(1), "question": "question 1?"}],
     "row 2: asks question 'q1' again (first at row 0)"),
])
def test_a_row_asking_no_question_or_one_again_is_refused_naming_it(tmp_path, capsys, released,
                                                                    message):
    path = tmp_path / "paper.pkl"
    path.write_bytes(pickle.dumps(released))
    assert main(["import-legacy", str(path), "--dataset", str(questions_dir(tmp_path, 2)),
                 "--system", "naive", "--out", str(tmp_path / "run")]) == 2
    assert f"{path}: {message}" in capsys.readouterr().err
    assert not (tmp_path / "run" / "samples.jsonl").exists()


def test_a_row_of_a_multi_article_question_takes_its_gold_set(tmp_path, capsys):
    """Rows match questions as for one article; the row carries the question's gold set."""
    dataset = questions_dir(tmp_path, 2)
    questions = dataset / "questions.jsonl"
    first, *rest = questions.read_text().splitlines()
    two = {**json.loads(first), "gold_titles": ["Article 0", "Article 1"], "multihop": "bridge"}
    questions.write_text("\n".join([json.dumps(two), *rest]) + "\n")
    path = tmp_path / "paper.pkl"
    path.write_bytes(pickle.dumps([row(0, 3, 3), row(1, 4, 4)]))
    assert main(["import-legacy", str(path), "--dataset", str(dataset), "--system", "naive",
                 "--out", str(tmp_path / "run")]) == 0
    imported = {r["question_id"]: r for r in read_samples(tmp_path / "run" / "samples.jsonl")}
    assert (imported["q0"]["gold_titles"], imported["q0"]["hops"],
            imported["q0"]["multihop"]) == (["Article 0", "Article 1"], 2, "bridge")
    assert (imported["q1"]["gold_titles"], imported["q1"]["hops"]) == (None, None)
