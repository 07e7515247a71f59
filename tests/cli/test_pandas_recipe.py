"""The pandas recipe of docs/own-system.md#pandas-in-and-out run as written, with real pandas,
against the fake server on the shipped example dataset: a DataFrame written by `to_csv()` (its
index column too) and `to_json(orient="records", lines=True)`, imported and run, its score column
kept in each row's details, and the export read back by `pandas.read_json(lines=True)`."""

from __future__ import annotations

import re
import shlex

import pandas as pd

from freshrag.cli.main import main
from freshrag.core.dataset import example_dir
from freshrag.core.samples import read_samples
from tests import ROOT

QUESTIONS = 40  # of the example dataset


def recipe() -> tuple[str, list[str], str]:
    """The section's Python that writes the files, its commands, and its Python that reads."""
    text = (ROOT / "docs" / "own-system.md").read_text(encoding="utf-8")
    section = text.split("### pandas, in and out", 1)[1].split("\n#", 1)[0]
    blocks = re.findall(r"```(python|bash)\n(.*?)```", section, re.S)
    assert [kind for kind, _ in blocks] == ["python", "bash", "python"]
    return blocks[0][1], blocks[1][1].splitlines(), blocks[2][1]


def test_the_pandas_recipe_runs_as_written(tmp_path, monkeypatch, fake_server, capsys):
    fake_server()
    monkeypatch.chdir(tmp_path)
    write, commands, read = recipe()
    namespace: dict = {}
    exec(write.replace("DIR", str(example_dir())), namespace)  # noqa: S102 - the doc's own code
    assert (tmp_path / "answers.csv").read_text().startswith(",question,")  # pandas' index
    for line in commands:
        argv = shlex.split(line.replace("DIR", str(example_dir())))
        assert argv[0] == "freshrag" and main(argv[1:]) == 0, line
    for run in ("mine", "both"):
        mine = [row for row in read_samples(tmp_path / "results" / run / "samples.jsonl")
                if row["system"] == "mine"]
        assert len(mine) == QUESTIONS and all(row["status"] == "ok" for row in mine)
        assert all(row["details"]["ragas_scores"] == {"faithfulness": 0.5} for row in mine)
    capsys.readouterr()
    exec(read, namespace)  # noqa: S102
    judged = namespace["judged"]
    assert isinstance(judged, pd.DataFrame)
    assert judged.groupby(["run", "system"]).size().to_dict() == {
        ("results/both", "baseline"): QUESTIONS, ("results/both", "mine"): QUESTIONS,
        ("results/mine", "mine"): QUESTIONS}
    assert judged["truthfulness"].notna().all()
    assert set(judged.loc[judged["system"] == "mine", "answer"]) == {"I do not know."}
    assert "truthfulness" in capsys.readouterr().out
