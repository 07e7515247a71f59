"""`freshrag build --style changed`: questions about facts that changed after the cutoff, on pages
that existed before it (docs/building.md#changed-facts).

1. After stage `facts`, each A_r article's revision history is read (a wiki's API by
   `prop=revisions` with `rvstart`/`rvdir`, or the `pages-meta-history` dump of
   `--history-dump`, streamed) and compared once, oldest revision first
   (builders/styles/changes.py): a line of `changes.jsonl` per page, with its infobox fields
   whose value changed between the revision current at the cutoff and the latest, or why the
   page gives none. A page already there is not read again when the build resumes.
2. The questions stage writes one question per kept field, at most `--questions-per-article` a
   page (a seeded choice), from a template on the field's name ("What is the current
   population total of Springfield?"): no model call, and a question that cannot state its
   own answer. Each row holds `reference` (the value now), `value_then`, `value_now`,
   `field`, `infobox`, both revisions (id and timestamp), when the value now was set
   (`changed_at`), `changes` and its tag `change` (`fast` or `slow`).

3. With `--false-premise`, each field's question is followed by a twin that presumes the value
   then still holds, from a template by the kind of value (`premise` "false", the plain
   question's "none"; docs/building.md#false-premises). With `--rewrite-sentences`, the
   sentences reworded since the cutoff are rewritten by the builder model as facts
   (builders/styles/changed_sentences.py), each kept one a question of `field` "sentence";
   with both, each of those has a twin too, the same template on the subject its question asks
   for, or the sentence then where the question names none: still no model call.

The funnel's `changed` counts pages read and dropped (by reason), fields compared, unchanged,
changed, dropped (by reason), questions by tag, false-premise questions by tag, and the
sentences compared, reworded, sent, kept (and their false-premise twins) and dropped (by reason).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, Callable, Iterator

from freshrag.builders.records import read_records
from freshrag.builders.sources.history import HistoryBroken, dump_histories
from freshrag.builders.sources.pages import BuildError
from freshrag.builders.styles.base import QUESTIONS, Articles, Config, Plain, Walk, options_of
from freshrag.builders.styles.changed_sentences import (
    SENTENCES,
    ask_once,
    chosen_pairs,
    pair_id,
    rewrite_pairs,
)
from freshrag.builders.styles.changes import Window, compare
from freshrag.core.jsonl import JsonlWriter, replace_jsonl
from freshrag.core.reference import numbers_in, whole_date
from freshrag.core.types import LLM

CHANGES = "changes.jsonl"
SENTENCE_FIELD = "sentence"  # the `field` of a question from a reworded sentence
# A sentence fact's question that names what it asks for ("What is the current population of
# Springfield?"), whose subject its false-premise twin can presume a value of
ASKS_FOR = re.compile(r"(?:what|who|which) is (?P<the>the )?(?:(?:current|present|latest) )?"
                      r"(?P<subject>[^?]+?)(?: (?:now|today|currently))?\s*\?", re.I)


@dataclass(frozen=True)
class ChangedOptions:
    """`--style changed`'s options, its settings too."""

    history_dump: Path | None = None  # --history-dump: a pages-meta-history dump (else the wiki)
    history_days: int = 730  # --history-days: how far before the cutoff changes are counted
    revert_days: int = 7  # --revert-days: a change undone within this many days is vandalism
    fast_per_year: int = 1  # --fast-per-year: changes a year from which a field is fast
    false_premise: bool = False  # --false-premise: a second question presuming the value then
    rewrite_sentences: bool = False  # --rewrite-sentences: reworded sentences, as facts


class Changed(Plain):
    """The style object (builders/styles/base.py): its histories read after stage facts
    (`source_step`), its questions from templates, its part of the funnel."""

    name = "changed"
    description = "facts of older pages whose infobox value changed after the cutoff"
    files = (CHANGES, SENTENCES)
    options = ChangedOptions

    def settings(self, config: Config) -> dict[str, Any]:
        if config.questions_from != "A_r":
            raise BuildError("--style changed asks about pages that existed before the cutoff, "
                             "which A_d and A_f leave out: give --questions-from A_r")
        given = options_of(config, ChangedOptions)
        return {"history_dump": given.history_dump and str(given.history_dump),
                "history_days": given.history_days, "revert_days": given.revert_days,
                "fast_per_year": given.fast_per_year, "false_premise": given.false_premise,
                "rewrite_sentences": given.rewrite_sentences}

    def write_questions(self, llm: LLM, config: Config, titles: list[str]) -> int:
        if not (config.out / CHANGES).exists():
            raise BuildError(f"{config.out}: no {CHANGES}: stage facts reads the histories; "
                             f"run it first (freshrag build --stage facts ..., no LLM call)")
        sentences = _sentence_questions(llm, config, titles) \
            if options_of(config, ChangedOptions).rewrite_sentences else []
        return replace_jsonl(config.out / QUESTIONS, chain(_questions(config, titles), sentences))

    def walk(self, config: Config, titles: list[str], articles: Articles, done: set[str],
             known: bool) -> Walk:
        """The sentence pairs' calls of the pages compared already (stage facts has read the
        histories); the fields' questions call no model."""
        if not options_of(config, ChangedOptions).rewrite_sentences:
            return lambda llm, position, title, label: None
        rows = read_records(config.out / CHANGES)
        sent = {line["id"] for line in read_records(config.out / SENTENCES)}
        cutoff = config.cutoff.isoformat()

        def walked(llm: LLM, position: int, title: str, label: bool) -> None:
            for pair in chosen_pairs(rows, {title}, config.questions_per_article, config.seed):
                if pair_id(pair) not in sent:
                    ask_once(llm, pair, cutoff)
        return walked

    def source_step(self, stage: str, config: Config, open_source: Callable[[], Any]) -> str | None:
        """Stage facts: every A_r article's history compared, into changes.jsonl."""
        if stage != "facts":
            return None
        rows = read_histories(config, open_source)
        kept = sum(field["dropped"] is None for row in rows for field in row["changed"])
        return f"{kept} changed facts on {len(rows)} pages' histories"

    def funnel(self, config: Config) -> dict[str, Any]:
        return {"changed": changed_funnel(config.out)} if (config.out / CHANGES).exists() \
            else {}


CHANGED = Changed()


def window(config: Config) -> Window:
    given = options_of(config, ChangedOptions)
    return Window(config.cutoff, given.history_days, given.revert_days, given.fast_per_year,
                  given.rewrite_sentences)


def read_histories(config: Config, open_source: Callable[[], Any]) -> list[dict[str, Any]]:
    """Compare the history of every A_r article without a line in changes.jsonl yet; all lines."""
    path = config.out / CHANGES
    done = {row["title"] for row in read_records(path)}
    todo = [row["title"] for row in read_records(config.out / "articles.jsonl")
            if row["title"] not in done]
    if todo:
        writer = JsonlWriter(path)
        try:
            for row in _compared(config, todo, open_source):
                writer.write(row)
        finally:
            writer.close()
    return read_records(path)


def _compared(config: Config, titles: list[str],
              open_source: Callable[[], Any]) -> Iterator[dict[str, Any]]:
    """Each title's line: from the history dump in its order, the ones it lacks after; or
    from the wiki, title by title."""
    given, span = options_of(config, ChangedOptions), window(config)
    if given.history_dump is None:
        source = open_source()
        if not hasattr(source, "history"):
            raise BuildError(f"--style changed reads revision histories, which {source.description}"
                             f" has none of: give --history-dump FILE (a pages-meta-history "
                             f"dump), or build from a wiki (--wiki-api)")
        for title in titles:
            yield compare(title, source.history(title, span.start), span)
        return
    left = set(titles)
    try:
        for title, revisions in dump_histories(given.history_dump, left):
            left.discard(title)
            yield compare(title, revisions, span)
    except HistoryBroken as err:  # the dump ends here: what it did not reach is missing
        yield from ({"title": title, "dropped": "history_missing", "detail": str(err),
                     "revisions": 0, "unparsed_revisions": 0, "fields": 0, "unchanged": 0,
                     "changed": []} for title in titles if title in left)
        return
    yield from (compare(title, iter(()), span) for title in titles if title in left)


def _questions(config: Config, titles: list[str]) -> Iterator[dict[str, Any]]:
    """The question rows of the kept fields of `titles`' pages, at most questions_per_article
    a page, chosen by the seed; each followed by its false-premise twin when asked for."""
    wanted = set(titles)
    rng = random.Random(config.seed)
    premised = options_of(config, ChangedOptions).false_premise
    for row in read_records(config.out / CHANGES):
        if row["title"] not in wanted:
            continue
        kept = [field for field in row["changed"] if field["dropped"] is None]
        rng.shuffle(kept)
        for field in sorted(kept[:config.questions_per_article], key=lambda f: f["field"]):
            yield question_row(row["title"], field, config)
            if premised:
                yield premise_row(row["title"], field, config)


def question_row(title: str, field: dict[str, Any], config: Config) -> dict[str, Any]:
    now = field["now_revision"]
    return {"id": f"changed-{title}-{field['field']}".replace(" ", "_"), "title": title,
            "question": question_text(title, field["field"]), "reference": field["value_now"],
            **{key: field[key] for key in ("value_then", "value_now", "field", "infobox",
                                           "then_revision", "now_revision", "changed_at",
                                           "changes", "per_year", "change")},
            "premise": "none", "revision_id": now["id"], "style": CHANGED.name,
            "stage": config.questions_from, "cutoff": config.cutoff.isoformat()}


def premise_row(title: str, field: dict[str, Any], config: Config) -> dict[str, Any]:
    """The question about a field that presumes its value then still holds."""
    row = question_row(title, field, config)
    return {**row, "id": f"{row['id']}-false-premise", "premise": "false",
            "question": premise_text(title, field["field"], field["value_then"])}


def question_text(title: str, field: str) -> str:
    """The question of a field: its name in words ("population_total": population total)."""
    return f"What is the current {_words(field)} of {title}?"


def premise_text(title: str, field: str, then: str) -> str:
    """The question about a field that presumes its value then."""
    return presumed(f"the {_words(field)} of {title}", then)


def presumed(subject: str, then: str) -> str:
    """The question that presumes `subject` still has the value then, by the kind of value: a
    date, a number, or a name or other words."""
    if whole_date(then) is not None:
        return f"Why is {subject} still given as {then}?"
    if numbers_in(then):
        return f"Why has {subject} stayed at {then}?"
    return f"Why is {subject} still {then}?"


def sentence_premise_text(title: str, question: str, sentence: str, then: str) -> str:
    """The question that presumes a sentence fact's value then: the subject the model's
    question asks for, by the kind of value; where the question names none ("How many people
    live there?"), the sentence then, quoted (its own capitals kept), of the page's subject."""
    asked = ASKS_FOR.fullmatch(" ".join(question.split()))
    if asked is not None:
        return presumed((asked["the"] or "") + asked["subject"], then)
    said = sentence.strip().rstrip(".!?;:, ")
    return f"Why is it still true of {title} that \"{said}\"?"


def _words(field: str) -> str:
    return " ".join(field.replace("_", " ").split())


def _sentence_questions(llm: LLM, config: Config, titles: list[str]) -> list[dict[str, Any]]:
    """The questions of the reworded sentences of `titles`' pages that the model rewrote as a
    fact that passed every check."""
    pairs = list(chosen_pairs(read_records(config.out / CHANGES), set(titles),
                              config.questions_per_article, config.seed))
    lines = rewrite_pairs(llm, config.out, pairs, config.cutoff.isoformat(), config.concurrency)
    premised = options_of(config, ChangedOptions).false_premise
    rows = []
    for line in lines:
        if line["outcome"] == "kept":
            rows.append(sentence_row(line, config))
            if premised:
                rows.append(sentence_premise_row(line, config))
    return rows


def sentence_row(line: dict[str, Any], config: Config) -> dict[str, Any]:
    return {"id": line["id"], "title": line["title"], "question": line["question"],
            "reference": line["value_now"], "value_then": line["value_then"],
            "value_now": line["value_now"], "field": SENTENCE_FIELD, "infobox": None,
            "sentence_then": line["then"], "sentence_now": line["now"],
            "then_revision": line["then_revision"], "now_revision": line["now_revision"],
            "changed_at": None, "changes": None, "per_year": None, "change": None,
            "premise": "none", "revision_id": line["now_revision"]["id"], "style": CHANGED.name,
            "stage": config.questions_from, "cutoff": config.cutoff.isoformat()}


def sentence_premise_row(line: dict[str, Any], config: Config) -> dict[str, Any]:
    """The question about a sentence fact that presumes its value then still holds."""
    row = sentence_row(line, config)
    return {**row, "id": f"{row['id']}-false-premise", "premise": "false",
            "question": sentence_premise_text(line["title"], line["question"], line["then"],
                                              line["value_then"])}


def changed_funnel(out: Path) -> dict[str, Any]:
    """Pages read and dropped by reason; fields compared, unchanged and changed; changed fields
    dropped by reason (those left over past --questions-per-article as `beyond_per_article`);
    questions by tag; the false-premise questions by tag; the sentences' counts."""
    rows = read_records(out / CHANGES)
    questions = [row for row in read_records(out / QUESTIONS) if row.get("style") == "changed"] \
        if (out / QUESTIONS).exists() else []
    fields = [row for row in questions if row.get("field") != SENTENCE_FIELD]
    plain = [row for row in fields if row.get("premise") != "false"]
    changed = [field for row in rows for field in row["changed"]]
    dropped = Counter(field["dropped"] for field in changed if field["dropped"])
    kept = sum(field["dropped"] is None for field in changed)
    if plain and kept > len(plain):
        dropped["beyond_per_article"] = kept - len(plain)
    funnel = {"pages": len(rows),
              "pages_dropped": dict(Counter(row["dropped"] for row in rows if row["dropped"])),
              "revisions": sum(row["revisions"] for row in rows),
              "unparsed_revisions": sum(row["unparsed_revisions"] for row in rows),
              "fields": sum(row["fields"] for row in rows),
              "unchanged": sum(row["unchanged"] for row in rows), "changed": len(changed),
              "dropped": dict(dropped),
              "questions": dict(Counter(row["change"] for row in plain))}
    if premised := [row for row in fields if row.get("premise") == "false"]:
        funnel["false_premise"] = dict(Counter(row["change"] for row in premised))
    if any("sentences" in row for row in rows):
        twins = sum(row.get("field") == SENTENCE_FIELD and row.get("premise") == "false"
                    for row in questions)
        funnel["sentences"] = sentence_funnel(rows, read_records(out / SENTENCES),
                                              (out / QUESTIONS).exists(), twins)
    return funnel


def sentence_funnel(rows: list[dict[str, Any]], lines: list[dict[str, Any]], asked: bool,
                    twins: int = 0) -> dict[str, Any]:
    """Sentences compared and unchanged, pairs reworded; once the questions stage has `asked`,
    the pairs sent to the model (the rest past --questions-per-article), kept as questions (and
    the false-premise `twins` of those, where there are any), and dropped by reason."""
    found = [row["sentences"] for row in rows if row.get("sentences")]
    reworded = sum(len(part["pairs"]) for part in found)
    counts = {"compared": sum(part["compared"] for part in found),
              "unchanged": sum(part["unchanged"] for part in found), "reworded": reworded}
    if not asked:
        return counts
    return {**counts, "sent": len(lines), "beyond_per_article": reworded - len(lines),
            "kept": sum(line["outcome"] == "kept" for line in lines),
            **({"false_premise": twins} if twins else {}),
            "dropped": dict(Counter(line["outcome"] for line in lines
                                    if line["outcome"] != "kept"))}
