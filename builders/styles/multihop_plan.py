"""Which two-article questions a multi-hop build asks (docs/building.md#multi-hop-questions): the
pairs of post-cutoff articles, planned from files alone, so that the build, its resume and its dry
run plan the same candidates in the same order.

- Bridge: article A links to article B (the link table, `links.jsonl`), both among the stage's
  articles; A's first sentence that names B (its title, its title without a parenthesis, or the
  link's text) is how the question reaches B; the fact asked for is one of B's infobox facts (a
  seeded pick; its value is the reference), else B's opening sentence (the builder model then
  gives the reference). Up to `--questions-per-article` bridges per A, in A's link order.
- Comparison: two articles of one infobox type with the same comparable field, a date or a
  number, of different values: a self-join of the fact table, as the grounded `join` templates
  join it (builders/styles/templates.py). The question is a template ("Which opened first: A or
  B?") and the reference the title that the values make the answer (the earlier date, the larger
  number). Up to `--questions-per-article` per A, its partners after it in the stage's order, in
  a seeded order.
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from freshrag.builders.records import read_records
from freshrag.builders.styles.facts import FACTS, closing_db
from freshrag.core.reference import normalise, numbers_in
from freshrag.core.titles import title_form

LINKS = "links.jsonl"
KINDS = ("bridge", "comparison")
# Comparable fields: how a question asks which of two comes first, or is larger.
DATE_FIELDS = {"opened": "opened first", "open": "opened first",
               "completed": "was completed first", "established_date": "was established first",
               "released": "was released first", "birth_date": "was born first",
               "death_date": "died first", "commissioned": "was commissioned first",
               "first_recorded": "was first recorded earlier", "date": "took place first"}
NUMBER_FIELDS = {"population_total": "has the larger population", "area_ha": "has the larger area",
                 "height": "is taller", "capacity": "has the larger capacity",
                 "total_length": "is longer", "main_span": "has the longer main span",
                 "linelength": "is longer", "stations": "has more stations",
                 "runtime": "runs longer", "visitors": "drew more visitors",
                 "finishers": "had more finishers", "turbines": "has more turbines"}
NAME_FIELDS = {"name", "native_name", "official_name", "other_name", "other_names", "title",
               "full_name", "birth_name", "alt_name", "nickname"}
ISO = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
BOUNDARY = re.compile(r"[.!?](?=\s)|\n")  # where a sentence ends
PAIRS_SQL = (  # the join of the grounded `join` templates, on the comparable fields
    "SELECT a.article, b.article, a.infobox, a.field, a.value, a.normalised, b.value, "
    "b.normalised FROM facts AS a JOIN facts AS b ON b.infobox = a.infobox AND b.field = a.field "
    "AND b.article != a.article WHERE a.field IN ({fields}) ORDER BY a.article, b.article")


@dataclass(frozen=True)
class Candidate:
    """One two-article question to write and check: its id, kind, articles in hop order, and
    what it is written from (A's sentence and B's fact, or the comparison's template)."""

    id: str
    kind: str
    gold_titles: tuple[str, str]
    fact: str  # B's fact ("opened: 2025-03-14", or B's opening sentence), or the field compared
    reference: str | None  # None: the builder model's answer is the reference (a bridge)
    sentence: str | None = None  # a bridge: A's sentence that names B
    question: str | None = None  # a comparison: its question, by template

    def record(self) -> dict[str, Any]:
        return {**asdict(self), "gold_titles": list(self.gold_titles)}


@dataclass
class Plan:
    """Every candidate in order, and what the stage's articles lacked, per kind."""

    candidates: list[Candidate]
    lacking: dict[str, dict[str, int]]


def read_links(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Each article's links, titles in NFC as the stage lists hold them (a links file written
    before titles were normalised may hold other forms)."""
    return {title_form(row["title"]): [{**link, "title": title_form(link["title"])}
                                       for link in row["links"]]
            for row in read_records(out / LINKS)}


def plan(out: Path, stage: str, titles: list[str], articles: dict[str, dict[str, Any]],
         kinds: tuple[str, ...], per_article: int, seed: int) -> Plan:
    """The candidates of `titles` (the stage's articles, post-cutoff), bridges then comparisons
    per first article, in the stage's order."""
    facts = _facts(out, set(titles))
    bridges, lacking_b = _bridges(read_links(out), titles, articles, facts, per_article, seed) \
        if "bridge" in kinds else ({}, {})
    comparisons, lacking_c = _comparisons(out, titles, per_article, seed) \
        if "comparison" in kinds else ({}, {})
    candidates = []
    for position, title in enumerate(titles):
        for kind, found in (("bridge", bridges), ("comparison", comparisons)):
            for i, (gold, fact, reference, text) in enumerate(found.get(title, [])):
                sentence, question = (text, None) if kind == "bridge" else (None, text)
                candidates.append(Candidate(f"{stage}-{position:05d}-{kind}-{i}", kind,
                                            (title, gold), fact, reference, sentence, question))
    lacking = {kind: counts for kind, counts in (("bridge", lacking_b),
                                                 ("comparison", lacking_c)) if kind in kinds}
    return Plan(candidates, lacking)


Found = dict[str, list[tuple[str, str, str | None, str]]]  # A: [(B, fact, reference, text)]


def _bridges(links: dict[str, list[dict[str, Any]]], titles: list[str],
             articles: dict[str, dict[str, Any]], facts: dict[str, list[tuple[str, str]]],
             per_article: int, seed: int) -> tuple[Found, dict[str, int]]:
    stage, found, lacking = set(titles), {}, {"no_link": 0, "no_mention": 0, "no_fact": 0}
    for title in titles:
        targets = [link for link in links.get(title, []) if link["title"] in stage]
        if not targets:
            lacking["no_link"] += 1
            continue
        chosen, why = [], "no_mention"
        for link in targets:
            sentence = mention(articles[title]["content"], link["title"], link.get("text"))
            fact = _fact_of(link["title"], articles[link["title"]]["content"],
                            facts.get(link["title"], []), f"{seed}:{title}:{link['title']}")
            if sentence and not fact:
                why = "no_fact"
            if sentence and fact:
                chosen.append((link["title"], *fact, sentence))
            if len(chosen) == per_article:
                break
        if chosen:
            found[title] = chosen
        else:
            lacking[why] += 1
    return found, lacking


def mention(content: str, title: str, text: str | None) -> str | None:
    """The first sentence of `content` naming `title` (or it without its parenthesis, or the
    link's text), case ignored, outside headings; None if none does. The sentence is found
    around the name, so a name holding a full stop ("Aston Villa F.C. season") stays whole."""
    names = {title, re.sub(r"\s*\(.*\)$", "", title), text or title}
    pattern = re.compile("|".join(re.escape(name) for name in sorted(
        (name for name in names if len(name) >= 3), key=len, reverse=True)), re.I)
    for match in pattern.finditer(content):
        start = max((b.end() for b in BOUNDARY.finditer(content, 0, match.start())), default=0)
        end = next((b.end() for b in BOUNDARY.finditer(content, match.end())), len(content))
        sentence = " ".join(content[start:end].split())
        if sentence and not sentence.startswith("="):
            return sentence
    return None


def _fact_of(title: str, content: str, facts: list[tuple[str, str]],
             seed: str) -> tuple[str, str | None] | None:
    """(fact, reference) of a bridge's B: a seeded pick of its infobox facts, else its opening
    sentence (no reference: the builder model answers). A fact that is B's name is none: A
    names B, so the question would need A alone."""
    facts = [(field, value) for field, value in facts
             if field not in NAME_FIELDS and normalise(title) not in normalise(value)]
    if facts:
        field, value = random.Random(seed).choice(facts)
        return f"{field.replace('_', ' ')}: {value}", value
    opening = next((s for s in SENTENCE.split(content) if s.strip() and not s.startswith("=")),
                   None)
    return (" ".join(opening.split()), None) if opening else None


def _facts(out: Path, titles: set[str]) -> dict[str, list[tuple[str, str]]]:
    found: dict[str, list[tuple[str, str]]] = {}
    if not (out / FACTS).exists():
        return found
    with closing_db(out / FACTS) as db:
        for article, field, value in db.execute(
                "SELECT article, field, value FROM facts ORDER BY article, field, value"):
            if article in titles:
                found.setdefault(article, []).append((field, value))
    return found


def _comparisons(out: Path, titles: list[str], per_article: int,
                 seed: int) -> tuple[Found, dict[str, int]]:
    order = {title: position for position, title in enumerate(titles)}
    fields = ", ".join(f"'{name}'" for name in (*DATE_FIELDS, *NUMBER_FIELDS))
    partners: dict[str, list[tuple[str, str, str]]] = {}
    comparable: set[str] = set()
    with closing_db(out / FACTS) as db:
        rows = db.execute(PAIRS_SQL.format(fields=fields)).fetchall()
        boxed = {row[0] for row in db.execute(
            f"SELECT DISTINCT article FROM facts WHERE field IN ({fields})")}
    for first, second, _, field, *values in rows:
        if first not in order or second not in order:
            continue
        winner = _winner(field, first, second, *values)
        if winner is not None:
            comparable.update((first, second))
            if order[first] < order[second]:
                partners.setdefault(first, []).append((second, field, winner))
    found: Found = {}
    for title, pairs in partners.items():
        random.Random(f"{seed}:{title}:comparison").shuffle(pairs)
        found[title] = [(second, field, winner, f"Which {_phrase(field)}: {title} or {second}?")
                        for second, field, winner in pairs[:per_article]]
    in_stage = set(order)
    return found, {"no_fact": len(in_stage - boxed), "alone": len((boxed & in_stage) - comparable)}


def _phrase(field: str) -> str:
    return DATE_FIELDS.get(field) or NUMBER_FIELDS[field]


def _winner(field: str, first: str, second: str, value_a: str, norm_a: str, value_b: str,
            norm_b: str) -> str | None:
    """The title the comparison answers with, None when the values cannot be compared."""
    if field in DATE_FIELDS:
        a, b = _date(value_a, norm_a), _date(value_b, norm_b)
        if a is None or b is None or len(a) != len(b) or a == b:
            return None
        return first if a < b else second
    x, y = numbers_in(value_a), numbers_in(value_b)
    if len(x) != 1 or len(y) != 1 or x[0] == y[0]:
        return None
    return first if x[0] > y[0] else second


def _date(value: str, normalised: str) -> str | None:
    """An ISO date, month or year of the fact (the form date templates and dates normalise to)."""
    return next((text for text in (normalised, value.strip()) if ISO.match(text)), None)
