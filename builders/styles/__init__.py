"""Question styles (docs/building.md#question-styles): how stage 4 writes questions. One module per
style, its style object registered in `STYLES` below as systems/ registers strategies: the paper's
creative and recent prompts (prompted.py), label-targeted statements with critiques
(statement_questions.py), grounded questions from infobox facts (grounded.py), two-article
questions (multihop.py); what a style object
offers the build is base.py. An installed package adds one under the entry-point group
`freshrag.styles`. Beside them, what styles build on: the fact table (facts.py), query templates
(templates.py), statements (statements.py), critiques (critiques.py), and questions per
information need (needs.py, `--needs`, which replaces a style's prompt).
"""

from __future__ import annotations

from typing import Iterator

from freshrag.builders.sources.pages import BuildError
from freshrag.builders.styles.base import Style
from freshrag.builders.styles.grounded import GROUNDED
from freshrag.builders.styles.multihop import MULTIHOP
from freshrag.builders.styles.prompted import CREATIVE, RECENT
from freshrag.builders.styles.statement_questions import STATEMENTS
from freshrag.core import plugins

STYLES: dict[str, Style] = {
    "creative": CREATIVE,
    "recent": RECENT,
    "statements": STATEMENTS,
    "grounded": GROUNDED,
    "multihop": MULTIHOP,
}
DEFAULT_STYLE = "creative"
ENTRY_POINT_GROUP = "freshrag.styles"
NEEDED = ("name", "description", "files", "always_labels", "takes_labels", "labels", "settings",
          "manifest", "write_questions", "walk")  # what a style object has (base.py)


def style_of(name: str) -> Style:
    """The style of that name: a built-in one, else an installed package's."""
    if name in STYLES:
        return STYLES[name]
    entry = plugins.entry_points(ENTRY_POINT_GROUP).get(name)
    if entry is None:
        raise BuildError(f"--style {name!r}: no such style; valid styles: {', '.join(Choices())}")
    found = plugins.load_entry_point("style", entry).thing
    missing = [key for key in NEEDED if not hasattr(found, key)]
    if missing:
        raise plugins.PluginError(f"style {name!r} ({entry.value}): a {type(found).__name__}, "
                                  f"which has no {', '.join(missing)} (builders/styles/base.py)")
    return found


class Choices:
    """`--style`'s choices: the built-in styles, then the installed ones, looked up only when a
    name is not built-in or the list is shown, so that a command starts without reading the
    installed packages."""

    def __contains__(self, name: object) -> bool:
        return name in STYLES or name in plugins.entry_points(ENTRY_POINT_GROUP)

    def __iter__(self) -> Iterator[str]:
        yield from STYLES
        yield from (name for name in plugins.entry_points(ENTRY_POINT_GROUP)
                    if name not in STYLES)


def takes_labels() -> list[str]:
    """The built-in styles that take `--labels` and `--min-critique`."""
    return [name for name, style in STYLES.items() if style.takes_labels]
