"""Scorers from the user's own code (docs/scoring.md#your-own-scorer): a class or factory named by
a file (`path/to/my_scorer.py:MyScorer`) or a module (`my_package.scorers:MyScorer`), or
registered by an installed package under the entry-point group `freshrag.scorers`, beside the
built-in ones of `SCORERS` (harness/scoring/__init__.py), a registry of harness/core/registry.py
that resolves and checks them as it does every kind; each may be named first
(`mine=my_scorer.py:MyScorer`).

A scorer's factory is called without arguments and returns an object with `name`, `role`
(`scorer`, or `judge`), `needs` (of `article`, `embeddings`), `metrics` and
`score(llm, item) -> ScoreResult` (harness/scoring/base.py): a built-in's shape. One is made and
checked (the kind's check, in harness/scoring/__init__.py) when the scorer is named, before any
call.

The scorers a command names are resolved once (`resolve_all`, from `--scorers`); the pass, the dry
run and the batch pre-pass then know each by its name (`lookup`). A user's scorer carries its
identity (`record()`: where it came from, the SHA-256 of its file, its package's version), which
every score row it writes keeps, so that a pass resumed with changed code is refused rather than
merge two versions' scores into one row (scorepass.check_same_models).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from freshrag.core import plugins
from freshrag.core.errors import said
from freshrag.core.plugins import PluginError
from freshrag.core.registry import Entry
from freshrag.scoring import SCORERS, scorer_problem
from freshrag.scoring.base import Scorer


@dataclass(frozen=True)
class ScorerSource:
    """A scorer ready to make, what it calls and needs, and where it came from."""

    name: str
    factory: Callable[[], Scorer]
    origin: str  # "built-in", "file", "module" or "entry point"
    where: str  # the spec as given, the built-in's module, or the entry point and its package
    role: str
    needs: tuple[str, ...]
    metrics: tuple[str, ...]
    sha256: str | None = None  # of the file that defines it
    version: str | None = None  # of the installed package that ships it

    @property
    def builtin(self) -> bool:
        return self.origin == "built-in"

    def record(self) -> dict[str, Any]:
        """What a score row keeps about a user's scorer (its identity, not its code)."""
        return {"origin": self.origin, "where": self.where, "sha256": self.sha256,
                "version": self.version}

    def make(self) -> Scorer:
        """A scorer for a pass; the user's code failing here is named, with its error chained."""
        if self.builtin:
            return self.factory()
        return _made(self.name, self.where, self.factory)


_RESOLVED: dict[str, ScorerSource] = {}  # the user's scorers the command named, by name


def resolve_all(text: str) -> list[ScorerSource]:
    """The scorers of `--scorers` (comma-separated specs), each name once; from then on
    `lookup` knows them by name."""
    found: dict[str, ScorerSource] = {}
    for spec in dict.fromkeys(part.strip() for part in text.split(",") if part.strip()):
        source, target = resolve(spec), plugins.split_name(spec)[1]
        if source.name in found and found[source.name] != source:
            raise PluginError(f"two scorers named {source.name!r} ({found[source.name].where} "
                              f"and {source.where}); name one as NAME={target}")
        found[source.name] = source
    _RESOLVED.update((s.name, s) for s in found.values() if not s.builtin)
    return list(found.values())


def resolve(spec: str) -> ScorerSource:
    """The scorer `spec` names: `[NAME=]` then a built-in name, `FILE.py:ATTR`, `MODULE:ATTR`, or
    an installed package's entry point in the `freshrag.scorers` group."""
    return _source(SCORERS.resolve(spec))


def lookup(name: str) -> ScorerSource:
    """The scorer of that name: a built-in, one the command named (`resolve_all`), or an
    installed package's; a KeyError if none."""
    if name in SCORERS:
        return builtin(name)
    if name in _RESOLVED:
        return _RESOLVED[name]
    if name in SCORERS.installed():
        return resolve(name)
    raise KeyError(name)


def unknown(text: str) -> list[str]:
    """The names in `--scorers` that are neither built-in nor installed (and no path or module)."""
    targets = (plugins.split_name(spec.strip())[1] for spec in text.split(",") if spec.strip())
    others = [target for target in targets if ":" not in target and target not in SCORERS]
    return [target for target in others if target not in SCORERS.installed()] if others else []


def builtin(name: str) -> ScorerSource:
    return _source(SCORERS.builtin(name))


def _source(entry: Entry[Any]) -> ScorerSource:
    """A resolved scorer, what it calls and needs read from the class or from one it made."""
    shape = entry.thing if entry.builtin else entry.thing()
    return ScorerSource(entry.name, entry.thing, entry.origin, entry.where, shape.role,
                        tuple(shape.needs), tuple(shape.metrics), entry.sha256, entry.version)


def _made(name: str, where: str, factory: Callable[[], Any]) -> Scorer:
    """What the user's factory makes, checked to be a scorer."""
    try:
        scorer = factory()
    except PluginError:
        raise
    except Exception as err:  # the user's code: any error, named with its scorer
        raise PluginError(f"scorer {name!r} ({where}): making it failed: {said(err)}") from err
    problem = scorer_problem(scorer)
    if problem:
        raise PluginError(f"scorer {name!r} ({where}): made a {type(scorer).__name__}, {problem}")
    return scorer
