"""The one reading of a forced call's arguments (harness/llm/toolcall.py) that the judge, scorers,
deciders and builders share: what it accepts, and the reason it gives for each fault."""

import re

import pytest

from freshrag.builders.prompts import FORM_MAX_TOKENS, WRITE_QUESTION_TOOL
from freshrag.builders.styles.needs import NEED_MAX_TOKENS, NEED_TOOL
from freshrag.builders.traffic.query_log import DESCRIBE_MAX_TOKENS, DESCRIBE_TOOL
from freshrag.core.types import LLMResponse, Usage
from freshrag.llm.toolcall import ReplyError, line_of_text, room_for, tool_arguments


def response(arguments_text, name="f", text=None):
    return LLMResponse("builder", "m", text, name if arguments_text is not None else None,
                       arguments_text, Usage(), 0.0, False, [])


@pytest.mark.parametrize("raw, value", [
    pytest.param('{"a": "x"}', {"a": "x"}, id="object"),
    pytest.param('{"a": "line\nbreak"}', {"a": "line\nbreak"}, id="raw-line-break-in-a-string"),
    pytest.param('{}', {}, id="empty-object"),
])
def test_an_object_of_the_named_call_is_read(raw, value):
    assert tool_arguments(response(raw), "f") == value


@pytest.mark.parametrize("reply, reason", [
    pytest.param(response(None, text="I think yes"), "no f call", id="text-not-a-call"),
    pytest.param(response('{"a": 1}', name="g"), "no f call", id="another-function"),
    pytest.param(response('{"a": '), "invalid JSON arguments (Expecting value, column 7)",
                 id="torn"),
    pytest.param(response('["a"]'), "arguments are list, not an object", id="array"),
    pytest.param(response('"a"'), "arguments are str, not an object", id="string"),
])
def test_each_fault_has_its_reason(reply, reason):
    with pytest.raises(ReplyError) as err:
        tool_arguments(reply, "f")
    assert str(err.value) == reason


@pytest.mark.parametrize(("text", "min_chars", "fits"), [
    ("Who won the 2022 election?", 1, True),
    ("x" * 40, 1, True),
    ("x" * 41, 1, False),           # longer than max_chars
    ("", 1, False), ("", 0, True),  # empty only where min_chars is 0
    (" leading space", 1, False), ('"quoted', 1, False), ("]\n{", 1, False),
    ("two\nlines", 1, False), ("short", 8, False), ("long enough", 8, True),
])
def test_a_line_of_text_is_bounded_by_its_pattern(text, min_chars, fits):
    # the pattern is what a grammar-constrained server enforces (it wins over the length bounds)
    schema = line_of_text(40, min_chars=min_chars)
    assert bool(re.fullmatch(schema["pattern"].strip("^$"), text)) is fits
    assert (schema["minLength"], schema["maxLength"]) == (min_chars, 40)


def _string_fields(tool: dict) -> list[dict]:
    return [field for field in tool["function"]["parameters"]["properties"].values()
            if field.get("type") == "string" and "enum" not in field]


@pytest.mark.parametrize(("tool", "max_tokens"), [
    (DESCRIBE_TOOL, DESCRIBE_MAX_TOKENS), (NEED_TOOL, NEED_MAX_TOKENS),
    (WRITE_QUESTION_TOOL, FORM_MAX_TOKENS)])
def test_a_forced_call_of_free_text_can_close_its_json_within_max_tokens(tool, max_tokens):
    # a small model on a grammar runs a free string on until max_tokens cuts the JSON short
    fields = _string_fields(tool)
    assert fields and all("pattern" in field for field in fields)
    assert max_tokens >= room_for(*(field["maxLength"] for field in fields))
