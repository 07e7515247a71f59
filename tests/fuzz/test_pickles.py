"""Legacy pickles: other types, rows of the wrong shape, values that could not be written back,
classes (code), truncated files, random bytes, and a few hundred bytes whose shared references
unfold to 10^12 items or more. `freshrag import-legacy` refuses each naming the file (and the
row), exit status 2, and leaves the run directory it would have written into byte for byte as it
was; the last kind within a second."""

import datetime
import math
import pickle
import pickletools
import re
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from tests import ROOT
from tests.fuzz.support import Result, assert_refused, budget, invoke, scratch, snapshot

ROW = {"title": "Town 0", "question": "How many bridges?", "answer": "Three.",
       "n_input_tokens": 120, "n_output_tokens": 8, "truthfulness": 5, "relevance": 4,
       "retrieved": False, "context": "Title: Town 0\nTown 0 has three bridges.", "url": "http://x",
       "date": "2024-01-01"}
# Set members of at most 60 bits: larger ones are refused as such (see the test of them below).
MEMBERS = st.integers(-2**60, 2**60)
PLAIN = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
                     | st.binary(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=3)
                     | st.frozensets(MEMBERS, max_size=3), max_leaves=6)


def _beside_a_good_import(directory: Path, data: bytes) -> tuple[Path, Any]:
    """directory/run holding a valid import, and `data` written as directory/bad.pkl: (its path,
    the run's files before anything reads it)."""
    good = directory / "good.pkl"
    good.write_bytes(pickle.dumps([ROW, dict(ROW, title="Town 1")]))
    assert invoke("import-legacy", good, "--dataset", "A_f", "--system", "naive",
                  "--out", directory / "run").status == 0
    path = directory / "bad.pkl"
    path.write_bytes(data)
    return path, snapshot(directory / "run")


def import_into(directory: Path, data: bytes, system: str = "naive"):
    """Import `data` as a pickle into directory/run, which already holds a valid import."""
    path, before = _beside_a_good_import(directory, data)
    result = invoke("import-legacy", path, "--dataset", "A_f", "--system", system,
                    "--out", directory / "run")
    assert snapshot(directory / "run") == before  # nothing lost or rewritten
    return path, result


@settings(max_examples=budget(40))
@given(value=PLAIN.filter(lambda v: not isinstance(v, list)), protocol=st.integers(0, 5))
def test_a_pickle_of_another_type_is_refused(value, protocol):
    with scratch() as (tmp, _):
        path, result = import_into(tmp, pickle.dumps(value, protocol=protocol))
        assert_refused(result, path)
        # bytes come through a class in protocols 0-2 (__builtin__.bytes, _codecs.encode)
        assert ("expected a list of dicts, found" in result.err
                or "refused to load" in result.err), result.err


@st.composite
def bad_rows(draw):
    """A list of rows with one broken at `index`, and what the message must say."""
    index = draw(st.integers(0, 2))
    rows = [dict(ROW, title=f"Town {i}") for i in range(3)]
    kind = draw(st.sampled_from(["not-a-dict", "missing", "text", "count", "score", "json"]))
    if kind == "not-a-dict":
        rows[index] = draw(PLAIN.filter(lambda v: not isinstance(v, dict)))
        return rows, index, "expected a dict"
    if kind == "missing":
        field = draw(st.sampled_from(["title", "question", "answer", "n_input_tokens",
                                      "n_output_tokens"]))
        del rows[index][field]
        return rows, index, f"missing {field}"
    if kind == "text":
        field = draw(st.sampled_from(["title", "question", "answer"]))
        rows[index][field] = draw(PLAIN.filter(lambda v: not isinstance(v, str)))
        return rows, index, f"{field} is"
    if kind == "count":
        field = draw(st.sampled_from(["n_input_tokens", "n_output_tokens"]))
        rows[index][field] = draw(st.integers(max_value=-1) | st.floats() | st.booleans()
                                  | st.text(max_size=3) | st.none())
        return rows, index, f"{field} is"
    if kind == "score":
        field = draw(st.sampled_from(["truthfulness", "relevance"]))
        rows[index][field] = draw(st.sampled_from([float("nan"), float("inf"), -float("inf")])
                                  | st.text(max_size=3) | st.none() | st.booleans())
        return rows, index, f"{field} is"
    field = draw(st.sampled_from(["url", "date", "retrieved"]))
    rows[index][field] = draw(st.binary(min_size=1, max_size=4)
                              | st.frozensets(MEMBERS, min_size=1) | st.just(float("nan")))
    stored = "retrieved_flag" if field == "retrieved" else field
    return rows, index, f"details.legacy.{stored} cannot be written as JSON"


@settings(max_examples=budget(100))
@given(case=bad_rows(), protocol=st.integers(3, 5))  # 0-2 pickle bytes through a class: refused
def test_a_row_of_the_wrong_shape_is_refused_by_its_index(case, protocol):
    rows, index, message = case
    with scratch() as (tmp, _):
        path, result = import_into(tmp, pickle.dumps(rows, protocol=protocol))
        assert_refused(result, f"{path}: row {index}", message)


CODE = [datetime.datetime(2024, 1, 1), Path("/etc/passwd"), complex(1, 2), ValueError("x"),
        range(3), slice(1, 2)]


class Runs:  # a class of this test module: a pickle of it names it
    pass


@settings(max_examples=budget(20))
@given(thing=st.sampled_from(CODE + [Runs()]), protocol=st.integers(2, 5), nested=st.booleans())
def test_a_pickle_that_names_a_class_is_refused_by_name(thing, protocol, nested):
    value = [dict(ROW, url=thing)] if nested else thing
    with scratch() as (tmp, _):
        path, result = import_into(tmp, pickle.dumps(value, protocol=protocol))
        assert_refused(result, path, "refused to load", "only plain containers")


# --------------------------------------------------------------------------- billion laughs

# The import in a child process of bounded memory and CPU: before the bound, such a pickle took
# 21 GB and nine minutes, which a test must not do to the machine. The child times the command.
CHILD = """
import sys, time
from freshrag.cli.main import main
started = time.perf_counter()
status = main(sys.argv[1:])
print(f"seconds {time.perf_counter() - started:.3f}")
sys.exit(status)
"""
CHILD_MEMORY = 1 << 30  # bytes of address space
CHILD_SECONDS = 20  # of CPU; the wall clock allows a little more


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (CHILD_SECONDS, CHILD_SECONDS))


def import_bounded(directory: Path, data: bytes) -> tuple[Path, Result, float]:
    """`import_into`'s import of `data`, in the bounded child; also the seconds it took."""
    path, before = _beside_a_good_import(directory, data)
    child = subprocess.run(
        [sys.executable, "-c", CHILD, "import-legacy", str(path), "--dataset", "A_f", "--system",
         "naive", "--out", str(directory / "run")], cwd=ROOT, capture_output=True, text=True,
        timeout=CHILD_SECONDS + 10, preexec_fn=_bounded)
    assert snapshot(directory / "run") == before
    timed = re.search(r"seconds ([0-9.]+)", child.stdout)
    seconds = float(timed.group(1)) if timed else math.inf
    return path, Result(child.returncode, child.stdout, child.stderr), seconds


FIELDS = ("url", "date", "retrieved", "context", "answer", "truthfulness", "n_input_tokens")


@st.composite
def laughs(draw) -> bytes:
    """A released run whose row holds, in a field the import reads, one object referred to
    `breadth` times at each level, levels enough for 10^12 leaves: lists, tuples, dicts or long
    strings, at any protocol."""
    kind = draw(st.sampled_from(["list", "tuple", "dict", "text"]))
    breadth = draw(st.integers(2, 12))
    value: object = "x" * (1000 if kind == "text" else 1)
    for _ in range(math.ceil(12 / math.log10(breadth))):
        value = (tuple([value] * breadth) if kind == "tuple" else
                 {f"k{i}": value for i in range(breadth)} if kind == "dict" else [value] * breadth)
    row = dict(ROW, **{draw(st.sampled_from(FIELDS)): value})
    return pickle.dumps([row], protocol=draw(st.integers(0, 5)))


def assert_refused_within_a_second(data: bytes, *names: str) -> None:
    with scratch() as (tmp, _):
        path, result, seconds = import_bounded(tmp, data)
        assert_refused(result, path, *names)
        assert seconds < 1, f"{seconds:.1f} s"


# A failing example is a child killed at its bound; shrinking would repeat that many times.
@settings(max_examples=budget(12), phases=[Phase.explicit, Phase.generate])
@given(data=laughs())
def test_a_pickle_whose_shared_references_unfold_beyond_its_size_is_refused_within_a_second(data):
    assert len(data) < 3000  # a few hundred bytes, a few thousand at protocol 0
    assert_refused_within_a_second(data, "shared references unfold to more than")


def hashed_again(times: int, as_set: bool) -> bytes:
    """A pickle that hashes one tuple of 8^6 leaves (a few milliseconds each time) `times`
    times, as the key of a dict or the member of a set that it builds and drops, then holds a
    good run. Within the size bound each time, so only the rule on keys and members stops it."""
    value: tuple = ("x",)
    for _ in range(6):
        value = tuple([value] * 8)
    whole = pickle.dumps(value, protocol=2)
    memo = [arg for opcode, arg, _ in pickletools.genops(whole) if opcode.name == "BINPUT"][-1]
    built = whole[2:-1]  # no PROTO, no STOP
    get = pickle.BINGET + bytes([memo])
    again = (pickle.EMPTY_SET + pickle.MARK + get + pickle.ADDITEMS if as_set else
             pickle.EMPTY_DICT + get + pickle.BININT1 + b"\x01" + pickle.SETITEM) + pickle.POP
    rows = pickle.dumps([ROW], protocol=2)[2:-1]
    return pickle.PROTO + b"\x04" + built + again * times + pickle.POP + rows + pickle.STOP


@pytest.mark.parametrize("as_set", [False, True])
def test_a_tuple_hashed_again_and_again_as_a_key_or_member_is_refused(as_set):
    data = hashed_again(4000, as_set)  # 4,000 hashes: ten seconds here before the rule
    assert pickle.loads(hashed_again(2, as_set)) == [ROW]  # the pickle does what it says
    assert_refused_within_a_second(data, "a tuple as a dict key or set member")


@settings(max_examples=budget(20))
@given(member=st.integers(2**60, 2**200) | st.integers(-2**200, -2**60 - 1),
       as_key=st.booleans(), protocol=st.integers(0, 5))
def test_a_number_over_60_bits_as_a_dict_key_or_set_member_is_refused(member, as_key, protocol):
    # Such numbers can be made to share one hash (n and n + 2**61 - 1 do), so that a set of many
    # takes time quadratic in their count; below 2**61 - 1 an int is its own hash.
    value = {member: 1} if as_key else frozenset([member, 1])
    with scratch() as (tmp, _):
        path, result = import_into(tmp, pickle.dumps([dict(ROW, url=value)], protocol=protocol))
        assert_refused(result, path, "a number of more than 60 bits as a dict key or set member")


def test_a_list_grown_after_it_was_shared_is_refused():
    # The pickler writes a list whole before anything refers to it again; grown afterwards, one
    # that 10^5 references counted as empty holds 1,000 strings at each of them.
    inner: list = []
    value: list = inner
    for _ in range(5):
        value = [value] * 10
    data = pickle.dumps([dict(ROW, url=value)], protocol=2)
    memo = next(arg for opcode, arg, _ in pickletools.genops(data) if opcode.name == "BINGET")
    grow = pickle.BINGET + bytes([memo]) + pickle.MARK \
        + (pickle.BINUNICODE + (8).to_bytes(4, "little") + b"xxxxxxxx") * 1000 \
        + pickle.APPENDS + pickle.POP
    data = data[:-1] + grow + pickle.STOP
    grown = pickle.loads(data)[0]["url"]
    for _ in range(5):
        grown = grown[0]
    assert len(grown) == 1000  # the pickle does what it says (it loads small: 10^5 are shared)
    assert_refused_within_a_second(data, "changes a list after a second reference to it was taken")


@settings(max_examples=budget(50))
@given(protocol=st.integers(0, 5), at=st.floats(0, 1))
def test_a_truncated_pickle_is_refused(protocol, at):
    data = pickle.dumps([dict(ROW, title=f"Town {i}") for i in range(3)], protocol=protocol)
    with scratch() as (tmp, _):
        path, result = import_into(tmp, data[:int(at * (len(data) - 1))])
        assert_refused(result, path, "not a plain pickle of a released run")


@settings(max_examples=budget(60))
@given(data=st.binary(max_size=200))
def test_random_bytes_are_refused(data):
    with scratch() as (tmp, _):
        path, result = import_into(tmp, data)
        assert_refused(result, path)
