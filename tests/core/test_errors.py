"""The exception hierarchy of freshrag.core.errors: every exception class freshrag defines derives
from FreshragError; those the user can fix from UserError, which the command reports as one
`freshrag: error:` line with exit status 2; the others are caught where they are raised."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from freshrag.cli.main import main
from freshrag.core.errors import FreshragError, UserError

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"harness": "freshrag", "builders": "freshrag.builders", "systems": "freshrag.systems"}
# Caught inside freshrag, never shown to the user as such: one reaching `main` is a bug.
INTERNAL = {"FreshragError", "ReplyError", "GradeParseError", "ProbeError", "BudgetExceeded",
            "Pending", "HttpFault", "PickleRefused", "Refused", "_Built", "BoundReached",
            "XMLPageError"}


def exception_classes() -> dict[str, type]:
    found = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            name = ".".join((package, *(parts[:-1] if parts[-1] == "__init__" else parts)))
            classes = [node.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                       if isinstance(node, ast.ClassDef)]
            if not classes:
                continue
            module = importlib.import_module(name)
            for cls in (getattr(module, c, None) for c in classes):
                if isinstance(cls, type) and issubclass(cls, BaseException) \
                        and cls.__module__ == name:
                    found[cls.__name__] = cls
    return found


def test_every_exception_class_derives_from_the_base():
    classes = exception_classes()
    assert len(classes) >= 25  # the scan found them (a broken walk would pass vacuously)
    # but the stop (a signal): a KeyboardInterrupt, which no `except Exception` may catch
    assert [name for name, cls in classes.items() if not issubclass(cls, FreshragError)] == [
        "Stopped"]
    assert issubclass(classes["Stopped"], KeyboardInterrupt)


def test_only_the_internal_exceptions_are_not_user_errors():
    classes = exception_classes()
    assert {name for name, cls in classes.items() if not issubclass(cls, UserError)} == INTERNAL | {
        "Stopped"}


@pytest.mark.parametrize("name, base", [("DatasetError", ValueError), ("ConfigError", ValueError),
                                        ("EndpointError", RuntimeError),
                                        ("RetrievalError", RuntimeError)])
def test_a_class_keeps_its_standard_base(name, base):
    assert issubclass(exception_classes()[name], base)


def test_a_user_error_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("freshrag: error: ") and "Traceback" not in err
