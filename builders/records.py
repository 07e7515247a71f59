"""The builder's own record files, read back when a build resumes, with the checks of an input
(docs/faults.md#files-freshrag-reopens).

A build appends a record per article, call or candidate to files in its --out and, run again,
reads them back to know what is done. A file damaged since (edited by hand, cut by a full disk,
copied in from an older freshrag) used to end the build in a KeyError; `read_records` reads it
with the shape of its rows declared here, once per file, so that a row without a field the
build reads, or with a value of another kind, ends the build in one line naming the file, the
line and the field. Fields the readers take with `.get` are optional and not listed.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Mapping

from freshrag.core.jsonl import ResultsError, loads, read_jsonl
from freshrag.core.textfile import read_text

TEXT, NUMBER, LIST, OBJECT = (str,), (int,), (list,), (dict,)
MAYBE_TEXT, VERDICT = (str, type(None)), (bool, str)  # a verdict: true, false or "unknown"
Shape = Mapping[str, tuple[type, ...]]

SHAPES: dict[str, Shape] = {
    "sample.jsonl": {"title": TEXT, "discard": MAYBE_TEXT},
    "articles.jsonl": {"title": TEXT, "content": TEXT},
    "recency.jsonl": {"title": TEXT, "verdict": VERDICT},
    "questions.jsonl": {"id": TEXT, "title": MAYBE_TEXT},
    "labels.jsonl": {"id": TEXT, "label": TEXT},
    "needs.jsonl": {"need_index": NUMBER, "title": TEXT, "chunk": NUMBER, "position": NUMBER,
                    "outcome": TEXT},
    "links.jsonl": {"title": TEXT, "links": LIST},
    "multihop.jsonl": {"id": TEXT, "kind": TEXT},
    "dropped_questions.jsonl": {"id": TEXT, "attempt": NUMBER, "reason": TEXT},
    "distractors.jsonl": {"id": TEXT, "distractors": LIST},
    "candidates.jsonl": {"id": TEXT, "status": TEXT},
    "statements.jsonl": {"title": TEXT, "steps": OBJECT},
    "queries.jsonl": {"dropped": MAYBE_TEXT},
    "forms-failed.jsonl": {"id": TEXT},
    "changes.jsonl": {"title": TEXT, "dropped": MAYBE_TEXT, "revisions": NUMBER,
                      "unparsed_revisions": NUMBER, "fields": NUMBER, "unchanged": NUMBER,
                      "changed": LIST},
    "sentences.jsonl": {"id": TEXT, "title": TEXT, "then": TEXT, "now": TEXT, "outcome": TEXT},
}
KINDS = {str: "text", bool: "true or false", int: "a whole number", list: "a list", dict: "an object",
         type(None): "null"}


def read_records(path: Path, shape: Shape | None = None) -> list[dict[str, Any]]:
    """Every row of the record file `path` (none if it is not there), each of the shape its
    name has in SHAPES (or `shape`, for a file named by the user, such as --needs' records)."""
    return read_jsonl(path, functools.partial(problem, shape or SHAPES[path.name]))


def read_document(path: Path) -> dict[str, Any]:
    """A JSON object freshrag wrote whole (a mix's mix.json), read back with the checks of an
    input: its text, its JSON and its being an object, each refused naming the file."""
    try:
        document = loads(read_text(path, ResultsError))
    except json.JSONDecodeError as err:
        raise ResultsError(f"{path}:{err.lineno}: not valid JSON: {err.msg}; {FIX}") from None
    except RecursionError:
        raise ResultsError(f"{path}: JSON nested too deeply; {FIX}") from None
    if not isinstance(document, dict):
        raise ResultsError(f"{path}: expected a JSON object, got {type(document).__name__}; "
                           f"{FIX}")
    return document


def problem(shape: Shape, row: dict[str, Any]) -> str | None:
    """What is wrong with `row` for `shape`, in words, or None."""
    for field, kinds in shape.items():
        if field not in row:
            return f"no {field!r}, which every row of this file has; {FIX}"
        value = row[field]
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            wanted = " or ".join(KINDS[kind] for kind in kinds)
            return f"{field!r} is {_shown(value)}, not {wanted}; {FIX}"
    return None


FIX = "the file was changed since freshrag wrote it: restore it, or write into a new --out"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def read_title_list(path: Path) -> list[str]:
    """A stage's title list (`A_f.txt`): one title a line, split at "\n" alone, since
    splitlines() would also split at U+2028, U+0085 and the other line breaks a title may hold,
    and lose it (builders/sources/pages.py)."""
    text = path.read_bytes().decode("utf-8")
    return text.split("\n")[:-1] if text else []
