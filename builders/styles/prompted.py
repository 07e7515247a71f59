"""The paper's question writer (section III.A; docs/building.md#the-stages, stage 4): one prompt,
one question per call, about each article of the chosen stage. Two styles share it, differing in
the prompt only (builders/prompts.py): `creative`, the paper's, and `recent`, about facts after the
cutoff (a harder set).

`questions_per_article` questions per article, at temperature 1, one line of `questions.jsonl`
each, tied to the article's title and revision. Sample i of an article is its own cache entry
(attempt i), so resuming never repeats a call. An empty reply is asked again at once as a new
attempt (i + k * questions_per_article, which no other sample uses), `QUESTION_TRIES` times in
all; the client does not cache empty replies, so a question still missing is asked again when
the build resumes. A reply that is not a question (`read_question`: a heading such as "Title: …",
or a refusal such as "I don't know.") is dropped as an empty one is, and each dropped attempt is a
line of `dropped_questions.jsonl`, which the manifest's funnel counts by reason.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from freshrag.builders.labels.labeller import Item, label_one
from freshrag.builders.prompts import ARTICLE_CHARS, QUESTION_MAX_TOKENS, question_messages
from freshrag.builders.records import read_records
from freshrag.builders.styles.base import QUESTIONS, Articles, Config, Plain, Walk, read_articles
from freshrag.core.concurrency import map_with_progress
from freshrag.core.jsonl import JsonlWriter
from freshrag.core.types import LLM
from freshrag.llm.errors import ContextTooLong
from freshrag.llm.fitting import chat_fitting

QUESTION_TRIES = 3  # an empty question is asked again, as a new attempt, up to this many times
# The traffic kind and retrieval need, by construction, of questions about each stage's articles
# (docs/methods.md#retrieval-need-and-deciders); other stages' questions carry neither.
STAGE_KINDS = {"A_f": {"kind": "fresh", "need": True}, "control": {"kind": "control", "need": False}}
DROPPED = "dropped_questions.jsonl"  # a line per attempt whose reply was not a question
# A reply's line that labels rather than asks ("Title: Tarnholt Bridge", "Article: ..."), and one
# that declines: neither is a question, whatever follows (a line with a question mark is kept).
HEADING = re.compile(r"^[A-Z][\w ]{0,30}:(\s|$)")
REFUSAL = re.compile(r"^(i (do not|don't|cannot|can't|am unable)|i'm (sorry|unable)|sorry\b|"
                     r"as an ai\b|unknown\b|n/?a\b|none\b)", re.IGNORECASE)


@dataclass(frozen=True)
class Prompted(Plain):
    """A style whose questions the paper's writer asks with its own prompt (QUESTION_PROMPTS)."""

    name: str
    description: str
    files = (DROPPED,)  # not a field: what every style declares (builders/styles/base.py)

    def write_questions(self, llm: LLM, config: Config, titles: list[str]) -> int:
        return write_questions(llm, config, titles, self.name)

    def walk(self, config: Config, titles: list[str], articles: Articles, done: set[str],
             known: bool) -> Walk:
        cutoff = config.cutoff.isoformat()

        def run(llm: LLM, position: int, title: str, label: bool) -> None:
            content_all = articles[title]["content"]  # the labeller cuts it its own way
            for i in range(config.questions_per_article):
                qid = question_id(config.questions_from, position, i)
                if not known or qid not in done:
                    question = clean_question(llm.chat("builder", **question_request(
                        title, content_all[:ARTICLE_CHARS], self.name, cutoff, i)).text or "")
                    if label and question:
                        label_one(llm, Item(qid, title, question), content_all)
        return run


CREATIVE = Prompted("creative", "the paper's")
RECENT = Prompted("recent", "about facts after the cutoff; harder")


def write_questions(llm: LLM, config: Config, titles: list[str], style: str) -> int:
    """`questions_per_article` questions for each article of `titles`; returns how many exist."""
    out = config.out
    articles = read_articles(out)
    done = {row["id"] for row in read_records(out / QUESTIONS)}
    todo = [(position, title, i) for position, title in enumerate(titles)
            for i in range(config.questions_per_article)
            if question_id(config.questions_from, position, i) not in done]
    writer, dropped = JsonlWriter(out / QUESTIONS), JsonlWriter(out / DROPPED)
    cutoff = config.cutoff.isoformat()
    per_article = config.questions_per_article

    def ask(item: tuple[int, str, int]) -> bool:
        position, title, i = item
        article = articles[title]
        content, fitted, question, response = article["content"][:ARTICLE_CHARS], None, "", None
        for attempt in range(i, i + QUESTION_TRIES * per_article, per_article):
            try:  # a try again sends the article as far as the first had to cut it
                fitted = chat_fitting(llm, "builder", content, lambda text: question_request(
                    title, text, style, cutoff, attempt),
                    halved=fitted.halvings if fitted else 0)
            except ContextTooLong:
                break
            content, response = content[:fitted.chars], fitted.response
            question, why = read_question(response.text or "")
            if question:
                break
            dropped.write({"id": question_id(config.questions_from, position, i),
                           "attempt": attempt, "reason": why,
                           "reply": (response.text or "")[:200]})
        if not question or response is None:
            return False  # counted in the manifest as missing; a resume asks again
        writer.write({"id": question_id(config.questions_from, position, i), "title": title,
                      "question": question, "revision_id": article.get("revision_id"),
                      "generator": response.model, "style": style,
                      "stage": config.questions_from, "cutoff": cutoff,
                      "created": article.get("created"), "month": article.get("month"),
                      **STAGE_KINDS.get(config.questions_from, {}),
                      "usage": asdict(response.usage)})
        return True

    try:
        map_with_progress(ask, todo, config.concurrency, desc="questions", unit="question")
    finally:
        writer.close()
        dropped.close()
    return len(read_records(out / QUESTIONS))


def question_request(title: str, text: str, style: str, cutoff: str,
                     attempt: int) -> dict[str, Any]:
    """The question writer's call (also what `build --dry-run` counts)."""
    return dict(messages=question_messages(title, text, style, cutoff), temperature=1.0,
                max_tokens=QUESTION_MAX_TOKENS, attempt=attempt)


def read_question(text: str) -> tuple[str, str | None]:
    """The question of a reply, or "" and why it holds none: `empty`, `heading` (a label line
    such as "Title: ..." with no question mark) or `refusal` ("I don't know.")."""
    question = clean_question(text)
    if not question:
        return "", "empty"
    if "?" not in question and HEADING.match(question):
        return "", "heading"
    if "?" not in question and REFUSAL.match(question):
        return "", "refusal"
    return question, None


def dropped_counts(out: Path) -> dict[str, int] | None:
    """The attempts dropped for holding no question, by reason (each attempt once: a resumed
    build asks a cached attempt again and writes its line again); None without the file."""
    if not (out / DROPPED).exists():
        return None
    reasons = {(row["id"], row["attempt"]): row["reason"] for row in read_records(out / DROPPED)}
    return dict(Counter(reasons.values()))


def clean_question(text: str) -> str:
    """The question the model wrote, without a `Question:` label or surrounding quotes."""
    lines = [line.strip().strip("\"'“”").strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return ""
    line = next((line for line in lines if line.endswith("?")), lines[0])
    if line.lower().startswith("question:"):
        line = line[len("question:"):].strip().strip("\"'“”").strip()
    return line


def question_id(stage: str, position: int, i: int) -> str:
    """Sample i of the article at `position` of `stage`'s title list."""
    return f"{stage}-{position:05d}-{i}"
