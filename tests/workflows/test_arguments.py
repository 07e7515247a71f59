"""Every argument of every workflow call is checked as the command line checks its option
(docs/api.md#arguments): a wrong value of each, walked one at a time, is refused with an
InputError naming it, before anything is read or written; each call's defaults pass."""

from __future__ import annotations

import inspect
from dataclasses import fields

import pytest

from freshrag.run.inputs import InputError, RunOptions
from freshrag.workflows.arguments import ARGUMENTS, check_arguments
from freshrag.workflows.evaluate import estimate, evaluate
from freshrag.workflows.report import report
from freshrag.workflows.score import score

# A value each argument cannot take; an argument without one here fails the walk.
WRONG = {
    "dataset": 5, "systems": 5, "roles": {"answer": 5}, "out": 5, "options": {"limit": 3},
    "run_dir": 5, "scorers": [], "articles": b"articles.jsonl", "repeats": 0,
    "concurrency": 0, "seed": -1, "cache": "no", "max_cost": -1.0, "batch": "yes",
    "batch_poll": float("nan"), "config": 5, "run_dirs": [], "format": "html",
    "by": ["colour"], "correct_at": 6, "human": [""], "mix": [(0.5, 0.5, 0.5)], "html": 5,
    "label": "yes", "label_seed": -1, "label_sample": 0,
}
# The same for each run option evaluate takes by keyword (RunOptions' fields).
WRONG_OPTIONS = {
    "limit": "3", "concurrency": 0, "seed": -1, "cache": "no", "scorers": 5, "probe": 5,
    "knowledge_cutoff": "soon", "today": 5, "context_tokens": 0, "max_steps": 0,
    "token_budget": 0, "epochs": 0, "index": 5, "max_cost": -1.0, "batch": "yes",
    "batch_poll": -1.0, "config": 5, "shard": "0/3", "executor": "spark", "address": 5,
    "corpus": 5, "otlp_endpoint": "localhost:4318",
}
CALLS = {evaluate: {}, estimate: {}, score: {"run_dir": "results/run"},
         report: {"run_dirs": ["results/run"]}}


def parameters(call):
    return [name for name, p in inspect.signature(call).parameters.items()
            if p.kind is not p.VAR_KEYWORD]


@pytest.mark.parametrize("call, name", [
    pytest.param(call, name, id=f"{call.__name__}-{name}")
    for call in CALLS for name in parameters(call)])
def test_a_wrong_value_of_each_argument_is_refused_naming_it(tmp_path, monkeypatch, call,
                                                             name):
    monkeypatch.chdir(tmp_path)
    assert name in WRONG and name in ARGUMENTS, f"{call.__name__}({name}=...) has no rule"
    with pytest.raises(InputError) as refused:
        call(**{**CALLS[call], name: WRONG[name]})
    assert str(refused.value).startswith((f"{name}: ", f"{name}[", f"RunOptions.{name}: ")), \
        str(refused.value)
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


@pytest.mark.parametrize("call", [evaluate, estimate])
@pytest.mark.parametrize("name", [field.name for field in fields(RunOptions)])
def test_a_wrong_run_option_by_keyword_is_refused_naming_it(tmp_path, monkeypatch, call, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=f"^RunOptions.{name}: "):
        call(**{name: WRONG_OPTIONS[name]})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("call", list(CALLS), ids=lambda call: call.__name__)
def test_each_calls_defaults_pass_its_rules(call):
    check_arguments({**{name: p.default for name, p in inspect.signature(call).parameters.items()
                        if p.default is not p.empty}})


@pytest.mark.parametrize("kwargs, message", [
    pytest.param({"roles": {"answer": 5}}, "roles['answer']: expected a model's name (text), "
                                           "got 5", id="a-role-given-no-model-name"),
    pytest.param({"roles": {"answerer": "m"}}, "roles: unknown role 'answerer'",
                 id="an-unknown-role"),
    pytest.param({"cache": "no"}, "RunOptions.cache: expected True or False, got 'no'",
                 id="cache-no-is-not-false"),
    pytest.param({"out": 5}, "out: expected a path (text or a path object, not empty), or "
                             "None, got 5", id="out-a-number"),
    pytest.param({"out": ""}, "out: expected a path", id="out-empty-would-be-here"),
])
def test_the_reported_cases_name_their_argument(kwargs, message):
    with pytest.raises(InputError) as refused:
        evaluate(**kwargs)
    assert str(refused.value).startswith(message), str(refused.value)
