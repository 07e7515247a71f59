"""Changed facts from reworded sentences (`--rewrite-sentences`): the sentences whose wording
changed between the revision current at the cutoff and the latest one, each pair rewritten by
the builder model as a fact with an old and a new value
(docs/building.md#sentences-rewritten-by-the-model).

- Stage facts (builders/styles/changes.py): both revisions' text without markup (references,
  templates and the infobox dropped) is cut into sentences and the two lists aligned
  (`difflib`); a sentence kept as it was is unchanged, and one replaced by a sentence close to it
  (`MIN_SIMILAR` of their characters alike) and not the same after normalisation is a pair.
  Unchanged sentences are never sent to a model.
- Stage questions: at most `--questions-per-article` pairs a page (a seeded choice) are sent,
  each by one forced `write_changed_fact` call (builders/forced.py: a reply that is no call, or
  holds no text in a field, is asked once more). Each field is then checked: the value then must
  be stated by the sentence then and the value now by the sentence now (core/reference.py
  `matches`), the two must differ after normalisation, and the question must state neither.
  Each pair sent is a line of `sentences.jsonl` with its outcome, `kept` or the reason it was
  dropped (`OUTCOMES`), and its raw replies; a pair there is not sent again on resume.
"""

from __future__ import annotations

import difflib
import hashlib
import random
import re
from pathlib import Path
from typing import Any, Callable, Iterator

import mwparserfromhell

from freshrag.builders.forced import forced_call, text_field, usage_record
from freshrag.builders.prompts import (
    FACT_QUESTION_CHARS,
    FACT_VALUE_CHARS,
    REWRITE_MAX_TOKENS,
    REWRITE_PROMPT,
    REWRITE_TOOL,
)
from freshrag.builders.records import read_records
from freshrag.core.concurrency import map_with_progress
from freshrag.core.jsonl import JsonlWriter
from freshrag.core.reference import matches, normalise
from freshrag.core.types import LLM
from freshrag.llm.toolcall import ReplyError

SENTENCES = "sentences.jsonl"
MIN_SIMILAR = 0.6  # a sentence rewritten, rather than another sentence in its place
MAX_BLOCK = 400  # sentence pairs compared in one replaced block before pairing by position
SENTENCE_CHARS = (20, 600)  # shorter: a heading or a fragment; longer: a run-on list
# What became of a pair sent: a question, or why not
OUTCOMES = ("kept", "no_reply", "reply_unparsed", "value_not_in_sentence", "same_value",
            "question_states_a_value")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
WRITE_FACT = REWRITE_TOOL["function"]["name"]


def changed_sentences(then_text: str | None, now_text: str | None) -> dict[str, Any]:
    """The sentences of the two revisions compared: how many then, how many unchanged, and the
    pairs (`then`, `now`) of sentences reworded."""
    old, new = plain_sentences(then_text or ""), plain_sentences(now_text or "")
    pairs, unchanged = [], 0
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            unchanged += i2 - i1
        elif tag == "replace":
            for sentence, close in _closest(old[i1:i2], new[j1:j2]):
                if normalise(sentence) == normalise(close):
                    unchanged += 1
                else:
                    pairs.append({"then": sentence, "now": close})
    return {"compared": len(old), "unchanged": unchanged, "pairs": pairs}


def _closest(old: list[str], new: list[str]) -> Iterator[tuple[str, str]]:
    """Each sentence of a replaced block with the closest one left of its replacement, where
    they are alike enough; a block past `MAX_BLOCK` pairs (a section rewritten) by position
    only, so that a long rewrite costs no more than its length."""
    if len(old) * len(new) > MAX_BLOCK:
        yield from ((a, b) for a, b in zip(old, new) if _alike(a, b) >= MIN_SIMILAR)
        return
    left = list(new)
    for sentence in old:
        close = max(left, key=lambda other: _alike(sentence, other), default=None)
        if close is not None and _alike(sentence, close) >= MIN_SIMILAR:
            left.remove(close)
            yield sentence, close


def _alike(one: str, other: str) -> float:
    return difflib.SequenceMatcher(None, one, other, autojunk=False).ratio()


def plain_sentences(wikitext: str) -> list[str]:
    """The sentences of a revision's prose: references and templates (the infobox among them)
    dropped, links as their text, cut at sentence ends within each paragraph."""
    try:
        code = mwparserfromhell.parse(wikitext)
        for tag in code.filter_tags(recursive=False,
                                    matches=lambda node: str(node.tag).lower() == "ref"):
            code.remove(tag)
        text = code.strip_code(normalize=True, collapse=True)
    except Exception:  # mwparserfromhell's own error on wikitext it cannot read: no prose
        return []
    low, high = SENTENCE_CHARS
    return [sentence for paragraph in text.split("\n")
            for sentence in SENTENCE_END.split(" ".join(paragraph.split()))
            if low <= len(sentence) <= high and any(char.isalpha() for char in sentence)]


def chosen_pairs(rows: list[dict[str, Any]], wanted: set[str], per_article: int,
                 seed: int) -> Iterator[dict[str, Any]]:
    """The pairs to send of the pages of changes.jsonl `rows` that are `wanted`: at most
    `per_article` a page, a seeded choice of its own (the dry run's, page by page, is the
    same); each with its title and the two revisions."""
    for row in rows:
        found = row.get("sentences")
        if row["title"] not in wanted or not found:
            continue
        pairs = list(found["pairs"])
        random.Random(f"{seed}\n{row['title']}").shuffle(pairs)
        for pair in pairs[:per_article]:
            yield {"title": row["title"], **pair, "then_revision": found["then_revision"],
                   "now_revision": found["now_revision"]}


def pair_id(pair: dict[str, Any]) -> str:
    digest = hashlib.sha256(f"{pair['then']}\n{pair['now']}".encode()).hexdigest()[:10]
    return f"changed-{pair['title']}-sentence-{digest}".replace(" ", "_")


def rewrite_pairs(llm: LLM, out: Path, pairs: list[dict[str, Any]], cutoff: str,
                  concurrency: int) -> list[dict[str, Any]]:
    """Send each pair not in sentences.jsonl yet, writing its line as it finishes; every line
    of `pairs` then, in their order."""
    path = out / SENTENCES
    done = {row["id"]: row for row in read_records(path)}
    todo = [pair for pair in pairs if pair_id(pair) not in done]
    if todo:
        writer = JsonlWriter(path)
        try:
            map_with_progress(lambda pair: writer.write(rewritten(llm, pair, cutoff)), todo,
                              concurrency, desc="changed sentences", unit="pair", keep=False)
        finally:
            writer.close()
        done = {row["id"]: row for row in read_records(path)}
    return [done[pair_id(pair)] for pair in pairs]


def rewritten(llm: LLM, pair: dict[str, Any], cutoff: str) -> dict[str, Any]:
    """One pair's line of sentences.jsonl: the fact the model gave and its outcome."""
    outcome = forced_call(llm, "builder", REWRITE_TOOL, _messages(pair, cutoff), _fields,
                          max_tokens=REWRITE_MAX_TOKENS)
    line = {"id": pair_id(pair), **pair, "question": None, "value_then": None, "value_now": None,
            "raw": outcome.raw, "usage": usage_record(outcome.calls)}
    if not outcome.ok:
        empty = all(not (raw or "").strip() for raw in outcome.raw)
        return {**line, "outcome": "no_reply" if empty else "reply_unparsed",
                "detail": outcome.reason}
    fact = outcome.value
    return {**line, **fact, **dict(zip(("outcome", "detail"), checked(pair, fact)))}


def ask_once(llm: LLM, pair: dict[str, Any], cutoff: str) -> None:
    """The pair's first request as `rewritten` sends it, for the dry run: one call a pair, since
    a made-up reply says nothing of whether a real one would be asked again."""
    llm.chat("builder", _messages(pair, cutoff)(""), tools=[REWRITE_TOOL], tool_choice=WRITE_FACT,
             temperature=0.0, max_tokens=REWRITE_MAX_TOKENS, attempt=0)


def _messages(pair: dict[str, Any], cutoff: str) -> Callable[[str], list[dict[str, str]]]:
    user = f"Subject: {pair['title']}\nSentence then: {pair['then']}\nSentence now: {pair['now']}"
    return lambda _: [{"role": "system", "content": REWRITE_PROMPT.format(cutoff=cutoff)},
                      {"role": "user", "content": user}]


def _fields(values: dict[str, Any]) -> dict[str, str]:
    """The three fields, each a string with something in it (a value may be a bare number)."""
    found = {"question": text_field(values, "question", FACT_QUESTION_CHARS)}
    for name in ("value_then", "value_now"):
        value = values.get(name)
        if not isinstance(value, str) or not value.strip() or len(value) > FACT_VALUE_CHARS:
            raise ReplyError(f"{name} is {str(value)[:200]!r}, not a value of 1 to "
                             f"{FACT_VALUE_CHARS} characters")
        found[name] = " ".join(value.split())
    return found


def checked(pair: dict[str, Any], fact: dict[str, str]) -> tuple[str, str | None]:
    """(outcome, why) of a parsed fact, checked field by field against its sentences."""
    for side in ("then", "now"):
        if not matches(pair[side], fact[f"value_{side}"]):
            return "value_not_in_sentence", (f"value_{side} {fact[f'value_{side}']!r} is not "
                                             f"stated by the sentence {side}")
    if normalise(fact["value_then"]) == normalise(fact["value_now"]):
        return "same_value", f"{fact['value_then']!r} and {fact['value_now']!r} are one value"
    for side in ("then", "now"):
        if matches(fact["question"], fact[f"value_{side}"]):
            return "question_states_a_value", f"the question states the value {side}"
    return "kept", None
