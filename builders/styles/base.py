"""What a question style offers the build (docs/building.md#question-styles): one object per
style, listed in `STYLES` (builders/styles/__init__.py), that the stages, the manifest, the dry
run and `freshrag build` ask instead of testing the style's name.

A style object has a `name` (`--style NAME`, recorded in the dataset's settings), a
`description` (its words in `--style`'s help), `files` (what it may write in the dataset
directory besides the stages' own), `always_labels` (its builds label every question),
`takes_labels` (it takes `--labels` and `--min-critique`), `options` (its own options: a frozen
dataclass whose fields are the `freshrag build` options of the same names, declared in the
style's module; the build holds one as `style_options`, which the style reads through
`options_of`), and four methods:

- `labels(given)`: the labels to aim for (`--labels`, or the style's default), or None;
- `settings(config)`: the settings it adds to the dataset's (a build into the directory with
  other values is refused); `manifest(config)`: other keys it keeps in the manifest;
- `write_questions(llm, config, titles)`: stage 4 for the articles `titles`, resumably; how
  many questions exist;
- `walk(config, titles, articles, done, known)`: for `build --dry-run`, a function making one
  article's calls (`walk(llm, position, title, label)`) as the live stage would, through a
  planner that answers them with made-up replies (harness/cost/build_estimate.py). `done` holds
  the ids of questions.jsonl; `known` says whether `titles` are final (else a question
  written before may be about another article at the same position).

A style lives below the stages (builders/stages.py imports the registry), so it imports none of
them: `config` is the build's BuildConfig, read through `Config`, the fields a style may read,
its own options among them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar

from freshrag.builders.records import read_records
from freshrag.core.records import Manifest
from freshrag.core.types import LLM

if TYPE_CHECKING:
    from freshrag.builders.styles.statements import LabelSpec

Options = TypeVar("Options")

ARTICLES, QUESTIONS = "articles.jsonl", "questions.jsonl"  # the dataset's files (core/dataset.py)


class Config(Protocol):
    """What a style reads of the build's BuildConfig (builders/stages.py: each field's meaning)."""

    @property
    def out(self) -> Path: ...
    @property
    def cutoff(self) -> date: ...
    @property
    def questions_per_article(self) -> int: ...
    @property
    def questions_from(self) -> str: ...
    @property
    def concurrency(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def style_options(self) -> Any: ...  # the chosen style's options; None: its defaults


# One article's calls for the dry run: (llm, position in `titles`, title, whether labelled).
Walk = Callable[[LLM, int, str, bool], None]
Articles = dict[str, dict[str, Any]]


class Style(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def files(self) -> tuple[str, ...]: ...
    @property
    def always_labels(self) -> bool: ...
    @property
    def takes_labels(self) -> bool: ...
    @property
    def options(self) -> type: ...

    def labels(self, given: LabelSpec | None) -> LabelSpec | None: ...

    def settings(self, config: Config) -> dict[str, Any]: ...

    def manifest(self, config: Config) -> Manifest: ...

    def write_questions(self, llm: LLM, config: Config, titles: list[str]) -> int: ...

    def walk(self, config: Config, titles: list[str], articles: Articles, done: set[str],
             known: bool) -> Walk: ...


@dataclass(frozen=True)
class NoOptions:
    """The options of a style that takes none of its own."""


def options_of(config: Config, kind: type[Options]) -> Options:
    """The build's options of a style whose options are `kind`: those given, else its defaults."""
    given = config.style_options
    return given if isinstance(given, kind) else kind()


class Plain:
    """The defaults of a style that needs nothing beyond its questions: no files of its own, no
    labels, no options, no settings; a style class may derive from it and override what it
    needs."""

    files: tuple[str, ...] = ()
    always_labels = False
    takes_labels = False
    options: type = NoOptions

    def labels(self, given: LabelSpec | None) -> LabelSpec | None:
        return None

    def settings(self, config: Config) -> dict[str, Any]:
        return {}

    def manifest(self, config: Config) -> Manifest:
        return {}


def read_articles(out: Path) -> Articles:
    """The dataset's articles by title."""
    return {row["title"]: row for row in read_records(out / ARTICLES)}
