"""The arguments of freshrag's public calls checked as the command line checks its options
(docs/api.md#arguments): a value that cannot be used is refused before anything is read or
written, with a UserError that names the argument and what it takes.

A call declares a table of its arguments (`Argument`: what it takes, as the error says it, and
its rule) and checks the values it was given with `check_arguments`; the rules here are the
shapes every call shares (paths, whole numbers, flags, choices). The workflow calls' table, with
the rules only they need, is harness/workflows/arguments.py; the loaders' are beside them
(core/dataset.py, core/config.py, reporting/report.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from freshrag.core.errors import UserError


class ArgumentError(UserError, ValueError):
    """An argument of a public call that cannot be used; the message names it."""


# A rule: None when the value can be used; "" when it cannot (the error says what the argument
# takes); or the error's rest after the argument's name, for a part of the value (`[key]: ...`).
Rule = Callable[[Any], "str | None"]


@dataclass(frozen=True)
class Argument:
    """What an argument takes, said the way the error says it, and its rule."""

    expected: str
    rule: Rule


def check_arguments(values: Mapping[str, Any], table: Mapping[str, Argument],
                    error: type[UserError] = ArgumentError) -> None:
    """Each argument by its name (a call's parameters as given) against its rule in `table`;
    the first that fails raises `error` naming it."""
    for name, value in values.items():
        argument = table[name]
        if (problem := argument.rule(value)) is not None:
            raise error(f"{name}{problem}" if problem else
                        f"{name}: expected {argument.expected}, got {shown(value)}")


def shown(value: Any) -> str:
    return f"{value!r:.80}" if isinstance(value, (str, int, float, bool, type(None))) else \
        type(value).__name__


def refused(ok: bool) -> str | None:
    """"" (the argument's `expected` says what is wrong) when not `ok`."""
    return None if ok else ""


# ------------------------------------------------------------------ the rules


def is_path(value: Any) -> bool:
    """A path as text or a path object: not empty (pathlib would read it as the current
    directory) and without NUL (which no file system holds)."""
    if not isinstance(value, (str, os.PathLike)):
        return False
    text = os.fspath(value)
    return isinstance(text, str) and text != "" and "\0" not in text


def path(optional: bool = False) -> Rule:
    return lambda value: refused((optional and value is None) or is_path(value))


def paths(optional: bool = False) -> Rule:
    """One path, or a list or tuple of at least one."""
    def rule(value: Any) -> str | None:
        if optional and value is None:
            return None
        many = value if isinstance(value, (list, tuple)) else [value]
        return refused(bool(many) and all(is_path(item) for item in many))
    return rule


def whole(low: int, high: int, optional: bool = False) -> Rule:
    return lambda value: refused((optional and value is None) or (
        isinstance(value, int) and not isinstance(value, bool) and low <= value <= high))


def flag(value: Any) -> str | None:
    return refused(isinstance(value, bool))


def choice(*allowed: str) -> Rule:
    return lambda value: refused(isinstance(value, str) and value in allowed)


def choices(allowed: tuple[str, ...]) -> Rule:
    """None, or a list or tuple of names of `allowed`."""
    return lambda value: refused(value is None or (
        isinstance(value, (list, tuple)) and all(isinstance(v, str) and v in allowed
                                                 for v in value)))




def kind(*kinds: type) -> Rule:
    """An instance of one of `kinds` (None among them for an optional argument)."""
    return lambda value: refused(isinstance(value, kinds))


PATH = "a path (text or a path object, not empty)"
