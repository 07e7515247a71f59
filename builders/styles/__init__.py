"""Question styles (docs/building.md#question-styles): how stage 4 writes questions. One module per
style, its style object registered in `STYLES` below as systems/ registers strategies: the paper's
creative and recent prompts (prompted.py), label-targeted statements with critiques
(statement_questions.py), grounded questions from infobox facts (grounded.py), two-article
questions (multihop.py), facts that changed after the cutoff (changed.py); what a style object
offers the build is base.py. `STYLES` is a registry (harness/core/registry.py): an installed
package adds one under the entry-point group `freshrag.styles`, checked to have what base.py
names. Beside them, what styles build on: the fact table (facts.py), query templates
(templates.py), statements (statements.py), critiques (critiques.py), and questions per
information need (needs.py, `--needs`, which replaces a style's prompt).
"""

from __future__ import annotations

from typing import Iterator

from freshrag.builders.sources.pages import BuildError
from freshrag.builders.styles.base import Style
from freshrag.core.registry import Registry, attributes_problem

NEEDED = ("name", "description", "files", "always_labels", "takes_labels", "options", "labels",
          "settings", "manifest", "write_questions", "walk")  # what a style object has (base.py)


# name -> style object, each module imported only when its style is asked for
STYLES: Registry[Style] = Registry("style", "freshrag.styles", {
    "creative": "freshrag.builders.styles.prompted:CREATIVE",
    "recent": "freshrag.builders.styles.prompted:RECENT",
    "statements": "freshrag.builders.styles.statement_questions:STATEMENTS",
    "grounded": "freshrag.builders.styles.grounded:GROUNDED",
    "multihop": "freshrag.builders.styles.multihop:MULTIHOP",
    "changed": "freshrag.builders.styles.changed:CHANGED",
}, check=attributes_problem(NEEDED, "builders/styles/base.py"))
DEFAULT_STYLE = "creative"


def style_of(name: str) -> Style:
    """The style of that name: a built-in one, else an installed package's."""
    if name not in Choices():
        raise BuildError(f"--style {name!r}: no such style; valid styles: {', '.join(Choices())}")
    found: Style = STYLES.resolve(name).thing
    return found


class Choices:
    """`--style`'s choices: the built-in styles, then the installed ones, looked up only when a
    name is not built-in or the list is shown, so that a command starts without reading the
    installed packages."""

    def __contains__(self, name: object) -> bool:
        return name in STYLES or name in STYLES.installed()

    def __iter__(self) -> Iterator[str]:
        yield from STYLES.names()


def takes_labels() -> list[str]:
    """The built-in styles that take `--labels` and `--min-critique`."""
    return [name for name, style in STYLES.items() if style.takes_labels]

