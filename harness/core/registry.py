"""One registry type for every kind of plugged thing: systems, scorers, question styles, article
sources and report tables (docs/design.md#registries). A kind is one `Registry`; what differs
between kinds is only its built-ins, its entry-point group and its own check.

A kind declares itself in one line of its package, its built-ins as lazy `"module:attribute"`
targets, so that listing its names (a command's `--help`) imports none of them:

    SCORERS = Registry("scorer", "freshrag.scorers", {
        "judge": "freshrag.scoring.judge:Judge", ...}, check=_problem)

`check(thing)` returns what keeps the loaded thing from being one of the kind (the end of a
sentence such as "a str, which has no score method"), or None. It runs on every thing that is
not built-in; where it calls the user's code (a scorer's factory is called to see what it makes)
an error raised there is named "making it failed", with the user's traceback chained.

A registry is a read-only mapping of the built-ins (`name in SCORERS`, `SCORERS[name]` imports
and returns the thing, iteration lists names without importing); `names()` adds the installed
packages' names, `available()` every entry loaded (an installed one that fails as `Broken`, with
why). `resolve(spec)` finds what a user names, as `[NAME=]` followed by one of:

- a built-in name;
- `path/to/file.py:ATTR` or `package.module:ATTR` (harness/core/plugins.py loads it);
- the name of an installed package's entry point in the kind's group. A package registers one in
  its pyproject.toml, e.g. `[project.entry-points."freshrag.scorers"] words = "mypkg.words:Words"`.

Each `Entry` carries the thing's identity (origin, the SHA-256 of the file defining it, the
version of the package shipping it, its docstring's first sentence): `record()` is what a run's
manifest and a score row keep, so that a resume with changed code is refused.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Generic, Iterator, Mapping, TypeVar

from freshrag.core import plugins
from freshrag.core.errors import said
from freshrag.core.plugins import PluginError

BUILTIN = "built-in"
T = TypeVar("T")
Check = Callable[[Any], "str | None"]


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A registered thing, loaded, and where it came from."""

    kind: str  # "system", "scorer", "style", "source", "table"
    name: str  # what rows, reports and options call it
    thing: T = field(repr=False)
    origin: str  # "built-in", "file", "module" or "entry point"
    where: str  # the built-in's module, the spec as given, or the entry point and its package
    sha256: str | None = None  # of the file that defines it (None for a built-in)
    version: str | None = None  # of the installed package that ships it
    description: str = ""  # the first sentence of its docstring, else its module's

    @property
    def builtin(self) -> bool:
        return self.origin == BUILTIN

    def record(self) -> dict[str, Any]:
        """Its identity, as a run's manifest and a score row keep it (not its code)."""
        return {"origin": self.origin, "where": self.where, "sha256": self.sha256,
                "version": self.version}


@dataclass(frozen=True)
class Broken:
    """An installed package's entry that cannot be loaded, listed with why."""

    name: str
    where: str  # the entry point's target and its package
    error: PluginError


class Registry(Mapping[str, T]):
    """The built-ins of one kind by name, its entry-point group, and its check."""

    def __init__(self, kind: str, group: str, builtins: Mapping[str, str],
                 check: Check | None = None, plural: str | None = None):
        self.kind, self.group, self.plural = kind, group, plural or f"{kind}s"
        self.targets = dict(builtins)  # name -> "module:attribute"
        self._check = check

    # the built-ins, as a mapping: names without importing, a thing when asked for
    def __getitem__(self, name: str) -> T:
        module, _, attribute = self.targets[name].partition(":")
        return getattr(importlib.import_module(module), attribute)

    def __iter__(self) -> Iterator[str]:
        return iter(self.targets)

    def __contains__(self, name: object) -> bool:  # Mapping's own would import the thing
        return name in self.targets

    def __len__(self) -> int:
        return len(self.targets)

    def installed(self) -> dict[str, importlib.metadata.EntryPoint]:
        """The installed packages' entry points of the kind's group, by name."""
        return plugins.entry_points(self.group)

    def names(self) -> list[str]:
        """Every name a user can give without a path: the built-ins, then the installed ones."""
        return [*self.targets, *(name for name in self.installed() if name not in self.targets)]

    def builtin(self, name: str) -> Entry[T]:
        thing = self[name]
        module = self.targets[name].partition(":")[0]
        return Entry(self.kind, name, thing, BUILTIN, module, description=(
            plugins.first_line(thing) or plugins.first_line(sys.modules.get(module))))

    def resolve(self, spec: str) -> Entry[T]:
        """What `spec` names (`[NAME=]` then a built-in name, `FILE.py:ATTR`, `MODULE:ATTR` or an
        entry point's name), checked; a PluginError naming the spec if nothing usable."""
        name, target = plugins.split_name(spec)
        if target in self.targets:
            if target in self.installed():  # which one the user means cannot be told
                raise PluginError(f"{self.kind} {spec!r}: {self.taken(self.installed()[target])}")
            if name and name != target:
                raise PluginError(f"{self.kind} {spec!r}: a built-in {self.kind} keeps its name "
                                  f"({target!r})")
            return self.builtin(target)
        if ":" in target:
            entry = self._entry(plugins.load(self.kind, spec, target), spec)
        elif (point := self.installed().get(target)) is not None:
            entry = self.from_entry_point(point)
        else:
            raise PluginError(self.unknown(spec))
        return self.named(entry, name or entry.name, spec)

    def from_entry_point(self, point: importlib.metadata.EntryPoint) -> Entry[T]:
        """What an installed package registered, named by its entry point, checked."""
        if point.name in self.targets:
            raise PluginError(f"{self.kind} {point.name!r}: {self.taken(point)}")
        return self.named(self._entry(plugins.load_entry_point(self.kind, point), point.name),
                          point.name, point.name)

    def available(self) -> list[Entry[T] | Broken]:
        """Every built-in, then every installed one; an installed one that cannot be loaded is
        listed with its problem rather than hidden."""
        found: list[Entry[T] | Broken] = [self.builtin(name) for name in self.targets]
        for point in self.installed().values():
            try:
                found.append(self.from_entry_point(point))
            except PluginError as err:
                found.append(Broken(point.name, f"{point.value} ({plugins.dist(point)})", err))
        return found

    def named(self, entry: Entry[T], name: str, spec: str) -> Entry[T]:
        """`entry` under `name`: a usable name, not a built-in's."""
        plugins.check_name(self.kind, name, spec)
        if not entry.builtin and name in self.targets:
            raise PluginError(f"{self.kind} {spec!r}: {name!r} is a built-in {self.kind}'s name; "
                              f"name yours apart, as NAME={plugins.split_name(spec)[1]}")
        return replace(entry, name=name)

    def check(self, thing: Any, name: str, where: str) -> Any:
        """`thing` if the kind's check passes; else a PluginError naming it."""
        try:
            problem = self._check(thing) if self._check else None
        except PluginError:
            raise
        except Exception as err:  # the user's code, which a check may call: named, chained
            raise PluginError(f"{self.kind} {name!r} ({where}): making it failed: "
                              f"{said(err)}") from err
        if problem:
            raise PluginError(f"{self.kind} {name!r} ({where}): {problem}")
        return thing

    def unknown(self, spec: str) -> str:
        return (f"{self.kind} {spec!r}: no such {self.kind}; valid {self.plural}: "
                f"{', '.join(self.names())}, or FILE.py:NAME, or MODULE:NAME for your own")

    def taken(self, point: importlib.metadata.EntryPoint) -> str:
        return (f"{plugins.dist(point)} registers {point.value} under the built-in {self.kind}'s "
                f"name {point.name!r} ({self.group}), which only one of them can have; uninstall "
                f"it, or have its package rename it (meanwhile, name it as "
                f"my-{point.name}={point.value})")

    def _entry(self, loaded: plugins.Loaded, spec: str) -> Entry[T]:
        self.check(loaded.thing, loaded.name, loaded.where)
        return Entry(self.kind, loaded.name, loaded.thing, loaded.origin, loaded.where,
                     loaded.sha256, loaded.version, loaded.description)


def callable_problem(what: str) -> Check:
    """A check that the thing is a class or function (`what` it should make or take)."""
    def check(thing: Any) -> str | None:
        return None if callable(thing) else f"a {type(thing).__name__}, not {what}"
    return check


def attributes_problem(needed: tuple[str, ...], declared_in: str) -> Check:
    """A check that the thing has every attribute of `needed` (what the kind's objects have,
    declared in `declared_in`, which the message names)."""
    def check(thing: Any) -> str | None:
        missing = [key for key in needed if not hasattr(thing, key)]
        return (f"a {type(thing).__name__}, which has no {', '.join(missing)} "
                f"({declared_in})") if missing else None
    return check
