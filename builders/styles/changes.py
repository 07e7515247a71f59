"""One page's history read once, oldest revision first, into the infobox fields whose value
changed after the cutoff (docs/building.md#changed-facts).

The value *then* is the field's in the revision current at the cutoff (the last one before the
day after it), the value *now* the field's in the latest revision. Memory stays flat in the
length of the history: a revision is let go once read, the one before the window is kept only
until the window starts, and each field keeps its value, when it was set and the value before it.
A revision's infobox is cut out of its text by counting braces and parsed (builders/styles/
facts.py `infobox_facts`) only when it differs from the previous revision's.

- `changes`: how often the field's value changed from the window's start (`history_days` before
  the cutoff) to the latest revision, a change reverted being no change; `fast` when that is at
  least `fast_per_year` changes a year, else `slow`.
- A change back to the value before within `revert_days` is a revert: when the value *then* is
  one so reverted, it was vandalism at the cutoff, and the value it hid is the value then; a
  field whose value now is that one is dropped as `reverted`.

With `sentences`, the row also holds the sentences of the two revisions that were reworded
(builders/styles/changed_sentences.py).

A page is dropped whole, with its reason, when its history is missing, truncated (its first
revision after the cutoff has a parent) or broken off, it was created after the cutoff, a
revision has no timestamp, the revision then or now has an infobox that does not parse, it has
no infobox, or no revision after the cutoff. A field is dropped when it was added or removed
since, or its value then and now are the same after normalisation (core/reference.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from typing import Any, Iterable

from freshrag.builders.sources.history import HistoryBroken, Revision
from freshrag.builders.styles.changed_sentences import changed_sentences
from freshrag.builders.styles.facts import infobox_facts

INFOBOX_START = re.compile(r"\{\{\s*infobox[\s_]", re.I)
BRACES = re.compile(r"\{\{|\}\}")
UNPARSED = None  # what `infobox_fields` gives for an infobox it cannot parse
# Why a page gives no candidate; then why a changed field gives no question
PAGE_DROPS = ("history_missing", "history_truncated", "created_after_cutoff",
              "revision_without_timestamp", "infobox_unparsed", "no_infobox",
              "no_edit_after_cutoff")
FIELD_DROPS = ("field_added", "field_removed", "same_value", "reverted", "beyond_per_article")
Fields = dict[str, tuple[str, str, str]]  # field -> (value, normalised, infobox type)


@dataclass(frozen=True)
class Window:
    """What a comparison reads a history against."""

    cutoff: date
    history_days: int = 730
    revert_days: int = 7
    fast_per_year: int = 1
    sentences: bool = False  # whether the sentences reworded are compared too

    @property
    def end(self) -> datetime:  # the first moment after the cutoff day
        return datetime.combine(self.cutoff + timedelta(days=1), time(), timezone.utc)

    @property
    def start(self) -> datetime:
        return self.end - timedelta(days=self.history_days)


@dataclass
class Value:
    """A field's value as the walk holds it: since when, and the value before it."""

    value: str | None
    normalised: str | None
    since: datetime | None
    before: Value | None = None
    counted: bool = False  # whether its change counts in `changes`


@dataclass
class Walk:
    """The state of one page's walk through its history."""

    window: Window
    fields: dict[str, Value] = field(default_factory=dict)
    infobox: dict[str, str] = field(default_factory=dict)  # field -> infobox type
    changes: dict[str, int] = field(default_factory=dict)
    reverted: set[str] = field(default_factory=set)  # fields whose value then was reverted
    then: dict[str, Value] | None = None
    then_revision: Revision | None = None
    then_parsed: bool = True
    parsed: bool = True  # whether the last revision applied parsed
    snippet: str | None = None  # the last revision's infobox text
    unparsed: int = 0
    started: bool = False  # whether a revision has been applied

    def apply(self, revision: Revision, counting: bool) -> None:
        """The fields as `revision` leaves them; its changes counted when `counting`."""
        snippet = infobox_text(revision.text or "")
        if snippet is not None and snippet == self.snippet:
            self.parsed = True
            return
        found = infobox_fields(snippet)
        if found is UNPARSED:
            self.unparsed += 1
            self.parsed = False
            return
        self.snippet, self.parsed = snippet, True
        for name in set(self.fields) | set(found):
            value, normalised, kind = found.get(name, (None, None, ""))
            self.infobox[name] = kind or self.infobox.get(name, "")
            self._set(name, value, normalised, revision.timestamp, counting)
        self.started = True

    def _set(self, name: str, value: str | None, normalised: str | None,
             at: datetime | None, counting: bool) -> None:
        held = self.fields.get(name)
        if held is None:
            if not self.started:
                self.fields[name] = Value(value, normalised, at)
                return
            held = Value(None, None, None)  # a field that appears: a change from none
        if held.normalised == normalised:  # the same value written otherwise: no change
            self.fields[name] = Value(value, normalised, held.since, held.before, held.counted)
            return
        before = held.before
        if (before is not None and before.normalised == normalised and at and held.since
                and at - held.since <= timedelta(days=self.window.revert_days)):
            self.changes[name] = self.changes.get(name, 0) - held.counted
            then = None if self.then is None else self.then.get(name)
            if then is not None and self.then is not None and (
                    then.normalised, then.since) == (held.normalised, held.since):
                self.reverted.add(name)  # the value at the cutoff was undone within days:
                self.then[name] = before  # the value then is the one it hid
            self.fields[name] = before
            return
        self.changes[name] = self.changes.get(name, 0) + counting
        self.fields[name] = Value(value, normalised, at, held, counting)

    def at_cutoff(self, revision: Revision) -> None:
        self.then = dict(self.fields)
        self.then_revision, self.then_parsed = revision, self.parsed


def compare(title: str, revisions: Iterable[Revision], window: Window) -> dict[str, Any]:
    """One page's line of changes.jsonl: `dropped` (a page's reason, or None), `detail`, the
    revisions read, then each changed field with its values, revisions, tag and fate."""
    walk, first, last, pending, count = Walk(window), None, None, None, 0
    try:
        for revision in revisions:
            count += 1
            if revision.timestamp is None:
                return _page(title, "revision_without_timestamp", count,
                             f"revision {revision.id} has no timestamp")
            first = first or revision
            if revision.timestamp >= window.start:
                if pending is not None:  # the page as it stood when the window opened
                    walk.apply(pending, counting=False)
                    pending = None
                if walk.then is None and revision.timestamp >= window.end and last is not None:
                    walk.at_cutoff(last)
                walk.apply(revision, counting=True)
            else:
                pending = revision
            last = revision
    except HistoryBroken as err:
        return _page(title, "history_truncated", count, str(err))
    if pending is not None:
        walk.apply(pending, counting=False)
    return _result(title, walk, first, last, count)


def _result(title: str, walk: Walk, first: Revision | None, last: Revision | None,
            count: int) -> dict[str, Any]:
    window = walk.window
    if first is None or last is None or first.timestamp is None or last.timestamp is None:
        return _page(title, "history_missing", count, "the source has no revision of it")
    if first.timestamp >= window.end:
        created = not first.parent_id
        return _page(title, "created_after_cutoff" if created else "history_truncated", count,
                     None if created else f"its first revision read ({first.id}, "
                     f"{first.timestamp:%Y-%m-%d}) has a parent: the history does not reach "
                     f"back to the cutoff")
    if walk.then is None or walk.then_revision is None:
        return _page(title, "no_edit_after_cutoff", count, None)
    if not (walk.then_parsed and walk.parsed):
        which = "at the cutoff" if not walk.then_parsed else "latest"
        return _page(title, "infobox_unparsed", count, f"the {which} revision's infobox does "
                     f"not parse", walk.unparsed)
    if not walk.then and not walk.fields:
        return _page(title, "no_infobox", count, None)
    span = max((last.timestamp - max(window.start, first.timestamp)).days, 30) / 365.25
    then, now = walk.then_revision, last
    changed, names = [], sorted(name for name in set(walk.then) | set(walk.fields)
                                if _held(walk.then, name) or _held(walk.fields, name))
    for name in names:
        old, new = walk.then.get(name), walk.fields.get(name)
        if _held(walk.then, name) == _held(walk.fields, name) and name not in walk.reverted:
            continue  # unchanged: counted, not listed
        rate = walk.changes.get(name, 0) / span
        changed.append({
            "field": name, "infobox": walk.infobox.get(name, ""),
            "value_then": old.value if old else None, "value_now": new.value if new else None,
            "then_revision": _revision(then), "now_revision": _revision(now),
            "changed_at": _stamp(new.since) if new else None,
            "changes": walk.changes.get(name, 0), "per_year": round(rate, 3),
            "change": "fast" if rate >= window.fast_per_year else "slow",
            "dropped": _field_drop(name, old, new, walk)})
    row: dict[str, Any] = {"title": title, "dropped": None, "detail": None, "revisions": count,
                           "unparsed_revisions": walk.unparsed, "fields": len(names),
                           "unchanged": len(names) - len(changed), "changed": changed}
    if window.sentences:  # the two revisions' prose: the one text kept of each
        row["sentences"] = {"then_revision": _revision(then), "now_revision": _revision(now),
                            **changed_sentences(then.text, now.text)}
    return row


def _held(fields: dict[str, Value], name: str) -> str | None:
    value = fields.get(name)
    return value.value if value is not None else None


def _field_drop(name: str, old: Value | None, new: Value | None, walk: Walk) -> str | None:
    if old is None or old.value is None:
        return "field_added"
    if new is None or new.value is None:
        return "field_removed"
    if old.normalised == new.normalised:  # the raw values differ, or the value then was undone
        return "reverted" if name in walk.reverted else "same_value"
    return None


def _revision(revision: Revision) -> dict[str, Any]:
    return {"id": revision.id, "timestamp": _stamp(revision.timestamp)}


def _stamp(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None


def _page(title: str, why: str, count: int, detail: str | None,
          unparsed: int = 0) -> dict[str, Any]:
    return {"title": title, "dropped": why, "detail": detail, "revisions": count,
            "unparsed_revisions": unparsed, "fields": 0, "unchanged": 0, "changed": []}


def infobox_text(wikitext: str) -> str | None:
    """Every top-level `{{Infobox ...}}` of `wikitext`, cut out by counting braces, joined; ""
    for none; None for one whose braces never close."""
    found, at = [], 0
    while (match := INFOBOX_START.search(wikitext, at)) is not None:
        depth, end = 0, None
        for brace in BRACES.finditer(wikitext, match.start()):
            depth += 1 if brace.group() == "{{" else -1
            if depth == 0:
                end = brace.end()
                break
        if end is None:
            return None
        found.append(wikitext[match.start():end])
        at = end
    return "\n".join(found)


def infobox_fields(snippet: str | None) -> Fields | None:
    """The fields of the infoboxes `infobox_text` cut out, by name; UNPARSED for none that
    parses where there was one."""
    if snippet is None:
        return UNPARSED
    if not snippet:
        return {}
    try:
        facts = infobox_facts("", None, snippet)
    except Exception:  # mwparserfromhell's own error on wikitext it cannot read
        return UNPARSED
    if not facts and "=" in snippet:  # an infobox with values of which none was read
        return UNPARSED
    return {fact.field: (fact.value, fact.normalised, fact.infobox) for fact in facts}
