"""Stage `facts`: the infobox fields of every A_r article as rows of a SQLite table, the database
that grounded questions are asked of (docs/methods.md#grounded-questions-and-robustness-groups).

Each article's wikitext (the revision its text was taken from) comes from the same source as the
sample: the dump is read again, or the wiki is asked for the revisions' content, 50 a request.
`mwparserfromhell` finds the top-level `{{Infobox TYPE ...}}` templates; each named parameter
with a value is one row: (article, created, infobox, field, value, normalised). The value is the
parameter's text without markup (links as their text, references and comments dropped); date
templates (`{{Start date|2026|3|14}}`, `{{Birth date|...}}`, `{{Death date and age|...}}`) become
ISO dates. `normalised` is `freshrag.core.reference.normalise(value)`, the form that answers
are matched in. The table is written whole into `facts.sqlite` (a temporary file renamed at the
end), which marks the stage finished.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Protocol

import mwparserfromhell
from mwparserfromhell.nodes import Comment, Tag, Template

from freshrag.builders.records import read_records
from freshrag.builders.sources.pages import BuildError
from freshrag.core.files import replacing
from freshrag.core.reference import normalise

FACTS = "facts.sqlite"
SCHEMA = ("CREATE TABLE facts (article TEXT NOT NULL, created TEXT, infobox TEXT NOT NULL, "
          "field TEXT NOT NULL, value TEXT NOT NULL, normalised TEXT NOT NULL)")
INFOBOX = re.compile(r"^infobox[\s_]+(.+)$", re.I)
# Fields that hold pictures, layout or links rather than facts about the subject.
IGNORED_FIELDS = {"image", "image_size", "imagesize", "caption", "alt", "logo", "map",
                  "map_caption", "pushpin_map", "website", "url", "signature", "coordinates",
                  "embedded", "module"}
DATE_TEMPLATES = {"start date", "end date", "birth date", "death date", "birth date and age",
                  "death date and age", "start date and age", "dts", "date"}


@dataclass(frozen=True)
class Fact:
    article: str
    created: str | None
    infobox: str  # the template's type, lower case: "settlement" for {{Infobox settlement}}
    field: str  # the parameter's name, lower case, spaces as underscores
    value: str
    normalised: str


class WikitextSource(Protocol):
    """A source that gives the wikitext of the sampled revisions (freshrag.builders.sources.dump, .mediawiki)."""

    description: str

    def wikitexts(self, articles: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
        """(title, wikitext) for the given articles.jsonl rows (title, revision_id), any order;
        an article the source no longer has is left out."""
        ...


def infobox_facts(title: str, created: str | None, wikitext: str) -> list[Fact]:
    """The facts of every top-level infobox of one article."""
    facts = []
    for template in mwparserfromhell.parse(wikitext).filter_templates(recursive=False):
        kind = INFOBOX.match(str(template.name).strip())
        if not kind:
            continue
        infobox = " ".join(kind.group(1).lower().replace("_", " ").split())
        for param in template.params:
            field = "_".join(str(param.name).strip().lower().split())
            if not param.showkey or field in IGNORED_FIELDS:
                continue
            value = field_value(param.value)
            if value:
                facts.append(Fact(title, created, infobox, field, value, normalise(value)))
    return facts


def field_value(wikicode: Any) -> str:
    """A parameter's value as plain text: date templates as ISO dates, other templates, comments
    and references dropped, links as their text."""
    parts = []
    for node in wikicode.nodes:
        if isinstance(node, Template):
            parts.append(_template_date(node) or "")
        elif isinstance(node, Comment) or (isinstance(node, Tag) and str(node.tag).lower() == "ref"):
            continue
        else:
            parts.append(str(node.__strip__(normalize=True, collapse=True,
                                            keep_template_params=False) or ""))
    return " ".join("".join(parts).split())


def _template_date(template: Template) -> str | None:
    """`{{Start date|2026|3|14}}` and its kin as 2026-03-14 (year, month or day alone if given)."""
    if str(template.name).strip().lower() not in DATE_TEMPLATES:
        return None
    numbers = [str(p.value).strip() for p in template.params if not p.showkey][:3]
    if not numbers or not all(n.isdigit() for n in numbers):
        return None
    return "-".join([numbers[0].zfill(4), *(n.zfill(2) for n in numbers[1:])])


def facts_stage(source: WikitextSource | None, out: Path, a_r: set[str]) -> dict[str, int]:
    """The stage: the table of the A_r articles, unless written already (then `source` may be
    None); returns the counts."""
    if not (out / FACTS).exists():
        if source is None:
            raise BuildError(f"{out}: stage facts has not finished and no source was given")
        build_facts(source, [row for row in read_records(out / "articles.jsonl")
                             if row["title"] in a_r], out)
    return fact_counts(out) or {}


def build_facts(source: WikitextSource, articles: list[dict[str, Any]], out: Path) -> Path:
    """Write `out/facts.sqlite` from the articles' wikitext; returns its path."""
    path = out / FACTS
    with replacing(path) as tmp:
        db = sqlite3.connect(tmp)
        try:
            with db:  # one transaction, committed before the file is moved into place
                _fill(db, source, articles)
        finally:
            db.close()
    return path


def _fill(db: sqlite3.Connection, source: WikitextSource, articles: list[dict[str, Any]]) -> None:
    created = {row["title"]: row.get("created") for row in articles}
    db.execute(SCHEMA)
    db.execute("CREATE TABLE articles (article TEXT PRIMARY KEY, wikitext_chars INTEGER)")
    for title, wikitext in source.wikitexts(articles):
        db.execute("INSERT OR REPLACE INTO articles VALUES (?, ?)", (title, len(wikitext)))
        db.executemany("INSERT INTO facts VALUES (?, ?, ?, ?, ?, ?)",
                       (astuple(fact) for fact in
                        infobox_facts(title, created.get(title), wikitext)))
    db.execute("CREATE INDEX facts_by_field ON facts (field, normalised)")
    # what reading the wikitext cost: API requests for a wiki (None for a dump)
    db.execute("CREATE TABLE meta (source TEXT, requests INTEGER)")
    db.execute("INSERT INTO meta VALUES (?, ?)",
               (source.description, getattr(source, "content_requests", None)))


def fact_counts(out: Path) -> dict[str, int] | None:
    """What the manifest says of the table: articles read, articles with an infobox, distinct
    fields, values, and the wiki's content requests; None before the stage has finished."""
    path = out / FACTS
    if not path.exists():
        return None
    with closing_db(path) as db:
        read, = db.execute("SELECT COUNT(*) FROM articles").fetchone()
        boxed, fields, values = db.execute(
            "SELECT COUNT(DISTINCT article), COUNT(DISTINCT field), COUNT(*) FROM facts").fetchone()
        _, requests = db.execute("SELECT source, requests FROM meta").fetchone()
    return {"articles_read": read, "articles_with_infobox": boxed, "fields": fields,
            "values": values, **({"requests": requests} if requests is not None else {})}


def closing_db(path: Path) -> contextlib.closing[sqlite3.Connection]:
    """A read-only connection to a finished table, closed at the end of a `with` block (the
    templates that run on it add `read_only`'s authorizer)."""
    return contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True))


# What SQL a user wrote (a template's fill and sql) may do: read, as one SELECT, nothing else.
# ATTACH (and VACUUM INTO, which SQLite authorizes as an ATTACH) would create a file at any
# path; PRAGMA, writes, transactions and schema changes are refused as well.
READING = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE}
FILE_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}
ACTIONS = {getattr(sqlite3, f"SQLITE_{name}"): name.replace("_", " ") for name in (
    "ALTER_TABLE", "ANALYZE", "ATTACH", "CREATE_INDEX", "CREATE_TABLE", "CREATE_TEMP_INDEX",
    "CREATE_TEMP_TABLE", "CREATE_TEMP_TRIGGER", "CREATE_TEMP_VIEW", "CREATE_TRIGGER",
    "CREATE_VIEW", "CREATE_VTABLE", "DELETE", "DETACH", "DROP_INDEX", "DROP_TABLE",
    "DROP_TEMP_INDEX", "DROP_TEMP_TABLE", "DROP_TEMP_TRIGGER", "DROP_TEMP_VIEW",
    "DROP_TRIGGER", "DROP_VIEW", "DROP_VTABLE", "FUNCTION", "INSERT", "PRAGMA", "REINDEX",
    "SAVEPOINT", "TRANSACTION", "UPDATE")}


class ReadOnly:
    """The authorizer (`Connection.set_authorizer`) of a connection that runs the user's SQL:
    SQLite asks it about every action of a statement as it compiles it, and it allows reading
    only. `refused` says what it last denied, for the error; `selected`, whether the statement
    compiled since `reset` selects at all (REINDEX, for one, asks about no action)."""

    def __init__(self) -> None:
        self.refused: str | None = None
        self.selected = False

    def reset(self) -> None:
        self.refused, self.selected = None, False

    def __call__(self, action: int, arg1: str | None, arg2: str | None, database: str | None,
                 trigger: str | None) -> int:
        if action == sqlite3.SQLITE_SELECT:
            self.selected = True
        if action in READING or (action == sqlite3.SQLITE_FUNCTION
                                 and (arg2 or "").lower() not in FILE_FUNCTIONS):
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_ATTACH:  # VACUUM INTO is authorized as an ATTACH
            self.refused = f"ATTACH or VACUUM INTO {arg1!r}" if arg1 else "VACUUM"
        else:
            shown = arg2 if action == sqlite3.SQLITE_FUNCTION else arg1  # a function's name
            self.refused = ACTIONS.get(action, f"action {action}") + (f" {shown!r}" if shown
                                                                      else "")
        return sqlite3.SQLITE_DENY


def read_only(db: sqlite3.Connection) -> ReadOnly:
    """Make `db` run reading statements only, whatever SQL it is given: `PRAGMA query_only`, and
    the `ReadOnly` authorizer (returned, to say what it refused)."""
    db.set_authorizer(None)  # an earlier guard would refuse the PRAGMA
    db.execute("PRAGMA query_only = ON")
    guard = ReadOnly()
    db.set_authorizer(guard)
    return guard


def batches(items: list[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
