"""Label-targeted questions by statement extraction
(docs/methods.md#statement-extraction-and-critiques), the first half: which labels to ask for
(`--labels`) and the statements each article yields.

Per article, four forced `builder` calls at temperature 0: (1) the theme, one sentence on what
the article is about; (2) factual statements from the article, with the theme for context; from
the facts and theme alone, (2a) summary statements that merge several facts and (2b) conclusion
statements that follow from them by a simple inference. A step whose reply cannot be parsed (after
one more attempt) leaves its list empty with the reason and raw replies; without facts, (2a) and
(2b) are not asked. One line of `statements.jsonl` per article, written when its four steps are
done, so a resumed build asks again only for articles not finished.

`--labels fact_single=N,summary=N,reasoning=N[,unanswerable=N]` asks for N questions of each
label over the whole set; written as shares (`fact_single=0.5,...`, summing to 1) they split the
set's `--questions-per-article` x articles questions (largest remainder). The questions of each
label are spread over the articles in a seeded order (`plan`).
"""

from __future__ import annotations

import argparse
import math
import random
import re
from dataclasses import dataclass
from typing import Any

from freshrag.builders.forced import Outcome, forced_call, text_field, text_list
from freshrag.builders.labels.prompts import (
    CONCLUSIONS,
    CONCLUSIONS_PROMPT,
    DERIVED_TOOL,
    FACTS_PROMPT,
    FACTS_TOOL,
    MAX_FACTS,
    SUMMARIES,
    SUMMARIES_PROMPT,
    THEME_PROMPT,
    THEME_TOOL,
    facts_user,
    messages,
)
from freshrag.builders.prompts import article_text
from freshrag.core.types import ARTICLE_CHARS, LABELS, LLM

STATEMENTS_FILE = "statements.jsonl"
# the statement list a question of each label is written from (none: unanswerable)
KINDS = {"fact_single": "facts", "summary": "summaries", "reasoning": "conclusions",
         "unanswerable": None}
MAX_TOKENS = {"theme": 80, "facts": 448, "summaries": 256, "conclusions": 256}
MAX_QUESTIONS = 1_000_000


@dataclass(frozen=True)
class LabelSpec:
    """What `--labels` asks for: counts over the whole set, or shares of it."""

    values: tuple[tuple[str, float], ...]
    shares: bool

    def text(self) -> str:
        """The canonical spelling, which a dataset's settings record."""
        return ",".join(f"{label}={value:g}" for label, value in self.values)

    def totals(self, questions: int) -> dict[str, int]:
        """Questions per label for a set of `questions` (used by shares only)."""
        if not self.shares:
            return {label: int(value) for label, value in self.values}
        exact = {label: share * questions for label, share in self.values}
        totals = {label: math.floor(value) for label, value in exact.items()}
        by_remainder = sorted(exact, key=lambda label: (totals[label] - exact[label],
                                                        LABELS.index(label)))
        for label in by_remainder[:questions - sum(totals.values())]:
            totals[label] += 1
        return totals


def parse_label_spec(text: str) -> LabelSpec:
    """`--labels`: whole counts (`fact_single=5,summary=5`) or shares (`fact_single=0.5,...`)."""
    pairs = [re.fullmatch(r"\s*([a-z_]+)\s*=\s*([0-9]+(\.[0-9]*)?)\s*", part)
             for part in text.split(",")]
    names = [match.group(1) for match in pairs if match]
    problem = None
    if not all(pairs) or not all(name in LABELS for name in names):
        problem = f"expected label=number pairs with labels from {', '.join(LABELS)}"
    elif len(set(names)) != len(names):
        problem = "each label at most once"
    else:
        shares = any(match.group(3) is not None for match in pairs if match)
        values = tuple((match.group(1), float(match.group(2))) for match in pairs if match)
        total = sum(value for _, value in values)
        if shares and abs(total - 1) > 1e-6:
            problem = f"shares (numbers with a decimal point) must add up to 1, not {total:g}"
        elif not shares and not 1 <= total <= MAX_QUESTIONS:
            problem = f"counts must add up to 1 to {MAX_QUESTIONS:,} questions"
        else:
            return LabelSpec(values, shares)
    raise argparse.ArgumentTypeError(f"{problem}, got {text!r:.200}")


@dataclass(frozen=True)
class Slot:
    """One question to write: its id, article, sample index on that article, wanted label, and
    how many questions of that label the article had before it (which statement it takes)."""

    id: str
    position: int
    title: str
    index: int
    label: str
    nth: int


def plan(titles: list[str], spec: LabelSpec, per_article: int, seed: int,
         stage: str) -> list[Slot]:
    """Every question of the set: the labels in a seeded order, dealt to the articles in turn."""
    if not titles:
        return []
    totals = spec.totals(per_article * len(titles))
    sequence = [label for label in LABELS for _ in range(totals.get(label, 0))]
    random.Random(seed).shuffle(sequence)
    slots: list[Slot] = []
    seen: dict[tuple[int, str], int] = {}
    for k, label in enumerate(sequence):
        position, index = k % len(titles), k // len(titles)
        nth = seen[position, label] = seen.get((position, label), -1) + 1
        slots.append(Slot(f"{stage}-{position:05d}-{index}", position, titles[position], index,
                          label, nth))
    return slots


def extract(llm: LLM, title: str, content: str) -> dict[str, Any]:
    """The theme and the three statement lists of one article, each step's record kept."""
    content = content[:ARTICLE_CHARS]
    theme = forced_call(llm, "builder", THEME_TOOL,
                        lambda text: messages(THEME_PROMPT, article_text(title, text)),
                        lambda values: text_field(values, "theme", 1_000), text=content,
                        max_tokens=MAX_TOKENS["theme"])
    facts = forced_call(llm, "builder", FACTS_TOOL, lambda text: messages(
        FACTS_PROMPT.format(theme=theme.value or "(not known)", max_facts=MAX_FACTS),
        article_text(title, text)), lambda values: text_list(values, "statements")[:MAX_FACTS],
        text=content, max_tokens=MAX_TOKENS["facts"])
    steps = {"theme": theme, "facts": facts}
    for kind, prompt, n in (("summaries", SUMMARIES_PROMPT, SUMMARIES),
                            ("conclusions", CONCLUSIONS_PROMPT, CONCLUSIONS)):
        if facts.ok:
            steps[kind] = _derived(llm, kind, prompt.format(n=n), n,
                                   facts_user(theme.value, facts.value))
    calls = [call for outcome in steps.values() for call in outcome.calls]
    record = {"title": title, "theme": theme.value,
              "model": calls[-1].model if calls else None,
              "steps": {kind: outcome.record() for kind, outcome in steps.items()}}
    for kind in ("facts", "summaries", "conclusions"):
        outcome = steps.get(kind)
        record[kind] = outcome.value if outcome and outcome.ok else []
        if outcome is None:
            record["steps"][kind] = {"reason": "not asked: no facts to build on", "raw": [],
                                     "usage": None}
    return record


def _derived(llm: LLM, kind: str, prompt: str, n: int, user: str) -> Outcome:
    """Summaries or conclusions, at most `n`, derived from the facts."""
    return forced_call(llm, "builder", DERIVED_TOOL, lambda _: messages(prompt, user),
                       lambda values: text_list(values, "statements")[:n],
                       max_tokens=MAX_TOKENS[kind])


def pick_statement(record: dict[str, Any], slot: Slot, seed: int) -> tuple[str | None, str | None]:
    """The statement a slot's question is written from, or (None, why there is none). Questions
    of one label on one article take the statements in turn from a seeded start."""
    kind = KINDS[slot.label]
    if kind is None:
        return None, "an unanswerable question is written from no statement"
    pool = record.get(kind) or []
    if not pool:
        step = record["steps"].get(kind) or {}
        return None, f"no {kind} statements ({step.get('reason') or 'the list was empty'})"
    start = random.Random(f"{seed}:{slot.title}:{kind}").randrange(len(pool))
    return pool[(start + slot.nth) % len(pool)], None
