"""A question field's values, named and ordered once: every per-field table of a question field
(freshrag.core.types.Question: `label`, `information_need`, `kind`, `need`, `group`,
`criterion`, `hops`, `multihop`, `change`, `premise`) takes its groups from here, so that the report's breakdowns
(harness/reporting/breakdown.py) and the retrieval scan (harness/retrieval/scan.py) show the same
groups in the same order (docs/reports.md#per-field-breakdowns).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, TypeVar

from freshrag.core.types import KINDS, LABELS, QUESTION_FIELDS, UNKNOWN

UNLABELLED = "unlabelled"  # the group of questions for which the set gives no value
OVERALL = "overall"        # every question, in tables that add a row for all of them
# `reference` and `value_then` are free text per question and `gold_titles` a list of titles: a
# group of one says nothing
FIELDS = tuple(name for name in QUESTION_FIELDS
               if name not in ("reference", "gold_titles", "value_then"))
_KNOWN_ORDER = {"label": (*LABELS, UNKNOWN), "kind": KINDS, "need": ("yes", "no")}

T = TypeVar("T")


def value_name(value: Any) -> str:
    """A field's value as a table names it: booleans as yes/no, none as `unlabelled`."""
    if value is None:
        return UNLABELLED
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def grouped(items: Iterable[T], field: str,
            value_of: Callable[[T, str], Any]) -> dict[str, list[T]]:
    """Items by the name of their value of `field`: known values in their defined order (the
    labels as LABELS lists them), others alphabetically, `unlabelled` last."""
    groups: dict[str, list[T]] = {}
    for item in items:
        groups.setdefault(value_name(value_of(item, field)), []).append(item)
    known = _KNOWN_ORDER.get(field, ())
    order = sorted(groups, key=lambda name: (name == UNLABELLED, name not in known,
                                             known.index(name) if name in known else 0, name))
    return {name: groups[name] for name in order}
