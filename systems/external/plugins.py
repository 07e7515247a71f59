"""Systems from the user's own code (docs/own-system.md): a class or factory named by a file
(`path/to/my_rag.py:MyRag`) or a module (`my_package.rag:make_system`), or registered by an
installed package under the entry-point group `freshrag.systems`, beside the built-in ones:
`SYSTEMS` (systems/__init__.py), a registry of harness/core/registry.py, resolves and checks
those as it does every kind; this module adds a service behind HTTP, an answers file and a traces file.

Whatever the origin, a system is a callable taking the run's `SystemContext` and returning an
object with `answer(question) -> SystemAnswer` (freshrag's public `System` protocol), so a
plugged-in system gets the same retriever, cache, concurrency, resume and accounting as a
built-in one. What it declares besides (`uses_index = True` asks for the retrieval index; see
`Declarations` in harness/core/types.py) is read as on the built-in ones.

Each resolved system carries its identity: where it came from, a SHA-256 of the file that defines
it (of a service's settings but its deadline and attempts, which change no answer) and the
version of the package that ships it. The run manifest records it, so that a resume with changed
code is refused and two versions of one system never share a row of a report.
A name may be given first (`mine=path/to/my_rag.py:MyRag`); otherwise the system's `name`
attribute, else the attribute's own name, names it.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from freshrag.core import plugins
from freshrag.core.config import masked_url, shown_url, url_problem
from freshrag.core.errors import UserError
from freshrag.core.plugins import PluginError
from freshrag.core.registry import Broken, Entry, Registry
from freshrag.core.types import (
    Question,
    System,
    SystemContext,
    SystemKind,
    system_kind,
    uses_date,
    uses_endpoint,
    uses_index,
    uses_steps,
)
from freshrag.systems.external import answers_file, spans_read, traces_file
from freshrag.systems.external.http import HttpSettings, HttpSystem, settings_from_table

Factory = Callable[[SystemContext], System]


@dataclass(frozen=True)
class SystemSource:
    """A system ready to build, and where it came from."""

    name: str
    factory: Factory
    # "built-in", "file", "module", "entry point", "http", "answers file" or "traces file"
    origin: str
    where: str  # the spec as given, the built-in's module, or the service's URL
    sha256: str | None = None  # of the file that defines it; of a service's settings
    version: str | None = None  # of the installed package that ships it
    description: str = ""
    # how it is asked, changing no answer (a service's deadline and attempts): not its identity
    settings: dict[str, Any] | None = None

    # What the system declares (core/types.py Declarations), read from its factory, so that a
    # source stands for its factory wherever the run asks (`factories` in harness/run/service.py)
    @property
    def uses_index(self) -> bool:
        return uses_index(self.factory)

    @property
    def uses_date(self) -> bool:
        return uses_date(self.factory)

    @property
    def uses_steps(self) -> bool:
        return uses_steps(self.factory)

    @property
    def uses_endpoint(self) -> bool:
        return uses_endpoint(self.factory)

    @property
    def kind(self) -> SystemKind:
        return system_kind(self.factory)

    def __call__(self, context: SystemContext) -> System:
        return self.build(context)

    def record(self) -> dict[str, Any]:
        """What the run manifest keeps about the system (its identity, not its code)."""
        return {"origin": self.origin, "where": self.where, "sha256": self.sha256,
                "version": self.version, **({"settings": self.settings} if self.settings else {})}

    def build(self, context: SystemContext) -> System:
        """The system for a run, checked; the user's code failing here is named, with its
        error chained."""
        if self.origin == "built-in":
            return self.factory(context)
        try:
            system = self.factory(context)
        except (PluginError, UserError):
            raise
        except Exception as err:  # the user's code: any error, named with its system
            raise PluginError(f"system {self.name!r} ({self.where}): building it failed: "
                              f"{type(err).__name__}: {err}") from err
        return check_system(self, system)


def resolve_all(specs: str, builtins: Registry[Factory],
                services: dict[str, HttpSettings] | None = None,
                questions: list[Question] | None = None) -> list[SystemSource]:
    """The systems of a comma-separated list of specs (`--systems`), each name once."""
    found: dict[str, SystemSource] = {}
    for spec in (part.strip() for part in specs.split(",")):
        if not spec:
            continue
        source = resolve(spec, builtins, services, questions)
        if source.origin != "built-in" and source.name in builtins:
            raise PluginError(f"system {spec!r}: {source.name!r} is a built-in system's name; "
                              f"name yours apart, as NAME={spec}")
        if source.name in found:
            raise PluginError(f"two systems named {source.name!r} ({found[source.name].where} "
                              f"and {source.where}); name one as NAME={spec}")
        found[source.name] = source
    if not found:
        raise PluginError("no system given; --systems takes a comma-separated list")
    return list(found.values())


def services_from(table: dict[str, Any], where: str,
                  builtins: Registry[Factory]) -> dict[str, HttpSettings]:
    """The services of freshrag.toml's `[systems]` table, by name (`where` names the file); one
    named as a built-in system is refused: `--systems NAME` would ask the built-in one."""
    for name in table:
        if name in builtins:
            raise PluginError(f"{where}: [systems.{name}]: {name!r} is a built-in system's name, "
                              f"so a run would never ask this service; name it apart, e.g. "
                              f"[systems.my-{name}]")
    return {name: settings_from_table(name, value, where) for name, value in table.items()}


def resolve(spec: str, builtins: Registry[Factory],
            services: dict[str, HttpSettings] | None = None,
            questions: list[Question] | None = None) -> SystemSource:
    """The system `spec` names: `[NAME=]` then a built-in name, a service of `services` (the
    `[systems.*]` tables of freshrag.toml), an http(s):// URL, an answers file (`.jsonl` or
    `.csv`) or a traces file (`.json`, or `.jsonl` of spans), matched to `questions`, the run's
    dataset, `FILE.py:ATTR`, `MODULE:ATTR`, or the name
    of an installed package's entry point in the `freshrag.systems` group."""
    name, target = plugins.split_name(spec)
    if target not in builtins and (target in (services or {})
                                   or target.lower().startswith(("http://", "https://"))):
        found = _service((services or {}).get(target) or _url_settings(name, target, spec))
    elif target not in builtins and target.lower().endswith(answers_file.SUFFIXES
                                                             + traces_file.SUFFIXES):
        found = _answers(spec, Path(target), name or Path(target).stem, questions)
    elif ":" in target or target in builtins.names():
        return _source(builtins.resolve(spec))
    else:  # the wording every command has given for a system it does not know
        raise PluginError(f"unknown system(s) [{target!r}]; valid systems: "
                          f"{', '.join(builtins.names())}, or FILE.py:NAME, or MODULE:NAME for "
                          f"your own (see `freshrag systems`)")
    return replace(found, name=plugins.check_name("system", name or found.name, spec))


def available(builtins: Registry[Factory]) -> list[SystemSource]:
    """Every system a run can name without a path: the built-in ones, then the installed ones
    (one that fails to load listed with its problem)."""
    return [SystemSource(item.name, _broken, "entry point", item.where,
                         description=str(item.error)) if isinstance(item, Broken)
            else _source(item) for item in builtins.available()]


def check_system(source: SystemSource, system: Any) -> System:
    """`system`, after checking that it can answer: what the factory built is a system."""
    if not callable(getattr(system, "answer", None)):
        raise PluginError(f"system {source.name!r} ({source.where}): built a "
                          f"{type(system).__name__}, which has no answer(question) method")
    return system


def _service(settings: HttpSettings) -> SystemSource:
    record = json.dumps(settings.record(), sort_keys=True).encode()
    shown = shown_url(settings.url)  # the manifest's: user, password and query left out
    return SystemSource(settings.name, functools.partial(HttpSystem, settings=settings), "http",
                        shown, hashlib.sha256(record).hexdigest(), None,
                        f"the service at {shown}", settings.run_settings())


def _answers(spec: str, path: Path, name: str, questions: list[Question] | None) -> SystemSource:
    if questions is None:
        raise PluginError(f"system {spec!r}: an answers file is matched to a run's dataset; "
                          f"name it in `freshrag run --systems`")
    traces = is_traces(path)
    try:
        answers = (traces_file.load_traces if traces else answers_file.load_answers)(
            path, questions, name)
    except (answers_file.AnswersFileError, spans_read.TracesFileError) as err:
        raise PluginError(f"system {spec!r}: {err}") from None
    return SystemSource(name, answers_file.factory(answers),
                        "traces file" if traces else "answers file", str(path),
                        answers.sha256, None, f"the {'traces' if traces else 'answers'} in {path}")


def is_traces(path: Path) -> bool:
    """A traces file (systems/external/traces_file.py) rather than an answers file: a .json
    file, or a .jsonl file whose first line is a span."""
    return path.suffix.lower() in traces_file.SUFFIXES or (
        path.suffix.lower() == ".jsonl" and spans_read.sniff(path))


def _url_settings(name: str, url: str, spec: str) -> HttpSettings:
    if problem := url_problem(url):
        shown = masked_url(url)  # a password or query may hold a key
        raise PluginError(f"system {spec.replace(url, shown)!r}: {shown!r} is not a usable URL: "
                          f"{problem}")
    if not name:
        raise PluginError(f"system {spec!r}: name the service, as NAME={url} (or describe it in "
                          f"[systems.NAME] of freshrag.toml)")
    return HttpSettings(name, url)


def _source(entry: Entry[Factory]) -> SystemSource:
    return SystemSource(entry.name, entry.thing, entry.origin, entry.where, entry.sha256,
                        entry.version, entry.description)


def _broken(context: SystemContext) -> System:
    raise PluginError("this installed system failed to load (see `freshrag systems`)")
