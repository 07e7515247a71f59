"""Command-line options: every numeric option of every command at 0, negative, huge and not a
number; dates, shares, URLs, names, output directories. Each bad value ends in exit status 2 with
`argument --OPTION:` and the rule, before anything runs; each value inside the rule is parsed."""

import argparse
import re
from datetime import date, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freshrag.cli.main import parser
from freshrag.cli.values import share
from freshrag.core.dates import utc_today
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

# The least each command needs besides the option under test (argparse stops before using them).
BASE = {"build": ["--out", "o", "--cutoff", "2020-01-01"], "run": [], "index": ["--articles", "a"],
        "report": ["d"], "import-legacy": ["p.pkl", "--dataset", "A", "--system", "s", "--out", "o"],
        "import": ["a.jsonl", "--system", "s"], "systems": [],
        "demo": [], "probe-judge": [], "serve": [], "agreement": ["a", "b"],
        "score": ["d", "--scorers", "judge"],
        "scan-retrieval": [],
        "needs": ["--queries", "q.jsonl"],
        "mix": ["d", "--n", "1", "--out", "o"], "label": ["d"], "filter": ["r", "--out", "o"],
        "cutoff": [], "datasets": ["d"], "gate": ["a", "b"], "corpus": ["--out", "o"],
        "merge": ["a", "--out", "o"], "seed-server": ["--qdrant-url", "http://q:6333"]}


def commands() -> dict[str, argparse.ArgumentParser]:
    command_parser = parser()
    [sub] = [a for a in command_parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def options(accepts) -> list[tuple[str, argparse.Action]]:
    return [(name, action) for name, command in commands().items() for action in command._actions
            if action.option_strings and accepts(action)]


WHOLE = options(lambda action: hasattr(action.type, "low"))
TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12)


def test_every_numeric_option_has_a_stated_range():
    assert len(WHOLE) >= 20
    for command, action in options(lambda a: True):
        numeric_default = (isinstance(action.default, (int, float))
                           and not isinstance(action.default, bool))
        assert action.type not in (int, float), (command, action.option_strings)
        if numeric_default or action.type in (int, float):
            assert hasattr(action.type, "low") or action.type is share, (command, action.dest)


def not_whole(low: int, high: int):
    return st.one_of(
        st.integers(max_value=low - 1).map(str),                  # 0, negative
        st.integers(min_value=high + 1, max_value=10**60).map(str),  # huge
        st.floats().map(repr),                                    # 1.5, 1e+20, nan, inf
        TEXT.filter(lambda t: not re.fullmatch(r"\s*[+-]?[0-9]+\s*", t)),
        st.sampled_from(["", " ", "٣", "²", "1_000", "0x10", "1,000", "五"]))


@st.composite
def whole_option_and_bad_value(draw):
    command, action = draw(st.sampled_from(WHOLE))
    return command, action.option_strings[0], action.type, draw(not_whole(action.type.low,
                                                                          action.type.high))


@settings(max_examples=budget(300))
@given(case=whole_option_and_bad_value())
def test_a_numeric_option_out_of_its_range_is_refused_with_the_range(case):
    command, option, kind, value = case
    with scratch() as (tmp, _):
        result = invoke(command, *BASE[command], f"{option}={value}")
        assert snapshot(tmp) == {}
    assert_refused(result, f"argument {option}: expected a whole number from "
                           f"{kind.low:,} to {kind.high:,}")


@st.composite
def whole_option_and_good_value(draw):
    command, action = draw(st.sampled_from(WHOLE))
    return command, action, draw(st.integers(action.type.low, action.type.high))


@settings(max_examples=budget(60))
@given(case=whole_option_and_good_value(), pad=st.sampled_from(["", " ", "+"]))
def test_a_numeric_option_inside_its_range_is_parsed(case, pad):
    command, action, value = case
    args = parser().parse_args([command, *BASE[command], f"{action.option_strings[0]}={pad}{value}"])
    assert getattr(args, action.dest) == value


BAD_DATES = st.one_of(
    TEXT.filter(lambda t: not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", t)),
    # compact, week and ordinal dates, which Python's date.fromisoformat reads since 3.11
    st.dates(min_value=date(1000, 1, 1)).map(lambda d: d.strftime(
        f"{d.year}%m%d" if d.day % 3 == 0 else f"{d.isocalendar()[0]}-W%V-%u" if d.day % 3 == 1
        else f"{d.year}-%j")),
    st.dates().map(lambda d: d.strftime("%d.%m.%Y")),
    st.tuples(st.integers(1000, 9999), st.integers(13, 99), st.integers(1, 28)).map(
        lambda p: f"{p[0]}-{p[1]:02d}-{p[2]:02d}"),
    st.sampled_from(["2021-02-30", "2023-02-29", "2021-04-31", "0000-01-01", "2021-1-1"]))


@settings(max_examples=budget(60))
@given(option=st.sampled_from(["--today", "--knowledge-cutoff"]), value=BAD_DATES)
def test_a_date_that_is_not_yyyy_mm_dd_is_refused(option, value):
    with scratch():
        result = invoke("run", f"{option}={value}")
    assert_refused(result, f"argument {option}: expected a date as YYYY-MM-DD")


@settings(max_examples=budget(40))
@given(value=BAD_DATES | st.one_of(
    st.dates(max_value=date(1989, 12, 31)),
    st.dates(min_value=utc_today(), max_value=date(9999, 12, 31))).map(date.isoformat))
def test_a_build_cutoff_not_yyyy_mm_dd_or_outside_1990_to_yesterday_is_refused(server, value):
    with scratch(server) as (tmp, _):
        result = invoke("build", "--cutoff", value, "--dump", tmp / "none.xml", "--control", "1",
                        "--out", tmp / "out")
        assert_refused(result, "--cutoff: ")
        assert any(message in result.err for message in (
            f"--cutoff: {value!r} is not a date (expected YYYY-MM-DD)",
            f"--cutoff: {value} is not in the past (today is {utc_today()}, UTC)",
            f"--cutoff: {value} is before 1990-01-01")), result.err
        assert not (tmp / "out").exists()
        assert_no_calls(server)


@settings(max_examples=budget(20))
@given(day=st.dates(min_value=date(1990, 1, 1), max_value=utc_today() - timedelta(days=1)))
def test_a_build_cutoff_from_1990_to_yesterday_is_taken(day):
    from freshrag.builders.cutoffs import resolve_cutoff

    assert resolve_cutoff(day.isoformat(), None) == (day, "--cutoff")


@settings(max_examples=budget(20))
@given(option=st.sampled_from(["--today", "--knowledge-cutoff"]), day=st.dates())
def test_a_real_date_is_parsed(option, day):
    args = parser().parse_args(["run", f"{option}={day.isoformat()}"])
    assert getattr(args, option[2:].replace("-", "_")) == day.isoformat()


@settings(max_examples=budget(40))
@given(where=st.sampled_from([("probe-judge", "--probe-threshold"), ("run", "--text-weight"),
                              ("index", "--text-weight"), ("scan-retrieval", "--weights")]),
       value=st.one_of(st.floats().filter(lambda v: not 0 <= v <= 1).map(repr),
                       TEXT.filter(lambda t: not re.fullmatch(r"\s*[0-9.e+-]+\s*", t)
                                   and "," not in t),
                       st.sampled_from(["nan", "inf", "-0.5", "1.0001", ""])),
       good=st.lists(st.sampled_from(["0", "0.05", "1"]), max_size=2, unique=True))
def test_a_share_outside_0_to_1_is_refused(where, value, good):
    command, option = where
    if option == "--weights":  # a list: one bad item among good ones is enough
        value = ",".join([*good, value])
    with scratch():
        result = invoke(command, *BASE[command], f"{option}={value}")
    assert_refused(result, f"argument {option}: expected a share between 0 and 1")


URL_OPTIONS = [("build", "--wiki-api"), ("run", "--qdrant-url"), ("index", "--qdrant-url"),
               ("seed-server", "--qdrant-url"), ("run", "--otlp-endpoint")]


@settings(max_examples=budget(60))
@given(where=st.sampled_from(URL_OPTIONS), url=BAD_URLS)
def test_a_bad_url_option_is_refused(where, url):
    command, option = where
    with scratch() as (tmp, _):
        result = invoke(command, *BASE[command], f"{option}={url}")
        assert snapshot(tmp) == {}
    assert_refused(result, f"argument {option}:", "is not a URL")


@settings(max_examples=budget(20))
@given(url=GOOD_URLS)
def test_a_good_url_option_is_parsed(url):
    assert parser().parse_args(["run", f"--qdrant-url={url}"]).qdrant_url == url


EXECUTOR_COMMANDS = sorted({command for command, _ in options(
    lambda action: "--executor" in action.option_strings)})
BAD_ADDRESSES = st.one_of(
    TEXT.filter(lambda t: t != "auto" and not re.search(r":[0-9]+$", t)),  # no port
    st.integers(65536, 10**6).map(lambda port: f"head:{port}"),
    st.sampled_from(["", "head:0", "ray://head", "ray://:10001", "http://head:10001",
                     "head:10001/", "[::1]:0", "head :1", "AUTO"]))


def test_the_commands_that_build_an_index_choose_its_executor():
    assert {"index", "run", "scan-retrieval"} <= set(EXECUTOR_COMMANDS)


@settings(max_examples=budget(30))
@given(command=st.sampled_from(EXECUTOR_COMMANDS),
       value=TEXT.filter(lambda t: t not in ("local", "ray")))
def test_an_unknown_executor_is_refused(command, value):
    with scratch() as (tmp, _):
        result = invoke(command, *BASE[command], f"--executor={value}")
        assert snapshot(tmp) == {}
    assert_refused(result, "argument --executor: invalid choice")


@settings(max_examples=budget(60))
@given(command=st.sampled_from(EXECUTOR_COMMANDS), address=BAD_ADDRESSES)
def test_an_address_that_is_not_host_port_is_refused_before_anything(command, address):
    with scratch() as (tmp, _):
        result = invoke(command, *BASE[command], "--executor=ray", f"--address={address}")
        assert snapshot(tmp) == {}
    assert_refused(result, "address: expected ray://HOST:PORT, HOST:PORT or auto")


@pytest.mark.parametrize("command", EXECUTOR_COMMANDS)
def test_an_address_without_the_ray_executor_is_refused(command):
    with scratch() as (tmp, _):
        result = invoke(command, *BASE[command], "--address=ray://head:10001")
        assert snapshot(tmp) == {}
    assert_refused(result, "'ray://head:10001' given, but only the ray executor takes a cluster "
                           "address (give --executor ray)")


NAME_OPTIONS = [("import-legacy", "--dataset"), ("import-legacy", "--system"),
                ("import-legacy", "--model"), ("build", "--model"), ("build", "--user-agent"),
                ("seed-server", "--collection")]
BAD_NAMES = st.one_of(st.text(" \t\n", max_size=3), TEXT.map(lambda t: f" x{t}"),
                      TEXT.map(lambda t: f"x{t}\t"), TEXT.map(lambda t: f"x\x1b{t}"))


@settings(max_examples=budget(60))
@given(where=st.sampled_from(NAME_OPTIONS), value=BAD_NAMES)
def test_an_empty_or_padded_name_is_refused(where, value):
    command, option = where
    argv = [command, *BASE[command], f"{option}={value}"]
    with scratch() as (tmp, _):
        result = invoke(*argv)
        assert snapshot(tmp) == {}
    assert_refused(result, f"argument {option}:")


@pytest.mark.parametrize("command", ["build", "run", "report", "import-legacy", "demo",
                                     "scan-retrieval"])
def test_an_output_directory_that_is_a_file_is_refused(command):
    with scratch() as (tmp, _):
        Path("taken").write_text("keep me")
        result = invoke(command, *BASE[command], "--out=taken")
        assert Path("taken").read_text() == "keep me"
    assert_refused(result, "argument --out:", "'taken' exists and is not a directory")


@settings(max_examples=budget(30))
@given(size=st.integers(1, 5000), extra=st.integers(0, 5000), command=st.sampled_from(["run", "index"]))
def test_an_overlap_not_below_the_chunk_size_is_refused_before_any_call(server, size, extra, command):
    with scratch(server) as (tmp, _):
        questions, articles = write_dataset(tmp / "data")
        argv = (["run", "--questions", questions, "--articles", articles, "--out", tmp / "run",
                 "--systems", "naive"] if command == "run" else ["index", "--articles", articles])
        result = invoke(*argv, f"--chunk-size={size}", f"--chunk-overlap={size + extra}")
        assert_refused(result, f"--chunk-overlap must be less than --chunk-size ({size:,}), "
                               f"got {size + extra:,}")
        assert_no_calls(server)
        assert not (tmp / "run").exists() and not (tmp / "results").exists()


@settings(max_examples=budget(20))
@given(names=st.lists(TEXT.filter(lambda t: "," not in t and t.strip()), min_size=1, max_size=3))
def test_an_unknown_system_is_refused_listing_the_systems(server, names):
    from freshrag.systems import SYSTEMS

    if all(name.strip() in SYSTEMS for name in names):
        return
    with scratch(server) as (tmp, _):
        questions, articles = write_dataset(tmp / "data")
        result = invoke("run", "--questions", questions, "--articles", articles,
                        "--out", tmp / "run", f"--systems={','.join(names)}")
        if any(set(name) & set(":=/\\.") for name in names):  # a path, module, URL or NAME=
            assert_refused(result, "system")
        else:
            assert_refused(result, "unknown system(s)", "valid systems: " + ", ".join(SYSTEMS))
        assert_no_calls(server)
