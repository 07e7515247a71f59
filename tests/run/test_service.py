"""The run as a library service (harness/run/service.py, docs/api.md): a notebook's own system
object evaluated in one call, the dry run and a resume through the API, the worked example of
docs/api.md executed as written, and a bad argument refused with its name; all against the fake
OpenAI-compatible server, never the embedded model."""

from __future__ import annotations

import textwrap

import pytest

import freshrag
from freshrag.core.errors import UserError
from freshrag.core.manifest import read_manifest
from freshrag.core.types import Question, SystemAnswer, SystemContext
from tests import ROOT
from tests.support.datasets import write_dataset


@pytest.fixture
def world(fake, tmp_path, monkeypatch):
    """The fake server, a dataset of three towns, the working directory a scratch one, and the
    embedded server never started."""
    def no_local_server(*args, **kwargs):
        raise AssertionError("the embedded llama.cpp server was started")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("freshrag.run.service.LocalServer", no_local_server)
    return fake, freshrag.load_dataset(*write_dataset(tmp_path / "data"))


class Closed:
    """Answers from what the model knows, as a notebook would write it."""

    name = "closed"

    def __init__(self, context: SystemContext):
        self.llm = context.llm

    def answer(self, question: Question) -> SystemAnswer:
        reply = self.llm.chat("answer", [{"role": "user", "content": question.text}])
        return SystemAnswer(reply.text or "", calls=[reply])


def test_a_notebooks_own_class_is_evaluated_in_one_call(world, tmp_path):
    _, data = world
    result = freshrag.evaluate(data, systems=[Closed, "baseline"], out=tmp_path / "run")
    assert result.systems == ("closed", "baseline") and result.out == tmp_path / "run"
    assert sorted((row.system, row.status) for row in result.answers) == sorted(
        [("closed", "ok")] * 3 + [("baseline", "ok")] * 3)
    assert (result.capped, result.failed) == (None, 0)
    assert all(row.grade.truthfulness is not None for row in result.answers)
    source = read_manifest(tmp_path / "run")["system_sources"]["closed"]
    assert source["origin"] == "object" and source["where"].endswith(":Closed")
    assert source["sha256"]  # the class's code: a resume with changed code is refused


def test_a_built_object_and_a_mapping_name_the_systems(world, tmp_path):
    _, data = world

    class Fixed:
        def answer(self, question: Question) -> SystemAnswer:
            return SystemAnswer("three")

    result = freshrag.evaluate(data, systems={"fixed": Fixed(), "mine": Closed}, limit=2,
                               out=tmp_path / "run", probe=None)
    assert result.systems == ("fixed", "mine")
    assert {row.answer for row in result.answers if row.system == "fixed"} == {"three"}


def test_the_dry_run_through_the_api_calls_nothing_and_writes_nothing(world, tmp_path):
    fake, data = world
    table = freshrag.estimate(data, systems=[Closed], out=tmp_path / "run",
                              options=freshrag.RunOptions(limit=2, concurrency=1))
    assert "answer" in table and "judge" in table
    assert fake.calls == 0 and not (tmp_path / "run").exists()


def test_a_resume_through_the_api_makes_no_new_call(world, tmp_path):
    fake, data = world
    first = freshrag.evaluate(data, systems=[Closed], out=tmp_path / "run", cache=False)
    fake.reset_counts()
    again = freshrag.evaluate(data, systems=[Closed], out=tmp_path / "run", cache=False)
    assert fake.calls == 0
    assert len(again.answers) == len(first.answers) == 3


def test_a_resume_with_changed_settings_is_refused_naming_them(world, tmp_path):
    _, data = world
    freshrag.evaluate(data, systems=[Closed], out=tmp_path / "run", limit=1)
    with pytest.raises(UserError, match="context_tokens: was 8192, now 100"):
        freshrag.evaluate(data, systems=[Closed], out=tmp_path / "run", limit=1,
                          context_tokens=100)


@pytest.mark.parametrize("arguments, named", [
    pytest.param({"limit": 0}, "RunOptions.limit", id="limit below one"),
    pytest.param({"concurrency": 1000}, "RunOptions.concurrency", id="too many workers"),
    pytest.param({"today": "2024-02-30"}, "RunOptions.today", id="no such day"),
    pytest.param({"max_cost": -1}, "RunOptions.max_cost", id="negative budget"),
    pytest.param({"scorers": "judge"}, "RunOptions.scorers", id="scorers as one string"),
    pytest.param({"scorers": ("nope",)}, "--scorers", id="unknown scorer"),
    pytest.param({"limt": 3}, "limt", id="misspelt option"),
    pytest.param({"roles": {"answerer": "gpt-4o"}}, "answerer", id="unknown role"),
    pytest.param({"roles": 42}, "roles", id="roles of no kind"),
    pytest.param({"systems": [42]}, "systems", id="a system of no kind"),
    pytest.param({"systems": ["nope"]}, "nope", id="unknown system name"),
    pytest.param({"systems": {"naive": Closed}}, "built-in system's name", id="a built-in's name"),
    pytest.param({"systems": [Closed, Closed]}, "two systems named 'closed'", id="twice"),
    pytest.param({"dataset": 42}, "dataset", id="dataset of no kind"),
    pytest.param({"dataset": "no/such/dir"}, "no/such/dir", id="missing dataset"),
])
def test_a_bad_argument_is_refused_naming_it_before_any_call(world, tmp_path, arguments, named):
    fake, data = world
    call = {"dataset": data, "systems": [Closed], "out": tmp_path / "run", **arguments}
    with pytest.raises(UserError, match=named.replace("[", r"\[")) as refused:
        freshrag.evaluate(**call)
    assert named in str(refused.value)
    assert fake.calls == 0 and not (tmp_path / "run").exists()


def test_the_worked_example_of_docs_api_runs_as_written(world, tmp_path, capsys):
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    block = page.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(textwrap.dedent(block), "docs/api.md", "exec"), {"__name__": "notebook"})
    printed = capsys.readouterr().out
    assert "ShortRag" in printed and "baseline" in printed
    run = freshrag.load_runs([tmp_path / "results" / "notebook"])
    assert {row["system"] for row in run} == {"ShortRag", "baseline"}
    assert all(row["status"] == "ok" for row in run)


def test_a_run_made_from_the_library_is_the_directory_freshrag_run_makes(world, tmp_path):
    import json

    from freshrag.cli.main import main

    _, data = world
    questions, articles = data.files["questions"], data.files["articles"]
    assert main(["run", "--questions", str(questions), "--articles", str(articles),
                 "--systems", "baseline,oracle", "--out", str(tmp_path / "command")]) == 0
    freshrag.evaluate(data, systems="baseline,oracle", out=tmp_path / "library")
    command, library = tmp_path / "command", tmp_path / "library"
    assert sorted(p.name for p in library.iterdir()) == sorted(p.name for p in command.iterdir())
    assert "summary.json" in {p.name for p in library.iterdir()}
    assert (json.loads((library / "summary.json").read_text())
            == json.loads((command / "summary.json").read_text()))
    assert (library / "summary.md").read_text() == (command / "summary.md").read_text()


def test_a_run_option_is_declared_once_for_the_flag_and_the_library():
    from dataclasses import fields
    from pathlib import Path

    from freshrag.cli.commands.run import run_options
    from freshrag.cli.main import parser
    from freshrag.run.options import RUN_OPTIONS

    given = run_options(parser("run").parse_args(["run"]), Path("results/example"))
    helps = {f.name: f.metadata["help"] for f in fields(freshrag.RunOptions)}
    for name, option in RUN_OPTIONS.items():
        assert helps[name] == f"{option.help} ({option.flag})"
        if name != "today":  # the flag's default is today's date, the library's None says so
            assert getattr(given, name) == getattr(freshrag.RunOptions(), name) == option.default
