"""A count in a message, worded as English counts (harness/core/wording.py): never "1 searches"."""

import pytest

from freshrag.core.wording import counted


@pytest.mark.parametrize("n, noun, plural, said", [
    pytest.param(1, "search", None, "1 search", id="one"),
    pytest.param(2, "search", None, "2 searches", id="es"),
    pytest.param(0, "system", None, "0 systems", id="none-is-plural"),
    pytest.param(1204, "question", None, "1,204 questions", id="thousands"),
    pytest.param(2, "query", None, "2 queries", id="ies"),
    pytest.param(2, "day", None, "2 days", id="vowel-y"),
    pytest.param(3, "failed pair", None, "3 failed pairs", id="phrase"),
    pytest.param(2, "person", "people", "2 people", id="irregular"),
    pytest.param(1, "person", "people", "1 person", id="irregular-one"),
])
def test_a_count_takes_the_noun_s_number(n, noun, plural, said):
    assert counted(n, noun, plural) == said
