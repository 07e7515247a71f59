"""The public API module `freshrag`: every exported name resolves, the system protocol's example
in its docstring works as written, and importing it loads no heavy dependency."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import freshrag
from freshrag.core.types import RetrievedChunk, Usage
from tests.support.fakes import FakeRetriever, ScriptedLLM


@pytest.mark.parametrize("name", [name for name in freshrag.__all__ if name != "__version__"])
def test_every_exported_name_resolves_to_its_definition(name):
    value = getattr(freshrag, name)
    module, _, attribute = freshrag._EXPORTS[name].partition(":")
    assert value is getattr(sys.modules[module], attribute or name)


def test_all_lists_exactly_the_exports():
    assert sorted(freshrag.__all__) == sorted(["__version__", *freshrag._EXPORTS])


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        freshrag.Nope


def test_the_docstring_example_is_a_working_system():
    namespace: dict = {}
    example = freshrag.__doc__.split("::\n", 1)[1].split("\nNames are imported", 1)[0]
    exec(compile(textwrap.dedent(example), "example", "exec"), namespace)
    chunk = RetrievedChunk(title="Town 1", index=0, text="Town 1 has 4 bridges.", score=0.9)
    llm = ScriptedLLM(["Four bridges."], usage=Usage(20, 3))
    context = freshrag.SystemContext(llm=llm, articles={}, retriever=FakeRetriever([chunk]))
    system: freshrag.System = namespace["EchoRag"](context)
    answer = system.answer(freshrag.Question(id="q1", text="How many bridges?",
                                             gold_title="Town 1"))
    assert (answer.text, answer.retrievals) == ("Four bridges.", 1)
    assert answer.usage_by_role() == {"answer": Usage(20, 3)}
    assert llm.requests[0]["messages"][0]["content"] == "Town 1 has 4 bridges."


def test_importing_freshrag_loads_no_heavy_dependency():
    heavy = ("qdrant_client", "openai", "matplotlib", "sklearn", "numpy", "torch")
    code = f"import sys, freshrag; print([m for m in {heavy!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("page", ["README.md", "docs/own-system.md"])
def test_the_documented_own_system_runs_as_written(page):
    from tests import ROOT

    text = (ROOT / page).read_text(encoding="utf-8")
    block = next(b for b in text.split("```python")[1:] if "class MyRag" in b).split("```")[0]
    namespace: dict = {}
    exec(compile(textwrap.dedent(block), page, "exec"), namespace)
    chunk = RetrievedChunk(title="Town 1", index=0, text="Town 1 has 4 bridges.", score=0.9)
    llm = ScriptedLLM(["Four bridges."], usage=Usage(20, 3))
    system = namespace["MyRag"](freshrag.SystemContext(llm=llm, articles={},
                                                       retriever=FakeRetriever([chunk])))
    answer = system.answer(freshrag.Question(id="q1", text="How many?", gold_title="Town 1"))
    assert (answer.text, answer.retrievals, namespace["MyRag"].uses_index) == (
        "Four bridges.", 1, True)
    assert llm.requests[0]["messages"][0]["content"] == "Town 1 has 4 bridges."


@pytest.mark.parametrize("typed", ["RunOptions", "RunResult"])
def test_every_field_of_the_run_services_types_is_described(typed):
    import dataclasses

    undescribed = [f.name for f in dataclasses.fields(getattr(freshrag, typed))
                   if not f.metadata.get("help")]
    assert undescribed == []


def test_evaluate_and_estimate_take_the_same_arguments():
    import inspect

    assert (inspect.signature(freshrag.evaluate).parameters
            == inspect.signature(freshrag.estimate).parameters)
