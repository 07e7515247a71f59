"""Wikitext to the plain text of passages, by regular expressions (docs/corpus.md#plain-text).

The dump source turns wikitext into text with mwparserfromhell (builders/sources/dump.py
`plain_text`), which builds a node tree in Python for every page: most of the ~4 ms a page of
reading a dump. Here the same rules are applied as a few passes of C regular expressions over the
whole text, innermost markup first: comments; tags whose contents are not prose (references,
galleries, math, ...) with those contents; templates, nested ones from the inside out; images
and categories; links kept as their label; external links as their label; bold and italic marks
and other HTML tags dropped, their contents kept; entities decoded; headings written
`== Heading ==`. What it gives differently from mwparserfromhell (table cells, spacing) is said
in docs/corpus.md and pinned by tests/builders/corpus/test_wikitext.py.
"""

from __future__ import annotations

import html
import re

# Contents dropped with the tag: the dump source's NON_PROSE_TAGS and mwparserfromhell's
# invisible tags (definitions.INVISIBLE_TAGS).
HIDDEN_TAGS = ("ref", "references", "gallery", "math", "score", "timeline", "categorytree",
               "graph", "imagemap", "inputbox", "section", "templatedata")
# Contents kept as they are, never read as markup (mwparserfromhell's PARSER_BLACKLIST, less
# the hidden ones).
LITERAL_TAGS = ("nowiki", "pre", "source", "syntaxhighlight", "chem", "ce", "hiero")
NON_PROSE_LINKS = ("file:", "image:", "media:", "category:")
DISAMBIGUATION_TEMPLATES = {"disambiguation", "disambig", "dab", "hndis", "geodis"}

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_HIDDEN = re.compile(r"<(%s)\b[^>]*?(?:/>|>.*?(?:</\1\s*>|\Z))" % "|".join(HIDDEN_TAGS),
                     re.S | re.I)
_LITERAL = re.compile(r"<(%s)\b[^>]*>(.*?)</\1\s*>" % "|".join(LITERAL_TAGS), re.S | re.I)
_TEMPLATE = re.compile(r"\{\{(?:[^{}]|\{(?!\{)|\}(?!\}))*?\}\}", re.S)
_TABLE = re.compile(r"^[ \t]*\{\|(?:(?!^[ \t]*\{\|).)*?^[ \t]*\|\}", re.S | re.M)
_LINK = re.compile(r"\[\[([^\[\]]*)\]\]")
_EXTERNAL = re.compile(r"\[(?:https?:|ftps?:|mailto:|irc:|news:|//)[^\s\]]*(?:[ \t]+([^\]\n]*))?\]",
                       re.I)
_QUOTES = re.compile(r"'{2,}")
_TAG = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]*\b[^<>]*?/?>")
_HEADING = re.compile(r"^(={1,6})[ \t]*(.+?)[ \t]*\1[ \t]*$", re.M)
_LIST = re.compile(r"^[*#:;]+", re.M)
_PLACEHOLDER = re.compile("\x00(\\d+)\x00")
_DAB = re.compile(r"\{\{\s*(%s)\s*[|}]" % "|".join(DISAMBIGUATION_TEMPLATES), re.I)


def is_disambiguation(wikitext: str) -> bool:
    """Whether the page carries a disambiguation template (the dump source's rule)."""
    return _DAB.search(wikitext) is not None


def passage_text(wikitext: str) -> str:
    """The prose of `wikitext`: markup, references, templates, images and categories removed,
    headings written `== Heading ==`, runs of blank lines collapsed to one."""
    literal: list[str] = []
    text = _COMMENT.sub("", wikitext)
    if "<" in text:
        text = _HIDDEN.sub("", text)
        text = _LITERAL.sub(lambda m: _keep(literal, m.group(2)), text)
    text = _strip_nested(_TEMPLATE, "", text) if "{{" in text else text
    if "{|" in text:
        text = _strip_nested(_TABLE, _table_text, text)
    if "[[" in text:
        text = _strip_nested(_LINK, _link_text, text)
    if "[" in text:
        text = _EXTERNAL.sub(lambda m: m.group(1) or "", text)
    text = _QUOTES.sub("", text)
    if "<" in text:
        text = _TAG.sub("", text)
    if "&" in text:
        text = html.unescape(text)
    text = _HEADING.sub(_heading, text)
    text = _LIST.sub("", text)
    if literal:
        text = _PLACEHOLDER.sub(lambda m: literal[int(m.group(1))], text)
    return _tidy(text)


def _strip_nested(pattern: re.Pattern[str], replacement: object, text: str) -> str:
    """`pattern` replaced from the innermost match outwards, until nothing matches."""
    while True:
        text, count = pattern.subn(replacement, text)  # type: ignore[call-overload]
        if not count:
            return text


def _keep(literal: list[str], text: str) -> str:
    literal.append(text)
    return f"\x00{len(literal) - 1}\x00"


def _link_text(match: re.Match[str]) -> str:
    inner = match.group(1)
    target, bar, label = inner.partition("|")
    if target.strip().lower().startswith(NON_PROSE_LINKS):
        return ""
    return label if bar else target


def _table_text(match: re.Match[str]) -> str:
    """A table's cells, a row a line, cells apart by a space; attributes and captions' marks
    dropped."""
    rows: list[list[str]] = [[]]
    for line in match.group(0).split("\n")[1:-1]:
        line = line.strip()
        if line.startswith("|-"):
            rows.append([])
        elif line.startswith(("|", "!")):
            line = line[2:] if line.startswith("|+") else line[1:]
            for cell in re.split(r"\|\||!!", line):
                content = cell.split("|", 1)[1] if "|" in cell and "=" in cell.split("|", 1)[0] \
                    else cell
                rows[-1].append(content.strip())
        elif line and rows[-1]:
            rows[-1][-1] += " " + line
    return "\n".join(" ".join(row) for row in rows if row)


def _heading(match: re.Match[str]) -> str:
    marks = match.group(1)
    return f"{marks} {match.group(2).strip()} {marks}"


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.strip().split("\n")]
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text
