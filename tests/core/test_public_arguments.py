"""Every public function of `freshrag` beyond the workflow calls (tests/workflows/
test_arguments.py walks those) checks every argument as the command line checks its options: a
wrong value is refused with a UserError that names the argument, before anything is read or
written (docs/api.md#arguments)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import freshrag
from freshrag.core.errors import UserError

WORKFLOWS = {"build", "evaluate", "estimate", "score", "report"}  # checked by their own test
WRONG = {
    "questions_path": 5, "articles_path": "", "name": 7, "directory": b"data",
    "config_file": 3.5, "env": {"FRESHRAG_MODEL": 5}, "command_line": "gpt-4o",
    "run_dirs": [], "every_epoch": 1, "rows": "rows", "answers": "answers", "prices": [1],
    "correct_at": 6, "out": 5, "dataset": "data", "config": None, "llm": "gpt-4o",
    "factories": ["naive"], "prompts": "prompt", "retriever": 5, "embed": 5,
    "executor": "ray", "on_row": "print",
}


class Chat:
    def chat(self, *args, **kwargs):
        raise AssertionError("no call is made: the arguments are refused first")


# a valid value for each parameter the walk does not try, so that only the one tried is wrong
VALID = {"questions_path": "q.jsonl", "articles_path": "a.jsonl", "directory": "data",
         "run_dirs": ["results/run"], "rows": [], "answers": [], "out": "merged",
         "dataset": freshrag.Dataset("D", [], {}, {}),
         "config": freshrag.RunConfig(out=Path("run"), systems=("baseline",)),
         "llm": Chat(), "factories": {}, "prompts": {}}


def public_functions() -> list[tuple[str, object]]:
    return [(name, getattr(freshrag, name)) for name in freshrag.__all__
            if name not in WORKFLOWS and inspect.isfunction(getattr(freshrag, name))]


@pytest.mark.parametrize("function, name", [
    pytest.param(function, name, id=f"{public}-{name}") for public, function in public_functions()
    for name in inspect.signature(function).parameters])
def test_a_wrong_value_of_each_argument_is_refused_naming_it(tmp_path, monkeypatch, function,
                                                             name):
    monkeypatch.chdir(tmp_path)
    assert name in WRONG, f"{function.__name__}({name}=...) has no wrong value to try"
    given = {other: VALID.get(other, p.default) for other, p in
             inspect.signature(function).parameters.items() if other != name}
    given = {other: value for other, value in given.items() if value is not inspect.Parameter.empty}
    with pytest.raises(UserError) as refused:
        function(**given, **{name: WRONG[name]})
    assert str(refused.value).startswith((f"{name}: ", f"{name}[")), str(refused.value)
    assert list(tmp_path.iterdir()) == []  # refused before anything was read or written
