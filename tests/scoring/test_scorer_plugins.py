"""Scorers from the user's own code: a file, a module, an installed package's entry point; their
identity on every score row, a resume with changed code refused, and what a scorer must be
(harness/scoring/plugins.py)."""

from __future__ import annotations

import hashlib
import sys

import pytest

from freshrag.core.jsonl import ResultsError
from freshrag.core.plugins import PluginError
from freshrag.core.types import Question
from freshrag.scoring import SCORERS, plugins
from freshrag.scoring.base import ScoreInput
from freshrag.scoring.scorepass import (
    check_same_code,
    make_scorers,
    score_rows,
    scorer_names,
    scorer_roles,
)
from freshrag.scoring.store import read_scores
from tests.support.fakes import ScriptedLLM
from tests.support.packages import install_package

MY_SCORER = '''
"""A user's scorer, as a file beside their code."""
from freshrag.scoring.base import ScoreResult


class Words:
    """Counts the answer's words."""

    name = "words"
    role = "scorer"
    needs = ()
    metrics = ("words",)

    def score(self, llm, item):
        return ScoreResult("scored", {"words": float(len(item.answer.split()))})


class Near(Words):
    """Asks for embeddings."""

    needs = ("embeddings",)
    embed = None


def broken():
    raise RuntimeError("no config")
'''

ROWS = [{"dataset": "d", "question_id": f"q{i}", "system": "naive", "status": "ok",
         "answer": " ".join(["Four bridges."] * (i + 1)), "gold_title": None, "question": "How many?"}
        for i in range(2)]


@pytest.fixture
def my_scorer(tmp_path):
    path = tmp_path / "my_scorer.py"
    path.write_text(MY_SCORER, encoding="utf-8")
    return path


def test_a_class_in_a_file_is_a_scorer_with_its_file_hash(my_scorer):
    [source] = plugins.resolve_all(f"{my_scorer}:Words")
    assert (source.name, source.origin, source.role, source.needs, source.metrics) == (
        "words", "file", "scorer", (), ("words",))
    assert source.record() == {"origin": "file", "where": str(my_scorer), "version": None,
                               "sha256": hashlib.sha256(my_scorer.read_bytes()).hexdigest()}
    result = source.make().score(ScriptedLLM([]), ScoreInput(Question("q", "Q?", None),
                                                             "one two three"))
    assert (result.status, result.metrics) == ("scored", {"words": 3.0})


def test_named_scorers_are_known_by_name_to_the_whole_pass(my_scorer):
    names = scorer_names(f"judge, mine={my_scorer}:Words,near={my_scorer}:Near")
    assert names == ("judge", "mine", "near")
    assert scorer_roles(names) == ("judge", "scorer")
    assert {need for name in names for need in plugins.lookup(name).needs} == {"article",
                                                                               "embeddings"}
    made = make_scorers(names, embed=len)
    assert made["near"].embed is len and not hasattr(made["mine"], "embed")
    assert plugins.lookup("judge").factory is SCORERS["judge"]
    assert plugins.lookup("judge").record() == {"origin": "built-in",
                                               "where": "freshrag.scoring.judge",
                                               "sha256": None, "version": None}


def test_a_user_scorer_scores_rows_and_each_row_keeps_its_identity(tmp_path, my_scorer):
    names = scorer_names(f"mine={my_scorer}:Words")
    counts = score_rows(tmp_path, ROWS, make_scorers(names), ScriptedLLM([]), {})
    assert counts["by_scorer"] == {"mine": {"scored": 2}}
    scores = read_scores(tmp_path)
    assert sorted(s["metrics"]["words"] for s in scores) == [2.0, 4.0]
    assert all(s["source"] == plugins.lookup("mine").record() for s in scores)


def test_a_pass_with_changed_code_is_refused(tmp_path, my_scorer):
    names = scorer_names(f"mine={my_scorer}:Words")
    score_rows(tmp_path, ROWS, make_scorers(names), ScriptedLLM([]), {})
    check_same_code(tmp_path, names)  # the same code: resumable
    my_scorer.write_text(MY_SCORER.replace("len(", "1 + len("), encoding="utf-8")
    names = scorer_names(f"mine={my_scorer}:Words")
    with pytest.raises(ResultsError, match=r"mine was scored by .*my_scorer.py \(SHA-256 "
                                           r"[0-9a-f]{12}\), and this pass would use .*score a "
                                           r"copy"):
        score_rows(tmp_path, ROWS, make_scorers(names), ScriptedLLM([]), {})


def test_a_module_on_the_path_is_loaded_by_its_dotted_name(tmp_path, monkeypatch):
    (tmp_path / "user_scorers").mkdir()
    (tmp_path / "user_scorers" / "__init__.py").write_text("")
    (tmp_path / "user_scorers" / "length.py").write_text(MY_SCORER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "user_scorers", raising=False)
    source = plugins.resolve("user_scorers.length:Words")
    assert (source.name, source.origin, source.where) == ("words", "module",
                                                          "user_scorers.length:Words")


def test_an_installed_entry_point_is_a_scorer(tmp_path, monkeypatch):
    install_package(tmp_path, monkeypatch, "plugged_scorer", MY_SCORER, "1.2.0",
                    SCORERS.group, {"plugged": "plugged_scorer:Words"})
    assert "plugged" in SCORERS.installed()
    assert scorer_names("plugged") == ("plugged",)
    source = plugins.lookup("plugged")
    assert (source.origin, source.version) == ("entry point", "1.2.0")
    assert "plugged-scorer 1.2.0" in source.where


def test_a_factory_that_fails_names_the_scorer_and_keeps_its_cause(my_scorer):
    with pytest.raises(PluginError, match=r"scorer 'broken' \(.*my_scorer.py\): making it "
                                          r"failed: RuntimeError: no config") as caught:
        plugins.resolve(f"{my_scorer}:broken")
    assert isinstance(caught.value.__cause__, RuntimeError)


MISBEHAVING = '''
import math
from freshrag.scoring.base import ScoreResult


class Base:
    role = "scorer"
    needs = ()
    metrics = ("words",)


class Raises(Base):
    name = "raises"
    def score(self, llm, item):
        raise LookupError("my index is gone")


class Unsayable(LookupError):
    def __str__(self):
        raise RuntimeError("no words for it")


class RaisesUnsayable(Base):
    name = "raises-unsayable"
    def score(self, llm, item):
        raise Unsayable()


class NotAResult(Base):
    name = "not-a-result"
    def score(self, llm, item):
        return {"words": 3}


class TextMetric(Base):
    name = "text-metric"
    def score(self, llm, item):
        return ScoreResult("scored", {"words": "three"})


class NanMetric(Base):
    name = "nan-metric"
    def score(self, llm, item):
        return ScoreResult("scored", {"words": math.nan})


class OddStatus(Base):
    name = "odd-status"
    def score(self, llm, item):
        return ScoreResult("great", {"words": 3.0})


class SetDetails(Base):
    name = "set-details"
    def score(self, llm, item):
        return ScoreResult("scored", {"words": 3.0}, details={"seen": {1, 2}})
'''


@pytest.mark.parametrize("attribute, reason", [
    pytest.param("Raises", "raised LookupError: my index is gone", id="raises"),
    pytest.param("RaisesUnsayable", "raised Unsayable: (its message cannot be read: str() "
                 "raised RuntimeError)", id="raises-what-str-cannot-say"),
    pytest.param("NotAResult", "returned a dict, not a ScoreResult", id="not-a-result"),
    pytest.param("TextMetric", "not names mapped to finite numbers", id="text-metric"),
    pytest.param("NanMetric", "not names mapped to finite numbers", id="nan-metric"),
    pytest.param("OddStatus", "the status 'great'", id="odd-status"),
    pytest.param("SetDetails", "details that JSON cannot hold", id="set-details"),
])
def test_what_a_user_scorer_does_wrong_is_a_failed_score_and_the_pass_goes_on(
        tmp_path, attribute, reason):
    bad, good = tmp_path / "misbehaving.py", tmp_path / "words.py"
    bad.write_text(MISBEHAVING, encoding="utf-8")
    good.write_text(MY_SCORER, encoding="utf-8")
    names = scorer_names(f"bad={bad}:{attribute},{good}:Words")
    counts = score_rows(tmp_path, ROWS, make_scorers(names), ScriptedLLM([]), {})
    assert counts["by_scorer"] == {"bad": {"failed": 2}, "words": {"scored": 2}}
    failed = [row for row in read_scores(tmp_path) if row["scorer"] == "bad"]
    assert len(failed) == 2 and all(
        row["reason"].startswith("scorer 'bad' ") and reason in row["reason"]
        and row["metrics"] == {} for row in failed)
