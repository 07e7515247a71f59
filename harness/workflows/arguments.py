"""The arguments of the library's workflow calls (`freshrag.evaluate`, `estimate`, `score`,
`report`) checked as the command line checks its options (docs/api.md#arguments): a value that
cannot be used is refused before anything starts, with an InputError that names the argument.

One table, ARGUMENTS, holds the rule of every argument by its name; a call checks its own with
`check_arguments`, and a call that gains an argument adds its rule here (a test walks every
parameter of every workflow call, and fails on one without a rule). The ranges are the command
line's: an argument that is also a run option (concurrency, seed, cache, ...) is checked by
RunOptions itself (harness/run/inputs.py), so that each range is written once. The rules every
public call shares (paths, numbers, flags, choices) are harness/core/arguments.py's.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from freshrag.core.arguments import (
    PATH,
    Argument,
    Rule,
    choice,
    choices,
    flag,
    is_path,
    path,
    paths,
    refused,
    shown,
    whole,
)
from freshrag.core.arguments import check_arguments as checked
from freshrag.core.config import CommandLine, LLMSettings
from freshrag.core.dataset import Dataset
from freshrag.core.fields import FIELDS
from freshrag.core.types import ROLES
from freshrag.run.inputs import InputError, RunOptions


def check_arguments(values: Mapping[str, Any]) -> None:
    """Each argument by its name (a call's parameters as given) against its rule in ARGUMENTS."""
    checked(values, ARGUMENTS, InputError)


def run_option(name: str) -> Rule:
    """The rule RunOptions holds for its field `name`: what its error says is expected."""
    def rule(value: Any) -> str | None:
        try:
            RunOptions(**{name: value})
        except InputError as err:
            return ": " + str(err).removeprefix(f"RunOptions.{name}: ")
        return None
    return rule


def dataset(value: Any) -> str | None:
    return refused(value is None or isinstance(value, Dataset) or is_path(value))


def systems(value: Any) -> str | None:
    if isinstance(value, str):
        return refused(bool(value.strip()))
    return refused(isinstance(value, (list, tuple, Mapping)) and bool(value))


def roles(value: Any) -> str | None:
    """Settings, the command line's models, one model's name, or a mapping of role to model."""
    if value is None or isinstance(value, (LLMSettings, CommandLine, str)):
        return None
    if not isinstance(value, Mapping):
        return ""
    for role, model in value.items():
        if role not in ROLES:
            return f": unknown role {shown(role)}; roles: {', '.join(ROLES)}"
        if not isinstance(model, str):
            return f"[{role!r}]: expected a model's name (text), got {shown(model)}"
    return None


def scorers(value: Any) -> str | None:
    """Text or a list of texts; which names are scorers is scorepass.scorer_names' to say."""
    return refused(isinstance(value, str) or (isinstance(value, (list, tuple)) and bool(value)
                                               and all(isinstance(name, str) for name in value)))


def mix(value: Any) -> str | None:
    """Traffic compositions: (fresh, control, general) shares from 0 to 1 adding up to 1."""
    def shares(item: Any) -> bool:
        return isinstance(item, (list, tuple)) and len(item) == 3 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and 0 <= v <= 1 for v in item) and abs(sum(item) - 1) <= 1e-6
    return refused(value is None or (isinstance(value, (list, tuple)) and bool(value)
                                      and all(shares(item) for item in value)))


def options(value: Any) -> str | None:
    return refused(value is None or isinstance(value, RunOptions))


ARGUMENTS: dict[str, Argument] = {
    # evaluate and estimate (the run options beyond these: RunOptions' fields)
    "dataset": Argument("a Dataset, a dataset directory, or None (the example dataset)",
                        dataset),
    "systems": Argument("names as --systems takes them, a non-empty list of systems, or a "
                        "mapping of name to system", systems),
    "roles": Argument("LLMSettings, a model's name, a mapping of role to model, or None",
                      roles),
    "out": Argument(f"{PATH}, or None", path(optional=True)),
    "options": Argument("RunOptions, or None", options),
    # score
    "run_dir": Argument(f"a run directory, {PATH}", path()),
    "scorers": Argument("scorers' names, comma-separated or in a list", scorers),
    "articles": Argument(f"an articles file, {PATH}, or None", path(optional=True)),
    "repeats": Argument("a whole number from 1 to 100", whole(1, 100)),
    "concurrency": Argument("", run_option("concurrency")),
    "seed": Argument("", run_option("seed")),
    "cache": Argument("", run_option("cache")),
    "max_cost": Argument("", run_option("max_cost")),
    "batch": Argument("", run_option("batch")),
    "batch_poll": Argument("", run_option("batch_poll")),
    "corpus": Argument("", run_option("corpus")),
    "config": Argument(f"a TOML file, {PATH}, or None", path(optional=True)),
    # report
    "run_dirs": Argument(f"a run directory or a list of them, each {PATH}", paths()),
    "format": Argument("one of markdown, json, csv", choice("markdown", "json", "csv")),
    "by": Argument(f"None or a list of fields, from: {', '.join(FIELDS)}", choices(FIELDS)),
    "correct_at": Argument("a whole number from 1 to 5, or None", whole(1, 5, optional=True)),
    "human": Argument(f"labels files, each {PATH}, or None", paths(optional=True)),
    "mix": Argument("None or a list of (fresh, control, general) shares from 0 to 1 adding up "
                    "to 1", mix),
    "html": Argument(f"{PATH}, or None", path(optional=True)),
    "label": Argument("True or False", flag),
    "label_seed": Argument("a whole number from 0 to 2,147,483,647, or None",
                           whole(0, 2**31 - 1, optional=True)),
    "label_sample": Argument("a whole number from 1 to 1,000,000,000, or None",
                             whole(1, 10**9, optional=True)),
}
