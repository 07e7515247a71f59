"""The strict parsing every labelled-question step shares (builders/forced.py)."""

import re

import pytest

from freshrag.builders.forced import ReplyError, text_field, text_list
from freshrag.builders.labels.prompts import SENTENCE


@pytest.mark.parametrize("value, parsed", [
    pytest.param("  Who won\n the  race? ", "Who won the race?", id="re-spaced"),
    pytest.param("]\n", None, id="no-letter"),
    pytest.param("", None, id="empty"),
    pytest.param(7, None, id="number"),
    pytest.param("x" * 2001, None, id="too-long"),
])
def test_text_field(value, parsed):
    if parsed is None:
        with pytest.raises(ReplyError):
            text_field({"q": value}, "q")
    else:
        assert text_field({"q": value}, "q") == parsed


@pytest.mark.parametrize("items, parsed", [
    pytest.param(["A b.", " A  b. ", "]", "C."], ["A b.", "C."], id="junk-and-repeats-dropped"),
    pytest.param(["]\n{", " "], None, id="only-junk"),
    pytest.param([], None, id="empty"),
    pytest.param("A.", None, id="not-a-list"),
    pytest.param(["A.", 3], None, id="not-strings"),
])
def test_text_list(items, parsed):
    if parsed is None:
        with pytest.raises(ReplyError):
            text_list({"s": items}, "s")
    else:
        assert text_list({"s": items}, "s") == parsed


@pytest.mark.parametrize("text, allowed", [
    pytest.param("Sweet Kaaram Coffee premiered in July 2023.", True, id="sentence"),
    pytest.param("Émile wrote \u201cit\u201d in 1890.", True, id="accented-start-curly-quotes"),
    pytest.param("]\n{\n    ", False, id="llama-junk"),
    pytest.param("   The subject.", False, id="leading-space"),
    pytest.param("Two\nlines here.", False, id="line-break"),
    pytest.param('He said "no" twice.', False, id="raw-quote-would-end-the-json-string"),
    pytest.param("Short", False, id="too-short"),
    pytest.param("A" * 241, False, id="too-long"),
])
def test_the_sentence_pattern_the_grammar_enforces(text, allowed):
    assert bool(re.fullmatch(SENTENCE["pattern"].strip("^$"), text)) == allowed
