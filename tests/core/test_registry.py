"""The one registry type (harness/core/registry.py): built-ins listed without importing, a
user's thing resolved from a file, a module or an entry point with its identity, and every
refusal named (a bad name, a built-in's name, the kind's own check)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

from freshrag.core.plugins import PluginError
from freshrag.core.registry import Broken, Registry, callable_problem
from tests.support.packages import install_package

GROUP = "freshrag.test-widgets"
WIDGET = '''"""Widgets of a user's package. More words."""


class Widget:
    """A widget that spins. It never stops."""

    def spin(self):
        return "spun"


NOT_A_WIDGET = 42
'''


def spins(thing):
    return None if hasattr(thing, "spin") else f"a {type(thing).__name__}, which cannot spin"


def widgets() -> Registry:
    return Registry("widget", GROUP, {"plain": "collections:OrderedDict"}, check=spins)


def test_listing_the_built_ins_imports_none_of_them():
    code = ("import sys\nfrom freshrag.core.registry import Registry\n"
            "r = Registry('widget', 'g', {'a': 'freshrag.scoring.judge:Judge'})\n"
            "print(list(r), 'a' in r, len(r), 'freshrag.scoring.judge' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["['a']", "True", "1", "False"]


def test_a_built_in_is_imported_when_asked_for_and_keeps_its_identity():
    from collections import OrderedDict

    entry = Registry("widget", GROUP, {"plain": "collections:OrderedDict"}).resolve("plain")
    assert entry.thing is OrderedDict and entry.builtin
    assert entry.record() == {"origin": "built-in", "where": "collections", "sha256": None,
                              "version": None}


def test_a_file_is_loaded_named_checked_and_digested(tmp_path):
    path = tmp_path / "widgets.py"
    path.write_text(WIDGET)
    entry = widgets().resolve(f"mine={path}:Widget")
    assert (entry.name, entry.origin, entry.where) == ("mine", "file", str(path))
    assert entry.sha256 == hashlib.sha256(WIDGET.encode()).hexdigest()
    assert entry.description == "A widget that spins."
    assert entry.thing().spin() == "spun"
    assert widgets().resolve(f"{path}:Widget").name == "Widget"  # the attribute's name


def test_a_module_on_the_path_is_loaded_by_its_dotted_name(tmp_path, monkeypatch):
    (tmp_path / "user_widgets.py").write_text(WIDGET)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "user_widgets", raising=False)
    entry = widgets().resolve("user_widgets:Widget")
    assert (entry.origin, entry.where) == ("module", "user_widgets:Widget")


def test_an_entry_point_is_found_by_name_with_its_package_version(tmp_path, monkeypatch):
    install_package(tmp_path, monkeypatch, "widget_pkg", WIDGET, "1.2.0", GROUP,
                    {"spinner": "widget_pkg:Widget", "broken": "widget_pkg:NOT_A_WIDGET"})
    registry = widgets()
    assert registry.names() == ["plain", "spinner", "broken"]
    entry = registry.resolve("spinner")
    assert (entry.name, entry.origin, entry.version) == ("spinner", "entry point", "1.2.0")
    listed = registry.available()
    assert [getattr(item, "name", None) for item in listed[:2]] == ["plain", "spinner"]
    assert isinstance(listed[2], Broken) and "cannot spin" in str(listed[2].error)
    assert listed[2].where == "widget_pkg:NOT_A_WIDGET (widget-pkg 1.2.0)"


@pytest.mark.parametrize("spec, message", [
    pytest.param("nothing", r"widget 'nothing': no such widget; valid widgets: plain, or FILE",
                 id="unknown name"),
    pytest.param("x=plain", r"a built-in widget keeps its name \('plain'\)", id="built-in renamed"),
    pytest.param("{path}:NOT_A_WIDGET", r"widget 'NOT_A_WIDGET' \(.*\): a int, which cannot spin",
                 id="the kind's check"),
    pytest.param("plain={path}:Widget", r"'plain' is a built-in widget's name; name yours apart",
                 id="a built-in's name"),
    pytest.param("no good={path}:Widget", r"'no good' is not a usable name", id="bad name"),
    pytest.param("{path}:Missing", r"defines no 'Missing'", id="no such attribute"),
])
def test_what_cannot_be_a_widget_is_refused_with_its_spec(tmp_path, spec, message):
    path = tmp_path / "widgets.py"
    path.write_text(WIDGET)
    with pytest.raises(PluginError, match=message):
        widgets().resolve(spec.format(path=path))


def test_an_entry_point_under_a_built_in_name_is_refused_as_ambiguous(tmp_path, monkeypatch):
    install_package(tmp_path, monkeypatch, "widget_clash", WIDGET, "0.1.0", GROUP,
                    {"plain": "widget_clash:Widget"})
    with pytest.raises(PluginError, match=r"registers widget_clash:Widget under the built-in "
                                          r"widget's name 'plain'"):
        widgets().resolve("plain")


def test_the_callable_check_names_what_it_got():
    assert callable_problem("a factory")(3) == "a int, not a factory"
    assert callable_problem("a factory")(print) is None


def test_a_file_whose_path_is_not_utf8_is_refused_naming_it(tmp_path):
    path = tmp_path / os.fsdecode(b"widgets\xff.py")  # a name in Latin-1, as os.fsdecode gives it
    path.write_text(WIDGET)
    with pytest.raises(PluginError, match=r"widget b'.*widgets\\xff\.py:Widget': not UTF-8 text"):
        widgets().resolve(f"{path}:Widget")


def test_two_copies_of_one_file_are_two_modules_each_naming_its_own_path(tmp_path):
    first, second = tmp_path / "a" / "widgets.py", tmp_path / "b" / "widgets.py"
    for path in (first, second):
        path.parent.mkdir()
        path.write_text(WIDGET + "\ndef where():\n    return __file__\n")
    one, two = (widgets().resolve(f"{path}:Widget") for path in (first, second))
    assert one.sha256 == two.sha256  # the same text is recorded as the same digest
    assert sys.modules[one.thing.__module__].where() == str(first)
    assert sys.modules[two.thing.__module__].where() == str(second)
    assert widgets().resolve(f"{first}:Widget").thing is one.thing  # loaded once a place
