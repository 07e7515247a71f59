"""`--scorers` with a user's scorer that cannot be used: a file that is not there, a name it does
not define, a module that is not installed, a thing that is no scorer, a built-in's name taken,
and names no scorer has. `freshrag score` and `freshrag run` refuse each with exit status 2 and
one error line naming the spec (and the file, module or attribute at fault), before any call and
without writing a score (harness/scoring/plugins.py)."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freshrag.scoring import SCORERS
from tests.fuzz.support import assert_no_calls, assert_refused, budget, invoke, scratch, snapshot
from tests.support.datasets import write_dataset

SCORER_FILE = '''
from freshrag.scoring.base import ScoreResult


class Length:
    name = "length"
    role = "scorer"
    needs = ()
    metrics = ("words",)

    def score(self, llm, item):
        return ScoreResult("scored", {"words": float(len(item.answer.split()))})


class Chatty(Length):
    role = "answer"


class Vague(Length):
    needs = ("the internet",)


class Silent:
    name = "silent"


NOT_CALLABLE = 3
'''

# (spec, what the error line must name besides the spec), `{file}` the scorer file's path
BAD = [
    pytest.param("{dir}/absent.py:Length", ["absent.py is not a file"], id="no-file"),
    pytest.param("{file}:Nope", ["defines no 'Nope'"], id="no-attribute"),
    pytest.param("{file}:9x", ["'9x' after the ':' is not a Python name"], id="bad-attribute"),
    pytest.param("{file}:NOT_CALLABLE", ["NOT_CALLABLE", "a int, not a class or function"],
                 id="not-callable"),
    pytest.param("{file}:Silent", ["made a Silent, which has no score(llm, item) method"],
                 id="no-score-method"),
    pytest.param("{file}:Chatty", ["role is 'answer', not one of scorer, judge"], id="bad-role"),
    pytest.param("{file}:Vague", ["needs are ('the internet',)"], id="bad-needs"),
    pytest.param("no_such_scorer_module:Length", ["no module named 'no_such_scorer_module'"],
                 id="no-module"),
    pytest.param("judge={file}:Length", ["'judge' is a built-in scorer's name", "NAME={file}"],
                 id="built-in-name-given"),
    pytest.param("mine=claims", ["a built-in scorer keeps its name ('claims')"],
                 id="built-in-renamed"),
    pytest.param("faithfulness2={file}:Length,faithfulness2={file}:Length,x={file}:Silent",
                 ["made a Silent"], id="second-of-several"),
    pytest.param("a b={file}:Length", ["'a b' is not a usable name"], id="bad-name"),
]


def _argv(command: str, tmp: Path, scorers: str) -> list:
    if command == "score":
        return ["score", tmp / "run", "--scorers", scorers]
    return ["run", "--questions", tmp / "data" / "questions.jsonl", "--articles",
            tmp / "data" / "articles.jsonl", "--out", tmp / "run2", "--systems", "baseline",
            "--no-probe", "--scorers", scorers]


def _a_run(tmp: Path) -> None:
    write_dataset(tmp / "data")
    assert invoke(*_argv("run", tmp, "judge")[:-2], "--out", tmp / "run").status == 0


@pytest.mark.parametrize("command", ["score", "run"])
@pytest.mark.parametrize("spec, named", BAD)
def test_a_bad_scorer_spec_is_refused_naming_it(server, command, spec, named):
    with scratch(server) as (tmp, _):
        _a_run(tmp)
        (tmp / "my_scorer.py").write_text(SCORER_FILE, encoding="utf-8")
        server.reset_counts()
        before = snapshot(tmp / "run")
        spec = spec.format(dir=tmp, file=tmp / "my_scorer.py")
        result = invoke(*_argv(command, tmp, spec))
        assert_refused(result, "scorer", *(text.format(file=tmp / "my_scorer.py")
                                           for text in named))
        assert_no_calls(server)
        assert snapshot(tmp / "run") == before and not (tmp / "run2").exists()


def test_a_scorer_may_not_take_a_built_in_name(server):
    with scratch(server) as (tmp, _):
        _a_run(tmp)
        (tmp / "my_scorer.py").write_text(SCORER_FILE.replace('"length"', '"claims"'))
        result = invoke(*_argv("score", tmp, f"{tmp / 'my_scorer.py'}:Length"))
        assert_refused(result, "'claims' is a built-in scorer's name", "NAME=")


NAMES = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00,:="),
                min_size=1, max_size=12).filter(lambda t: t.strip() and t.strip() not in SCORERS)


@settings(max_examples=budget(15))
@given(names=st.lists(NAMES, min_size=1, max_size=3))
def test_an_unknown_scorer_name_is_refused_listing_the_scorers(server, names):
    with scratch(server) as (tmp, _):
        result = invoke("score", tmp, "--scorers", ",".join(["judge", *names]))
        assert_refused(result, "--scorers: unknown scorer(s)", repr(names[0].strip()),
                       "valid scorers: " + ", ".join(SCORERS), "FILE.py:NAME")
        assert_no_calls(server)
