"""SQL query templates over the fact table
(docs/methods.md#grounded-questions-and-robustness-groups): each is filled with the table's distinct
values and executed for its ground truth.

A template has
- `name`, and `kind`: `selection` (which article has this value), `projection` (the value of a
  field of an article) or `join` (the other article sharing a value with this one);
- `fill`: a query over `facts` whose rows are the parameters (named columns);
- `sql`: the query itself, with `:name` parameters taken from a fill row; its first column is
  the answer;
- `text`: the query in plain words, `{column}` placeholders filled from the row, which the
  builder model rewrites as questions.
The gold article of a filled query is the fill row's `article` column, else the answer itself
(a selection answers with an article). A filled query with no answer is dropped as `empty`, one
with more than one distinct answer as `ambiguous`, and both are counted.

The built-in templates cover common infobox types; `--templates FILE` (TOML with `[[templates]]`
tables, or JSON: a list, or an object with a `templates` list) adds more, checked before any call.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freshrag.builders.styles.facts import SCHEMA, ReadOnly, read_only
from freshrag.core.errors import UserError
from freshrag.core.jsonl import loads

KINDS = ("selection", "projection", "join")
PARAMETER = re.compile(r"(?<!:):([A-Za-z_]\w*)")
PLACEHOLDER = re.compile(r"{(\w+)}")

# Fields asked about per infobox type: those that hold one fact about the subject.
COMMON_FIELDS = {
    "person": ("birth_date", "death_date", "birth_place", "occupation", "nationality", "known_for"),
    "settlement": ("country", "county", "population_total", "area_ha", "established_date",
                   "first_recorded"),
    "bridge": ("crosses", "opened", "design", "country", "locale", "total_length", "main_span"),
    "building": ("completed", "opened", "height", "architect", "location", "country"),
    "event": ("date", "location", "country", "winner", "visitors", "finishers", "leader"),
    "rail line": ("open", "close", "linelength", "stations", "start", "end", "locale"),
    "power station": ("commissioned", "capacity", "turbines", "location", "country"),
    "film": ("director", "released", "runtime", "country", "language", "starring"),
}
JOIN_FIELDS = ("country", "location", "birth_place", "nationality", "county", "crosses",
               "architect", "director")


class TemplateError(UserError, ValueError):
    """A template file that cannot be used; the message names the file and the template."""


@dataclass(frozen=True)
class Template:
    name: str
    kind: str
    fill: str
    sql: str
    text: str
    where: str = field(default="", compare=False)  # its file and entry, for errors; "" built in


@dataclass(frozen=True)
class Query:
    """One filled template: a semantic group's meaning and its ground truth."""

    group: str
    template: str
    kind: str
    sql: str
    params: dict[str, Any]
    text: str
    values: list[str]  # the distinct answers the SQL returned
    gold_title: str | None

    @property
    def dropped(self) -> str | None:
        return "empty" if not self.values else "ambiguous" if len(self.values) > 1 else None

    @property
    def answer(self) -> str | None:
        return self.values[0] if len(self.values) == 1 else None

    def record(self) -> dict[str, Any]:
        return {"group": self.group, "template": self.template, "kind": self.kind,
                "sql": self.sql, "params": self.params, "text": self.text,
                "values": self.values, "answer": self.answer, "gold_title": self.gold_title,
                "dropped": self.dropped}


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join("'" + value.replace("'", "''") + "'" for value in values)


def builtin_templates() -> list[Template]:
    templates = []
    for infobox, fields in COMMON_FIELDS.items():
        slug = infobox.replace(" ", "-")
        templates.append(Template(
            f"projection-{slug}", "projection",
            f"SELECT DISTINCT article, field, replace(field, '_', ' ') AS field_words FROM facts "
            f"WHERE infobox = '{infobox}' AND field IN ({_quoted(fields)})",
            "SELECT DISTINCT value FROM facts WHERE article = :article AND field = :field",
            "the {field_words} of {article}"))
        # a selection by a shared kind of value (a country) would rarely name one article
        identifying = tuple(field for field in fields if field not in JOIN_FIELDS)
        templates.append(Template(
            f"selection-{slug}", "selection",
            f"SELECT DISTINCT infobox, field, replace(field, '_', ' ') AS field_words, normalised,"
            f" value FROM facts WHERE infobox = '{infobox}' AND field IN ({_quoted(identifying)})",
            "SELECT DISTINCT article FROM facts WHERE infobox = :infobox AND field = :field "
            "AND normalised = :normalised",
            "the {infobox} whose {field_words} is {value}"))
    templates.append(Template(
        "join-shared-value", "join",
        f"SELECT DISTINCT article, field, replace(field, '_', ' ') AS field_words FROM facts "
        f"WHERE field IN ({_quoted(JOIN_FIELDS)})",
        "SELECT DISTINCT b.article FROM facts AS a JOIN facts AS b ON b.field = a.field "
        "AND b.normalised = a.normalised AND b.article != a.article "
        "WHERE a.article = :article AND a.field = :field",
        "the other article whose {field_words} is the same as that of {article}"))
    return templates


def load_templates(path: Path) -> list[Template]:
    """Templates from a TOML or JSON file, each checked against the fact table's schema."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise TemplateError(f"{path}: cannot read the templates file ({err})") from None
    if path.suffix == ".json":
        try:
            document: Any = loads(raw)
        except json.JSONDecodeError as err:
            raise TemplateError(f"{path}:{err.lineno}: not valid JSON: {err.msg} "
                                f"(column {err.colno})") from None
    elif path.suffix == ".toml":
        try:
            document = tomllib.loads(raw)
        except tomllib.TOMLDecodeError as err:
            raise TemplateError(f"{path}: not valid TOML: {err}") from None
    else:
        raise TemplateError(f"{path}: templates file must end in .toml or .json")
    entries = document.get("templates") if isinstance(document, dict) else document
    if not isinstance(entries, list) or not entries:
        raise TemplateError(f"{path}: expected a non-empty list of templates "
                            f"(TOML [[templates]] tables, or a JSON list)")
    templates = [_template(entry, f"{path}: templates[{n}]") for n, entry in enumerate(entries)]
    names = [t.name for t in templates]
    clashes = sorted({name for name in names if names.count(name) > 1}
                     | (set(names) & {t.name for t in builtin_templates()}))
    if clashes:
        raise TemplateError(f"{path}: template name(s) {clashes} used twice or by a built-in "
                            f"template; give each a new name")
    return templates


def _template(entry: Any, where: str) -> Template:
    if not isinstance(entry, dict):
        raise TemplateError(f"{where}: expected a table with name, kind, fill, sql and text")
    for key in ("name", "kind", "fill", "sql", "text"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise TemplateError(f"{where}: field {key!r} is missing or not a non-empty string")
    where = f"{where} ({entry['name']!r})"
    unknown = sorted(set(entry) - {"name", "kind", "fill", "sql", "text"})
    if unknown:
        raise TemplateError(f"{where}: unknown field(s) {unknown}")
    if entry["kind"] not in KINDS:
        raise TemplateError(f"{where}: field 'kind' is {entry['kind']!r}; it must be one of "
                            f"{', '.join(KINDS)}")
    template = Template(**{key: entry[key] for key in ("name", "kind", "fill", "sql", "text")},
                        where=where)
    check_template(template, where)
    return template


def check_template(template: Template, where: str) -> None:
    """The fill and the SQL are each one SELECT that compiles against the schema and only reads
    (facts.read_only: no ATTACH, VACUUM INTO, PRAGMA or write, which could create files at any
    path); every parameter and placeholder is a column of the fill."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute(SCHEMA)
        guard = read_only(db)
        cursor = _user_query(db, guard, template.fill, {}, f"{where}: field 'fill'")
        columns = {column[0] for column in cursor.description or ()}
        needed = set(PARAMETER.findall(template.sql))
        _user_query(db, guard, template.sql, {name: None for name in needed},
                    f"{where}: field 'sql'")
        for name, names in (("sql", needed), ("text", set(PLACEHOLDER.findall(template.text)))):
            missing = sorted(names - columns)
            if missing:
                raise TemplateError(f"{where}: field {name!r} uses {missing}, which field 'fill' "
                                    f"does not select (it selects {sorted(columns)})")
    finally:
        db.close()


def _user_query(db: sqlite3.Connection, guard: ReadOnly, sql: str, params: dict[str, Any],
                where: str) -> sqlite3.Cursor:
    """`sql` run on the empty schema, refused unless it is one SELECT that only reads."""
    guard.reset()
    try:
        cursor = db.execute(sql, params)
    except sqlite3.Error as err:
        if guard.refused:
            raise TemplateError(f"{where} may only read the fact table, as one SELECT; it asks "
                                f"for {guard.refused}") from None
        raise TemplateError(f"{where} is not a query over facts ({err})") from None
    if not guard.selected:
        raise TemplateError(f"{where} is not a SELECT; a template may only read the fact table, "
                            f"as one SELECT")
    return cursor


def fill_templates(db: sqlite3.Connection, templates: list[Template]) -> list[Query]:
    """Every template filled with every row of its fill query, executed; in a stable order.
    `db` runs reading statements only from here on (facts.read_only), whatever a template says."""
    guard = read_only(db)
    queries = []
    for template in templates:
        where = template.where or f"built-in template {template.name!r}"
        try:
            cursor = db.execute(template.fill)
        except sqlite3.Error as err:  # checked on the schema, it may still fail on the values
            raise TemplateError(f"{where}: field 'fill' failed on the fact table "
                                f"({guard.refused or err})") from None
        columns = [column[0] for column in cursor.description]
        needed = set(PARAMETER.findall(template.sql))
        for values in cursor.fetchall():
            row = dict(zip(columns, values))
            params = {name: row[name] for name in sorted(needed)}
            try:
                found = db.execute(template.sql, params).fetchall()
            except sqlite3.Error as err:
                raise TemplateError(f"{where}: field 'sql' failed on the fact table with "
                                    f"{params} ({guard.refused or err})") from None
            answers = list(dict.fromkeys(str(value[0]) for value in found
                                         if value[0] is not None))
            gold = row.get("article") or (answers[0] if len(answers) == 1 else None)
            queries.append(Query(_group_id(template.name, params), template.name, template.kind,
                                 template.sql, params, template.text.format(**row), answers,
                                 gold))
    return sorted(queries, key=lambda query: query.group)


def _group_id(template: str, params: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps([template, params], sort_keys=True).encode()).hexdigest()
    return f"g-{digest[:12]}"
