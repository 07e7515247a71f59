"""Legacy pickles: other types, rows of the wrong shape, values that could not be written back,
classes (code), truncated files, random bytes. `freshrag import-legacy` refuses each naming the
file (and the row), exit status 2, and leaves the run directory it would have written into
byte for byte as it was."""

import datetime
import pickle
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.support import assert_refused, budget, invoke, scratch, snapshot

ROW = {"title": "Town 0", "question": "How many bridges?", "answer": "Three.",
       "n_input_tokens": 120, "n_output_tokens": 8, "truthfulness": 5, "relevance": 4,
       "retrieved": False, "context": "Title: Town 0\nTown 0 has three bridges.", "url": "http://x",
       "date": "2024-01-01"}
PLAIN = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
                     | st.binary(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=3)
                     | st.frozensets(st.integers(), max_size=3), max_leaves=6)


def import_into(directory: Path, data: bytes, system: str = "naive"):
    """Import `data` as a pickle into directory/run, which already holds a valid import."""
    good = directory / "good.pkl"
    good.write_bytes(pickle.dumps([ROW, dict(ROW, title="Town 1")]))
    assert invoke("import-legacy", good, "--dataset", "A_f", "--system", "naive",
                  "--out", directory / "run").status == 0
    before = snapshot(directory / "run")
    path = directory / "bad.pkl"
    path.write_bytes(data)
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
    rows[index][field] = draw(st.binary(min_size=1, max_size=4) | st.frozensets(st.integers(),
                                                                                 min_size=1)
                              | st.just(float("nan")))
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
