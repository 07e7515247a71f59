"""The one reading of a forced call's arguments (harness/llm/toolcall.py) that the judge, scorers,
deciders and builders share: what it accepts, and the reason it gives for each fault."""

import pytest

from freshrag.core.types import LLMResponse, Usage
from freshrag.llm.toolcall import ReplyError, tool_arguments


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
