"""Systems from the user's own code: a file, a module, an installed package's entry point; their
identity; and every bad input named (systems/external/plugins.py)."""

from __future__ import annotations

import hashlib
import sys
import textwrap

import pytest

from freshrag.core.types import Question, Usage
from freshrag.systems import SYSTEMS
from freshrag.systems.external.plugins import (
    PluginError,
    available,
    check_system,
    resolve,
)
from tests.support.fakes import ScriptedLLM
from tests.support.packages import install_package

MY_RAG = '''
"""A user's RAG system, as a file beside their code."""
from freshrag import SystemAnswer


class MyRag:
    """Answers in one call, prefixing the question."""

    uses_index = True

    def __init__(self, context):
        self.context = context

    def answer(self, question):
        reply = self.context.llm.chat("answer", [{"role": "user",
                                                  "content": "Q: " + question.text}])
        return SystemAnswer(reply.text, calls=[reply])


def make_system(context):
    return MyRag(context)


NOT_CALLABLE = 3


def not_a_system(context):
    return "a string"
'''

QUESTION = Question(id="q1", text="How many bridges?", gold_title="Town 1")


def answer_with(source):
    from freshrag.core.types import SystemContext

    llm = ScriptedLLM(["Four."], usage=Usage(7, 2))
    system = check_system(source, source.factory(SystemContext(llm=llm, articles={})))
    answer = system.answer(QUESTION)
    return answer, llm.requests


@pytest.fixture
def my_rag(tmp_path):
    path = tmp_path / "my_rag.py"
    path.write_text(MY_RAG, encoding="utf-8")
    return path


def test_a_class_in_a_file_is_a_system_with_its_file_hash(my_rag):
    source = resolve(f"{my_rag}:MyRag", SYSTEMS)
    assert (source.name, source.origin, source.uses_index) == ("MyRag", "file", True)
    assert source.sha256 == hashlib.sha256(my_rag.read_bytes()).hexdigest()
    assert source.description == "Answers in one call, prefixing the question."
    answer, requests = answer_with(source)
    assert answer.text == "Four." and answer.usage_by_role() == {"answer": Usage(7, 2)}
    assert requests[0]["messages"][0]["content"] == "Q: How many bridges?"


def test_a_name_given_first_names_it_and_a_factory_function_works(my_rag):
    source = resolve(f"mine={my_rag}:make_system", SYSTEMS)
    assert source.name == "mine"
    assert answer_with(source)[0].text == "Four."


def test_changed_code_changes_the_identity(my_rag):
    before = resolve(f"{my_rag}:MyRag", SYSTEMS).record()
    my_rag.write_text(MY_RAG.replace("Q: ", "Question: "), encoding="utf-8")
    after = resolve(f"{my_rag}:MyRag", SYSTEMS)
    assert after.record()["sha256"] != before["sha256"]
    assert answer_with(after)[1][0]["messages"][0]["content"] == "Question: How many bridges?"


def test_a_module_on_the_path_is_loaded_by_its_dotted_name(tmp_path, monkeypatch):
    (tmp_path / "user_pkg").mkdir()
    (tmp_path / "user_pkg" / "__init__.py").write_text("")
    (tmp_path / "user_pkg" / "rag.py").write_text(MY_RAG, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "user_pkg", raising=False)
    source = resolve("user_pkg.rag:make_system", SYSTEMS)
    assert (source.name, source.origin, source.where) == (
        "make_system", "module", "user_pkg.rag:make_system")
    assert source.sha256 == hashlib.sha256(MY_RAG.encode()).hexdigest()
    assert answer_with(source)[0].text == "Four."


def installed_plugin(tmp_path, monkeypatch, target="plugged_rag:MyRag", code=MY_RAG):
    """A package installed the way pip installs one: its module and a dist-info folder with
    entry_points.txt, found by importlib.metadata on sys.path."""
    install_package(tmp_path, monkeypatch, "plugged_rag", code, "2.1.0", SYSTEMS.group,
                    {"plugged": target})


def test_an_installed_entry_point_is_listed_and_resolved(tmp_path, monkeypatch):
    installed_plugin(tmp_path, monkeypatch)
    listed = {source.name: source for source in available(SYSTEMS)}
    assert list(listed)[:len(SYSTEMS)] == list(SYSTEMS)
    assert listed["naive"].origin == "built-in"
    plugged = listed["plugged"]
    assert (plugged.origin, plugged.version) == ("entry point", "2.1.0")
    assert "plugged-rag 2.1.0" in plugged.where
    assert resolve("plugged", SYSTEMS).record() == plugged.record()
    assert answer_with(resolve("plugged", SYSTEMS))[0].text == "Four."


def test_a_broken_entry_point_is_listed_with_its_problem(tmp_path, monkeypatch):
    installed_plugin(tmp_path, monkeypatch, code="raise RuntimeError('no config')\n")
    plugged = {source.name: source for source in available(SYSTEMS)}["plugged"]
    assert "RuntimeError: no config" in plugged.description
    with pytest.raises(PluginError, match="plugged.*RuntimeError: no config"):
        resolve("plugged", SYSTEMS)


@pytest.mark.parametrize("spec, expected", [
    pytest.param("{dir}/absent.py:MyRag", r"absent.py is not a file", id="no-file"),
    pytest.param("{rag}:Nope", r"defines no 'Nope'", id="no-attribute"),
    pytest.param("{rag}:NOT_CALLABLE", r"'NOT_CALLABLE' \(.*\): a int, not a class or function",
                 id="not-callable"),
    pytest.param("{rag}:9x", r"'9x' after the ':' is not a Python name", id="bad-attribute"),
    pytest.param("no_such_module_here:X", r"no module named 'no_such_module_here'",
                 id="no-module"),
    pytest.param("nonsense", r"unknown system\(s\) \['nonsense'\]; valid systems: baseline, oracle",
                 id="unknown-name"),
    pytest.param("a b={rag}:MyRag", r"'a b' is not a usable name", id="bad-name"),
])
def test_bad_specs_are_named(my_rag, spec, expected):
    with pytest.raises(PluginError, match=expected):
        resolve(spec.format(dir=my_rag.parent, rag=my_rag), SYSTEMS)


def test_a_file_that_fails_to_import_names_the_file_and_keeps_its_cause(tmp_path):
    bad = tmp_path / "broken_rag.py"
    bad.write_text(textwrap.dedent("""
        import json
        settings = json.loads("{not json")
    """), encoding="utf-8")
    with pytest.raises(PluginError, match=r"importing .*broken_rag.py failed: JSONDecodeError") \
            as caught:
        resolve(f"{bad}:MyRag", SYSTEMS)
    assert type(caught.value.__cause__).__name__ == "JSONDecodeError"
    assert not [name for name in sys.modules if name.startswith("freshrag_user_broken_rag")]


def test_a_file_whose_error_cannot_be_said_is_named_all_the_same(tmp_path):
    bad = tmp_path / "unsayable_rag.py"
    bad.write_text(textwrap.dedent("""
        class Unsayable(Exception):
            def __str__(self):
                return 1 / 0
        raise Unsayable()
    """), encoding="utf-8")
    with pytest.raises(PluginError, match=r"importing .*unsayable_rag.py failed: Unsayable: "
                       r"\(its message cannot be read: str\(\) raised ZeroDivisionError\)"):
        resolve(f"{bad}:MyRag", SYSTEMS)


def test_a_factory_that_builds_no_system_is_refused(my_rag):
    source = resolve(f"{my_rag}:not_a_system", SYSTEMS)
    with pytest.raises(PluginError, match=r"built a str, which has no answer\(question\)"):
        answer_with(source)


def test_a_built_in_keeps_its_registry_name():
    source = resolve("naive", SYSTEMS)
    assert (source.name, source.origin, source.factory) == ("naive", "built-in", SYSTEMS["naive"])
    assert source.uses_index


def test_a_plugged_system_may_not_take_a_built_in_name(my_rag):
    from freshrag.systems.external.plugins import resolve_all

    with pytest.raises(PluginError, match=r"'naive' is a built-in system's name"):
        resolve_all(f"naive={my_rag}:MyRag", SYSTEMS)
    with pytest.raises(PluginError, match=r"two systems named 'mine'"):
        resolve_all(f"mine={my_rag}:MyRag,mine={my_rag}:make_system", SYSTEMS)
    assert [s.name for s in resolve_all(f" naive, ,mine={my_rag}:MyRag", SYSTEMS)] == [
        "naive", "mine"]
