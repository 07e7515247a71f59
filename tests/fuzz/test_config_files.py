"""freshrag.toml: every key with wrong types and out-of-range values, unknown keys and tables, bad
role fields, bad bytes. `freshrag run --config F` refuses each naming the file, the table and key
and the rule, before any call and before its run directory exists; values inside the rules load."""

import json
import math
import tomllib
from datetime import date, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from freshrag.core.config import MAX_ATTEMPTS, MAX_TIMEOUT_S, TOP_LEVEL, load_settings
from freshrag.core.dates import parse_date
from tests.fuzz.support import (
    assert_no_calls,
    assert_refused,
    budget,
    invoke,
    scratch,
    snapshot,
)
from tests.fuzz.urls import BAD_URLS, GOOD_URLS
from tests.support.datasets import write_dataset

TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
TOML_SCALARS = (st.booleans() | st.integers(-10**20, 10**20) | st.floats() | TEXT
                | st.dates() | st.datetimes())
TOML_VALUES = st.recursive(TOML_SCALARS, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(TEXT, inner, max_size=3), max_leaves=5)


def toml(value) -> str:
    """A TOML value's text (tomli_w is not a dependency; this covers what the tests generate)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # JSON escapes the control characters TOML refuses raw, but for DEL
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(map(toml, value)) + "]"
    return "{" + ", ".join(f"{toml(k)} = {toml(v)}" for k, v in value.items()) + "}"


def refused_config(directory: Path, server, text: str | bytes, *names) -> str:
    """`freshrag run --config` on this file: refused naming the file and `names`, no call, no run
    directory; returns stderr."""
    config = directory / "my.toml"
    config.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    questions, articles = write_dataset(directory / "data")
    result = invoke("run", "--questions", questions, "--articles", articles, "--config", config,
                    "--out", directory / "run", "--systems", "baseline")
    assert_refused(result, config, *names)
    assert_no_calls(server)
    assert not (directory / "run").exists()
    return result.err


def good_timeout(value) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and 0 < value <= MAX_TIMEOUT_S)


def good_attempts(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_ATTEMPTS


@settings(max_examples=budget(80))
@given(key=st.sampled_from(["timeout_s", "max_attempts"]), value=TOML_VALUES)
def test_a_number_of_the_wrong_type_or_range_is_refused_with_the_rule(server, key, value):
    if (good_timeout if key == "timeout_s" else good_attempts)(value):
        return  # inside the rules: test_numbers_inside_the_rules_load covers these
    with scratch(server) as (tmp, _):
        rule = ("must be a positive number of seconds" if key == "timeout_s"
                else f"must be a whole number from 1 to {MAX_ATTEMPTS}")
        refused_config(tmp, server, f"{key} = {toml(value)}\n", f"{key} {rule}", "got ")


@settings(max_examples=budget(30))
@given(timeout=st.floats(0, MAX_TIMEOUT_S, exclude_min=True) | st.integers(1, MAX_TIMEOUT_S),
       attempts=st.integers(1, MAX_ATTEMPTS))
def test_numbers_inside_the_rules_load(timeout, attempts):
    with scratch() as (tmp, _):
        (tmp / "ok.toml").write_text(f"timeout_s = {toml(timeout)}\nmax_attempts = {attempts}\n")
        settings_ = load_settings(tmp / "ok.toml", env={})
    assert (settings_.timeout_s, settings_.max_attempts) == (timeout, attempts)


@settings(max_examples=budget(40))
@given(key=st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,15}", fullmatch=True)
       .filter(lambda k: k not in TOP_LEVEL), value=TOML_VALUES)
def test_an_unknown_key_is_refused_listing_the_known_ones(server, key, value):
    with scratch(server) as (tmp, _):
        refused_config(tmp, server, f"{toml(key)} = {toml(value)}\n",
                       f"unknown key(s) [{key!r}]", "known: " + ", ".join(TOP_LEVEL))


@settings(max_examples=budget(20))
@given(table=st.sampled_from(["roles", "cutoffs", "prices", "build"]),
       value=TOML_SCALARS | st.lists(TOML_SCALARS, max_size=2))
def test_a_table_that_is_not_a_table_is_refused(server, table, value):
    with scratch(server) as (tmp, _):
        refused_config(tmp, server, f"{table} = {toml(value)}\n", f"{table} must be a table")


ROLE_SECTIONS = ["default", "answer", "decision", "judge", "builder", "embeddings"]


@st.composite
def bad_role_field(draw):
    """(field, TOML value, what the message must say): each invalid by construction."""
    kind = draw(st.sampled_from(["type", "unknown", "base_url", "model", "api_key", "api_key_env"]))
    if kind == "type":
        field = draw(st.sampled_from(["model", "base_url", "api_key", "api_key_env"]))
        return field, draw(TOML_VALUES.filter(lambda v: not isinstance(v, str))), "must be strings"
    if kind == "unknown":
        field = draw(st.from_regex(r"[a-z_]{1,12}", fullmatch=True).filter(
            lambda f: f not in ("model", "base_url", "api_key", "api_key_env")))
        return field, draw(TEXT), "unknown field(s)"
    if kind == "base_url":
        return "base_url", draw(BAD_URLS), "is not a base URL"
    if kind == "model":
        return "model", draw(st.one_of(
            st.text(" \t\n", max_size=3), TEXT.map(lambda t: f" {t}"), TEXT.map(lambda t: f"{t}\n"),
            st.tuples(TEXT, TEXT).map(lambda p: f"x{p[0]}\x07{p[1]}"))), "model name must be"
    if kind == "api_key":
        return "api_key", draw(st.one_of(
            st.text(" \t", max_size=3), st.tuples(TEXT, TEXT).map(lambda p: f"sk{p[0]} x{p[1]}"),
            st.text("é€ü", min_size=1).map(lambda t: "sk-" + t))), "API key must be printable ASCII"
    return "api_key_env", draw(st.one_of(
        st.just(""), st.from_regex(r"[0-9][A-Z_]{0,5}", fullmatch=True),
        st.from_regex(r"[A-Z]{1,4}[- =.é][A-Z]{0,4}", fullmatch=True))), "api_key_env must name"


@settings(max_examples=budget(100))
@given(section=st.sampled_from(ROLE_SECTIONS), case=bad_role_field())
def test_a_bad_role_field_is_refused_naming_the_section(server, section, case):
    field, value, message = case
    with scratch(server) as (tmp, _):
        err = refused_config(tmp, server, f"[roles.{section}]\n{toml(field)} = {toml(value)}\n",
                             f"[roles.{section}]", message)
        if field == "api_key" and isinstance(value, str) and value.strip():
            assert value.strip() not in err  # a key is never shown


@settings(max_examples=budget(20))
@given(section=st.from_regex(r"[a-z]{1,10}", fullmatch=True).filter(lambda s: s not in ROLE_SECTIONS))
def test_an_unknown_role_section_lists_the_roles(server, section):
    with scratch(server) as (tmp, _):
        refused_config(tmp, server, f"[roles.{section}]\nmodel = 'm'\n",
                       f"unknown role section(s) [{section!r}]", "roles are default, answer")


@settings(max_examples=budget(30))
@given(url=GOOD_URLS, model=TEXT.filter(lambda t: t.strip() == t and t and t.isprintable()),
       key=st.from_regex(r"sk-[A-Za-z0-9]{4,20}", fullmatch=True), pad=st.text(" \t\n", max_size=2))
def test_role_fields_inside_the_rules_load_and_a_key_is_stripped(url, model, key, pad):
    with scratch() as (tmp, _):
        (tmp / "ok.toml").write_text(f"[roles.judge]\nbase_url = {toml(url)}\nmodel = {toml(model)}\n"
                                     f"api_key = {toml(pad + key + pad)}\n")
        judge = load_settings(tmp / "ok.toml", env={}).role("judge")
    assert (judge.base_url, judge.model, judge.key()) == (url, model, key)


@settings(max_examples=budget(30))
@given(case=st.one_of(
    st.tuples(TOML_VALUES.filter(lambda v: not isinstance(v, str)), st.just("user_agent")),
    st.tuples(st.text(" \t", max_size=2) | TEXT.map(lambda t: t + "\n"), st.just("user_agent")),
    st.tuples(st.just("<unknown key>"), st.just("unknown key(s)"))))
def test_a_bad_build_table_is_refused(server, case):
    value, message = case
    text = ("[build]\nuser_agnet = 'me'\n" if value == "<unknown key>"
            else f"[build]\nuser_agent = {toml(value)}\n")
    with scratch(server) as (tmp, _):
        refused_config(tmp, server, text, "[build]", message)


@settings(max_examples=budget(40))
@given(data=st.binary(min_size=1, max_size=200), at=st.integers(0, 40))
def test_bytes_that_are_not_utf8_toml_are_refused(server, data, at):
    text = b'timeout_s = 30\n[roles.default]\nmodel = "m"\n'
    broken = text[:at] + data + text[at:]
    try:
        tomllib.loads(broken.decode("utf-8-sig"))
        if b"\x00" not in broken:
            return  # still a valid file (or valid up to values the other tests cover)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        pass
    with scratch(server) as (tmp, _):
        refused_config(tmp, server, broken)


def test_a_latin1_config_is_refused_with_the_offset(server):
    with scratch(server) as (tmp, _):
        refused_config(tmp, server, '[roles.judge]\nmodel = "modèle"\n'.encode("latin-1"),
                       "my.toml:2:", "byte offset 26", "iconv")


def is_cutoff(value) -> bool:
    try:
        parse_date(str(value))
    except ValueError:
        return False
    return True


@settings(max_examples=budget(40))
@given(model=st.from_regex(r"[a-z][a-z0-9.-]{0,12}", fullmatch=True),
       value=TOML_VALUES.filter(lambda v: not is_cutoff(v)))
def test_a_cutoff_that_is_not_a_date_is_refused_by_build(server, model, value):
    with scratch(server) as (tmp, _):
        config = tmp / "my.toml"
        config.write_text(f"[cutoffs]\n{toml(model)} = {toml(value)}\n")
        result = invoke("build", "--cutoff-model", model, "--config", config,
                        "--dump", tmp / "none.xml", "--out", tmp / "out")
        assert_refused(result, f"{config}: [cutoffs] {model}", "is not a date (expected YYYY-MM-DD)")
        assert not (tmp / "out").exists()
        assert_no_calls(server)


def is_price(entry) -> bool:
    """USD per million tokens: two finite numbers >= 0."""
    return (isinstance(entry, dict) and set(entry) == {"input", "output"}
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                    and v >= 0 for v in entry.values()))


@settings(max_examples=budget(40))
@given(model=st.from_regex(r"[a-z][a-z0-9.-]{0,12}", fullmatch=True),
       entry=TOML_VALUES | st.fixed_dictionaries({"input": TOML_SCALARS, "output": TOML_SCALARS}))
def test_a_price_that_is_not_two_amounts_is_refused_by_report(model, entry):
    if is_price(entry):
        return  # a good price
    with scratch() as (tmp, _):
        config = tmp / "my.toml"
        config.write_text(f"[prices]\n{toml(model)} = {toml(entry)}\n")
        result = invoke("report", tmp / "no-run", "--config", config)
        assert_refused(result, f"{config}: [prices] {model!r}")
        assert snapshot(tmp) == {"my.toml": config.read_bytes()}
