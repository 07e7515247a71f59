"""The regex wikitext-to-text of passages against mwparserfromhell's (the dump source's): the
same text on ordinary article markup, and the two documented differences (docs/corpus.md)."""

from __future__ import annotations

import mwparserfromhell
import pytest

from freshrag.builders.corpus.wikitext import is_disambiguation, passage_text
from freshrag.builders.sources.dump import plain_text

SAME = [
    pytest.param("'''Foo''' is a [[town]] in [[Bar County|Bar]], ''Baz''.", id="links-quotes"),
    pytest.param("{{Infobox x|a={{small|(2020)}}|b=[[c]]}}\nText{{efn|note}} here.",
                 id="nested-templates"),
    pytest.param("A.<ref name=a>{{cite web|url=http://x|title=T}}</ref> B.<ref name=a/>",
                 id="references"),
    pytest.param("[[File:F.jpg|thumb|A [[picture]] of it]]\nProse [[Category:Towns]].",
                 id="image-with-link-and-category"),
    pytest.param("See [http://example.org the site], [http://bare] and http://free.org.",
                 id="external-links"),
    pytest.param("== History ==\n<!-- hidden -->Text with <small>small</small>,<br/> 3&nbsp;km"
                 "&sup2;.\n=== [[Sub]] ===\n* item one\n# item two", id="headings-tags-lists"),
    pytest.param("<math>x^2</math> after; <nowiki>[[x]]</nowiki> kept.", id="math-nowiki"),
]


@pytest.mark.parametrize("wikitext", SAME)
def test_the_text_is_mwparserfromhells(wikitext):
    assert passage_text(wikitext) == plain_text(mwparserfromhell.parse(wikitext))


def test_table_cells_become_rows_of_a_line_each():
    wikitext = "{| class=wikitable\n|-\n! H1 !! H2\n|-\n| a || b\n|}"
    assert plain_text(mwparserfromhell.parse(wikitext)) == "H1  H2 a  b"
    assert passage_text(wikitext) == "H1 H2\na b"  # the same words, a row a line


def test_a_definition_keeps_its_colon():
    assert plain_text(mwparserfromhell.parse("; term : def")) == "term  def"
    assert passage_text("; term : def") == "term : def"


def test_disambiguation_pages_are_told_apart():
    assert is_disambiguation("'''X''' may refer to:\n* [[A]]\n{{Disambiguation}}")
    assert not is_disambiguation("{{Infobox disambiguation-like}} prose")
