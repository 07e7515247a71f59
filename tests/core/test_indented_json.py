"""Indented JSON made partly by json's C encoder (core/files.py `indented`, what write_json
writes) is the very text of json's own indenting encoder, for any document: generated documents
and edge cases against `json.dumps(..., indent=2)`."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freshrag.core.files import indented, write_json
from freshrag.core.summary import Title, Usage

SCALAR = (st.none() | st.booleans() | st.integers() | st.text()
          | st.floats(allow_nan=False, allow_infinity=False))
KEY = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False,
                                                                           allow_infinity=False)
DOCUMENT = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=4)
                        | st.lists(inner, max_size=3).map(tuple)
                        | st.dictionaries(KEY, inner, max_size=4), max_leaves=30)


def by_json(value: Any, ensure_ascii: bool) -> str:
    return json.dumps(value, indent=2, allow_nan=False, ensure_ascii=ensure_ascii,
                      default=lambda record: json.loads(json.dumps(dict(record.items()))))


@settings(max_examples=300, deadline=None)
@given(document=DOCUMENT, ensure_ascii=st.booleans())
def test_any_document_is_written_as_json_indents_it(document, ensure_ascii):
    assert "".join(indented(document, ensure_ascii)) == by_json(document, ensure_ascii)


@pytest.mark.parametrize("document", [
    pytest.param({}, id="empty-object"),
    pytest.param([], id="empty-list"),
    pytest.param({"a": {}, "b": [], "c": [[]]}, id="empty-containers-inside"),
    pytest.param([{"q": "q1", "score": 0.1, "ok": True, "none": None}] * 3, id="table-rows"),
    pytest.param({"notes": ["Zwölf", "é\u2028"], 1.5: 1e16, None: -0.0, True: 1e-7},
                 id="non-text-keys-and-floats"),
    pytest.param({"a": [1, [2, [3, {"b": (4, 5)}]]]}, id="deep-nesting-and-a-tuple"),
    pytest.param([Title("A"), {"usage": Usage(3, 4, estimated=False)}], id="light-records"),
    pytest.param("text alone", id="a-scalar-document"),
])
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_edge_cases_are_written_as_json_indents_them(document, ensure_ascii):
    assert "".join(indented(document, ensure_ascii)) == by_json(document, ensure_ascii)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_number_json_cannot_hold_is_refused(tmp_path, bad):
    with pytest.raises(ValueError, match="Out of range float"):
        write_json(tmp_path / "analysis.json", {"rows": [{"mean": bad}]})
    assert not (tmp_path / "analysis.json").exists()
