"""SQL query templates (builders/styles/templates.py): filled from a small fact table and executed; empty
and ambiguous results dropped; a templates file checked, each problem named."""

import sqlite3

import pytest

from freshrag.builders.styles.facts import SCHEMA
from freshrag.builders.styles.templates import (
    TemplateError,
    builtin_templates,
    fill_templates,
    load_templates,
)

FACTS = [
    ("Bridge A", "bridge", "opened", "14 March 2026", "2026-03-14"),
    ("Bridge A", "bridge", "country", "Scotland", "scotland"),
    ("Tower B", "building", "country", "Scotland", "scotland"),
    ("Tower B", "building", "height", "31 m", "31 m"),
    ("Tower C", "building", "height", "31 m", "31 m"),
    ("Tower C", "building", "country", "Wales", "wales"),
]


@pytest.fixture
def db():
    connection = sqlite3.connect(":memory:")
    connection.execute(SCHEMA)
    connection.executemany("INSERT INTO facts VALUES (?, NULL, ?, ?, ?, ?)", FACTS)
    yield connection
    connection.close()


def by_text(queries):
    return {query.text: query for query in queries}


def test_builtin_templates_give_selection_projection_and_join(db):
    queries = by_text(fill_templates(db, builtin_templates()))
    projection = queries["the opened of Bridge A"]
    assert (projection.kind, projection.answer, projection.gold_title) == \
        ("projection", "14 March 2026", "Bridge A")
    selection = queries["the bridge whose opened is 14 March 2026"]
    assert (selection.kind, selection.answer, selection.gold_title) == \
        ("selection", "Bridge A", "Bridge A")
    join = queries["the other article whose country is the same as that of Tower B"]
    assert (join.kind, join.answer, join.dropped) == ("join", "Bridge A", None)
    # two towers are 31 m tall: the selection is ambiguous; Wales is nobody else's country
    assert queries["the building whose height is 31 m"].dropped == "ambiguous"
    assert queries["the building whose height is 31 m"].values == ["Tower B", "Tower C"]
    assert queries["the other article whose country is the same as that of Tower C"].dropped \
        == "empty"
    # the SQL with its parameters gives the recorded answer again
    assert db.execute(join.sql, join.params).fetchall() == [("Bridge A",)]


def test_group_ids_are_stable_and_distinct(db):
    first = fill_templates(db, builtin_templates())
    second = fill_templates(db, builtin_templates())
    assert [q.group for q in first] == [q.group for q in second]
    assert len({q.group for q in first}) == len(first)


GOOD = {"name": "tallest", "kind": "selection",
        "fill": "SELECT DISTINCT field FROM facts WHERE field = 'height'",
        "sql": "SELECT article FROM facts WHERE field = :field ORDER BY value DESC LIMIT 1",
        "text": "the article with the greatest {field}"}


def toml_of(entry):
    lines = [f'{key} = "{value}"' for key, value in entry.items()]
    return "[[templates]]\n" + "\n".join(lines) + "\n"


def test_a_templates_file_adds_templates(tmp_path, db):
    path = tmp_path / "more.toml"
    path.write_text(toml_of(GOOD))
    template, = load_templates(path)
    query, = fill_templates(db, [template])
    assert (query.text, query.answer, query.gold_title) == \
        ("the article with the greatest height", "Tower B", "Tower B")


@pytest.mark.parametrize("name, text, message", [
    pytest.param("bad.json", '{"templates": [\n{"name": 1,}]}', r"bad.json:2: not valid JSON",
                 id="json-syntax-line"),
    pytest.param("bad.toml", "[[templates]]\nname = \n", r"bad.toml: not valid TOML: .*line 2",
                 id="toml-syntax-line"),
    pytest.param("bad.yaml", "x", r"must end in .toml or .json", id="suffix"),
    pytest.param("bad.json", "[]", r"non-empty list of templates", id="empty"),
    pytest.param("bad.json", '[{**GOOD, "sql": ""}]', r"templates\[0\]: field 'sql' is missing",
                 id="missing-field"),
    pytest.param("bad.json", '[{**GOOD, "kind": "union"}]',
                 r"templates\[0\] \('tallest'\): field 'kind' is 'union'", id="kind"),
    pytest.param("bad.json", '[{**GOOD, "sql": "SELECT nope FROM facts"}]',
                 r"field 'sql' is not a query over facts \(no such column: nope\)", id="sql"),
    pytest.param("bad.json", '[{**GOOD, "fill": "SELEC field"}]',
                 r"field 'fill' is not a query over facts", id="fill"),
    pytest.param("bad.json", '[{**GOOD, "text": "the {subject}"}]',
                 r"field 'text' uses \['subject'\], which field 'fill' does not select",
                 id="placeholder"),
    pytest.param("bad.json", '[{**GOOD, "sql": "SELECT article FROM facts WHERE x = :other"}]',
                 r"field 'sql' is not a query over facts|field 'sql' uses \['other'\]",
                 id="parameter"),
    pytest.param("bad.json", '[{**GOOD, "extra": 1}]', r"unknown field\(s\) \['extra'\]",
                 id="unknown-field"),
    pytest.param("bad.json", '[GOOD, GOOD]', r"used twice", id="name-twice"),
    pytest.param("bad.json", '[{**GOOD, "name": "join-shared-value"}]', r"by a built-in",
                 id="name-of-a-builtin"),
])
def test_a_bad_templates_file_is_named(tmp_path, name, text, message):
    import json
    if "GOOD" in text:  # the table's Python spelling, made into JSON
        text = json.dumps(eval(text, {"GOOD": GOOD}))
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(TemplateError, match=message) as raised:
        load_templates(path)
    assert str(raised.value).startswith(str(path))


# SQL that would create a file, change the database or its connection: each refused, naming the
# file, the template and the field, and nothing is created at the path it names.
OUTSIDE = "made-by-a-template.db"


@pytest.mark.parametrize("field, sql, refused", [
    pytest.param("fill", "ATTACH DATABASE '{path}' AS x", "ATTACH or VACUUM INTO", id="attach"),
    pytest.param("sql", "VACUUM INTO '{path}'", "ATTACH or VACUUM INTO", id="vacuum-into"),
    pytest.param("fill", "SELECT field FROM facts; ATTACH '{path}' AS x", "not a query over facts",
                 id="second-statement"),
    pytest.param("sql", "PRAGMA query_only = 0", "PRAGMA 'query_only'", id="pragma"),
    pytest.param("sql", "INSERT INTO facts (article) VALUES ('x')", "INSERT 'facts'",
                 id="insert"),
    pytest.param("fill", "CREATE TEMP TABLE field AS SELECT 1", "may only read the fact table",
                 id="create"),
    pytest.param("sql", "DETACH DATABASE main", "DETACH", id="detach"),
    pytest.param("sql", "BEGIN", "TRANSACTION", id="transaction"),
    pytest.param("fill", "REINDEX", "is not a SELECT", id="reindex"),
    pytest.param("sql", "SELECT load_extension('{path}')", "FUNCTION 'load_extension'",
                 id="load-extension"),
])
def test_a_template_may_only_read_the_fact_table(tmp_path, field, sql, refused):
    import json
    target = tmp_path / OUTSIDE
    path = tmp_path / "more.json"
    path.write_text(json.dumps([{**GOOD, field: sql.format(path=target)}]))
    with pytest.raises(TemplateError) as raised:
        load_templates(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: templates[0] ('tallest'): field '{field}' ")
    assert refused in message and "\n" not in message
    assert not target.exists()


def test_the_fact_table_refuses_what_the_check_would_have(tmp_path):
    """A template that never went through the check (made in code) is refused on the real table
    too: the connection the templates run on is read-only with the same authorizer."""
    from freshrag.builders.styles.facts import closing_db
    from freshrag.builders.styles.templates import Template

    facts = tmp_path / "facts.sqlite"
    with sqlite3.connect(facts) as made:
        made.execute(SCHEMA)
        made.executemany("INSERT INTO facts VALUES (?, NULL, ?, ?, ?, ?)", FACTS)
    made.close()
    target = tmp_path / OUTSIDE
    unchecked = Template("copy", "projection", GOOD["fill"], f"VACUUM INTO '{target}'", "{field}")
    with closing_db(facts) as db, pytest.raises(TemplateError, match="VACUUM INTO") as raised:
        fill_templates(db, [unchecked])
    assert str(raised.value).startswith("built-in template 'copy': field 'sql' failed")
    assert not target.exists()


def test_a_template_failing_on_the_table_s_values_is_named(tmp_path, db):
    path = tmp_path / "more.toml"
    path.write_text(toml_of({**GOOD, "fill": "SELECT field FROM facts WHERE json_extract("
                                             "value, '$.x') IS NULL"}))
    template, = load_templates(path)  # compiles, and runs on the empty schema
    with pytest.raises(TemplateError, match="malformed JSON") as raised:
        fill_templates(db, [template])
    assert str(raised.value).startswith(f"{path}: templates[0] ('tallest'): field 'fill' failed")
