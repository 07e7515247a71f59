"""`freshrag import-legacy` on pickles written in the format of the paper's released runs, then
`freshrag report` on them: the paper's Tables II and III come back (means are plain means over the
rows, token sums exact, retrievals counted from the chunks in `context`), and a pickle that would
run code is refused."""

import json
import pickle
import random
from datetime import datetime
from pathlib import Path

import pytest

from harness.cli import main
from harness.legacy import LegacyError, load_pickle, retrieved_titles
from harness.results import read_samples

# The paper's Tables II (A_r, 300 questions) and III (A_f, 256): truthfulness, relevance, input
# and output tokens in thousands, retrievals.
TABLES = {
    ("A_r", "baseline"): (300, 3.59, 3.90, 14, 61, 0),
    ("A_r", "naive"): (300, 4.80, 4.80, 262, 34, 300),
    ("A_r", "advanced"): (300, 4.49, 4.67, 224, 78, 138),
    ("A_f", "baseline"): (256, 2.49, 2.42, 12, 33, 0),
    ("A_f", "naive"): (256, 4.71, 4.66, 224, 24, 256),
    ("A_f", "advanced"): (256, 4.56, 4.59, 260, 57, 214),
}


def scores(n, mean, rng):
    """n scores in 1..5 whose sum is the nearest integer to n * mean, some of them floats."""
    total = round(n * mean)
    values = [total // n] * n
    for i in rng.sample(range(n), total - sum(values)):
        values[i] += 1
    return [float(v) if i % 7 == 0 else v for i, v in enumerate(values)]


def split(total, n, rng):
    """n non-negative counts summing to total."""
    cuts = sorted(rng.randint(0, total) for _ in range(n - 1))
    return [b - a for a, b in zip([0, *cuts], [*cuts, total])]


def released_rows(dataset, system, rng):
    n, truth, rel, k_in, k_out, retrievals = TABLES[(dataset, system)]
    retrieving = set(rng.sample(range(n), retrievals))
    rows = []
    for i, t, r, n_in, n_out in zip(range(n), scores(n, truth, rng), scores(n, rel, rng),
                                    split(k_in * 1000, n, rng), split(k_out * 1000, n, rng)):
        title = f"Article {i}"
        context = "" if i not in retrieving else "\n\n".join(
            f"Title: {title if j == 0 else f'Other {i}-{j}'}\nSome retrieved text." for j in range(5))
        rows.append({"title": title, "content": "text", "url": f"https://en.wikipedia.org/wiki/A{i}",
                     "date": "2023-05-01", "question": f"Question {i}?", "answer": f"Answer {i}",
                     "n_input_tokens": n_in, "n_output_tokens": n_out,
                     # as released: naive runs say False though every answer retrieved
                     "retrieved": system == "advanced" and i in retrieving,
                     "context": context, "truthfulness": t, "relevance": r})
    return rows


def test_the_released_runs_reproduce_tables_ii_and_iii(tmp_path, capsys):
    rng = random.Random(7)
    written = {}
    for dataset, system in TABLES:
        rows = released_rows(dataset, system, rng)
        written[(dataset, system)] = rows
        path = tmp_path / f"{dataset}-{system}.pkl"
        path.write_bytes(pickle.dumps(rows))
        assert main(["import-legacy", str(path), "--dataset", dataset, "--system", system,
                     "--out", str(tmp_path / "runs")]) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "runs"), "--format", "json"]) == 0
    table = {(r["dataset"], r["system"]): r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert set(table) == set(TABLES)
    for key, (n, truth, rel, k_in, k_out, retrievals) in TABLES.items():
        rows, got = written[key], table[key]
        assert got["n"] == got["scored"] == n
        assert got["truthfulness"] == pytest.approx(sum(r["truthfulness"] for r in rows) / n, abs=1e-4)
        assert got["relevance"] == pytest.approx(sum(r["relevance"] for r in rows) / n, abs=1e-4)
        assert (round(got["truthfulness"], 2), round(got["relevance"], 2)) == (truth, rel)
        assert got["input_tokens"] == sum(r["n_input_tokens"] for r in rows)
        assert got["output_tokens"] == sum(r["n_output_tokens"] for r in rows)
        assert (round(got["input_tokens"] / 1000), round(got["output_tokens"] / 1000)) == (k_in, k_out)
        assert got["retrievals"] == retrievals == sum(bool(r["context"]) for r in rows)


def test_retrieved_titles_come_from_the_chunk_headers(tmp_path):
    rows = released_rows("A_f", "naive", random.Random(1))[:3]
    path = tmp_path / "naive.pkl"
    path.write_bytes(pickle.dumps(rows, protocol=2))  # sets and old protocols load too
    assert main(["import-legacy", str(path), "--dataset", "A_f", "--system", "naive",
                 "--out", str(tmp_path / "run")]) == 0
    imported = read_samples(tmp_path / "run" / "samples.jsonl")
    assert [[c["title"] for c in s["details"]["retrieved"]] for s in imported] == [
        [line[len("Title: "):] for line in r["context"].splitlines() if line.startswith("Title: ")]
        for r in rows]
    assert retrieved_titles(["Title: A\ntext", "Title: B\nmore"]) == ["A", "B"]


def test_importing_again_replaces_never_duplicates(tmp_path):
    path = tmp_path / "run.pkl"
    path.write_bytes(pickle.dumps(released_rows("A_r", "baseline", random.Random(2))))
    for _ in range(2):
        assert main(["import-legacy", str(path), "--dataset", "A_r", "--system", "baseline",
                     "--out", str(tmp_path / "run")]) == 0
    assert len(read_samples(tmp_path / "run" / "samples.jsonl")) == 300


def test_unscored_files_are_counted_not_averaged(tmp_path, capsys):
    rows = released_rows("A_r", "baseline", random.Random(3))[:10]
    for row in rows:
        del row["truthfulness"], row["relevance"]
    path = tmp_path / "unscored.pkl"
    path.write_bytes(pickle.dumps(rows))
    main(["import-legacy", str(path), "--dataset", "A_r", "--system", "baseline",
          "--out", str(tmp_path / "run")])
    capsys.readouterr()
    main(["report", str(tmp_path / "run"), "--format", "json"])
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert (row["n"], row["scored"], row["unscored"], row["truthfulness"]) == (10, 0, 10, None)


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
