"""Which of a dataset's questions an imported row answers (docs/own-system.md#answers-made-elsewhere).

Rows made by another tool (an answers file, a released run) must land on the dataset's own
question ids, or a report counts each question twice and pairs nothing. One rule for every
import: a row's id when it is one of the dataset's; else its question text, compared with the
whitespace collapsed, the case folded and in Unicode's NFC, as titles are (tools re-wrap and
re-case questions, and may write an accent as a combining mark); else the row
matches nothing, and the import refuses it. A text that two questions of the dataset share
names no question by itself: such a row needs its id.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from freshrag.core.errors import UserError
from freshrag.core.titles import title_form
from freshrag.core.types import Question
from freshrag.core.wording import counted

BY_ID, BY_TEXT = "id", "question text"  # the rule that matched, as an import's summary says it


class NoMatch(UserError, ValueError):
    """A row that names none of the dataset's questions; the message says why, and each import
    adds where (file and line, or row)."""


def normalised(text: str) -> str:
    """The text as questions are compared: runs of whitespace as one space, in NFC
    (core/titles.py), case folded."""
    return " ".join(title_form(text).split()).casefold()


class QuestionMatcher:
    """The dataset's questions by id and by normalised text."""

    def __init__(self, questions: list[Question]):
        self.questions = questions
        self.ids = {question.id: question for question in questions}
        keyed = [(normalised(question.text), question) for question in questions]
        counts = Counter(text for text, _ in keyed)
        self.texts = {text: question for text, question in keyed if counts[text] == 1}
        self.shared = {text for text, n in counts.items() if n > 1}

    def match(self, qid: Any, text: Any) -> tuple[Question, str]:
        """The question a row with this id and text (either may be None) answers, and the rule
        that matched (BY_ID or BY_TEXT); NoMatch when it answers none."""
        if qid is not None and str(qid) in self.ids:
            return self.ids[str(qid)], BY_ID
        found = self.texts.get(normalised(text)) if isinstance(text, str) else None
        if found is None:
            raise NoMatch(self._why(qid, text))
        return found, BY_TEXT

    def _why(self, qid: Any, text: Any) -> str:
        reasons = [] if qid is None else [f"its id {str(qid)[:80]!r} is not one of the dataset's"]
        if not isinstance(text, str) or not text.strip():
            reasons.append("it gives no question text")
        elif normalised(text) in self.shared:
            reasons.append(f"its question {text[:80]!r} is asked by several of the dataset's "
                           f"questions (give its id)")
        else:
            reasons.append(f"its question {text[:80]!r} is not one of the dataset's")
        return "matches no question of the dataset: " + " and ".join(reasons)

    def unanswered(self, answered: set[str]) -> list[str]:
        """The ids of the dataset's questions no row answered, in the dataset's order."""
        return [question.id for question in self.questions if question.id not in answered]


def summary(source: str, rules: Counter, unanswered: list[str], shown: int = 10,
            unit: str = "row") -> str:
    """One line: how many rows (or other `unit`s) matched by each rule, and the questions left
    without one."""
    rows = sum(rules.values())
    how = ", ".join(f"{rules[rule]} by {rule}" for rule in (BY_ID, BY_TEXT) if rules[rule])
    line = f"{source}: {counted(rows, unit)} matched to the dataset's questions ({how})"
    if unanswered:
        listed = ", ".join(unanswered[:shown]) + (" ..." if len(unanswered) > shown else "")
        line += (f"; {counted(len(unanswered), 'question')} of the dataset without a {unit}: "
                 f"{listed}")
    return line
