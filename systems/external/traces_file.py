"""Traces made elsewhere, as a system (docs/own-system.md#traces-made-elsewhere): an agent's
OpenTelemetry traces (OTLP/JSON with the GenAI semantic conventions' attributes, or
OpenInference's) or Arize Phoenix's span exports, one trace per answer, replayed through the run
as an answers file is (systems/external/answers_file.py). The file is read by
systems/external/spans_read.py, and each trace made an answer by systems/external/spans_map.py.

Each trace's question is its agent span's: the trace's root, else its first `invoke_agent`
(OpenInference: AGENT) span that names one, by `freshrag.question_id`, or by its text (the first
user message of `gen_ai.input.messages`, or `input.value`); it lands on the dataset's question as
an answers file's row does (systems/external/matching.py).

The file is read twice, streamed: once for each trace's question, once for the spans of the
traces that match one, so that memory holds what is replayed and no more. A trace that matches
no question, or several, two traces of one question, a trace whose parent ids form a cycle and a
trace without an answer are counted and named (`Traces.summary`) and left out, never guessed.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freshrag.core.types import Question, SystemAnswer
from freshrag.systems.external.answers_file import Answers, AnswersFileError
from freshrag.systems.external.matching import NoMatch, QuestionMatcher, normalised, summary
from freshrag.systems.external.spans_map import operation, question_of, trace_answer
from freshrag.systems.external.spans_read import Problems, Span, TracesFileError, spans

SUFFIXES = (".json",)  # always traces; a .jsonl file is traces when its first line is a span


@dataclass(frozen=True)
class Traces(Answers):
    """A traces file's answers by question id, and what was left out of it and why."""

    problems: Problems = field(default_factory=Problems)

    def summary(self) -> str:
        said = summary(str(self.path), self.rules, self.unanswered, unit="trace")
        return "; ".join([said, *self.problems.lines()])


@dataclass(frozen=True)
class Head:
    """What the first read keeps of a span that may ask a trace's question."""

    root: bool
    start: int
    qid: Any
    text: str | None


def load_traces(path: Path, questions: list[Question], name: str) -> Traces:
    """The file's traces matched to `questions`, each made an answer; see the module."""
    problems = Problems()
    heads: dict[str, list[Head]] = defaultdict(list)
    for span in spans(path, problems):
        if (head := _head(span)) is not None:
            heads[span.trace].append(head)
        else:
            heads.setdefault(span.trace, [])
    wanted = _matched(heads, QuestionMatcher(questions), problems)
    held: dict[str, list[Span]] = defaultdict(list)
    for span in spans(path, Problems()):  # the same problems again: counted once, above
        if span.trace in wanted:
            held[span.trace].append(span)
    by_question: dict[str, SystemAnswer] = {}
    rules: Counter = Counter()
    for trace, (question, rule) in wanted.items():
        answer = trace_answer(held.pop(trace, []), question, name, problems)
        if answer is not None:
            by_question[question.id] = answer
            rules[rule] += 1
    if not by_question:
        raise AnswersFileError(f"{path}: holds no trace that answers a question of the dataset"
                               f"{''.join('; ' + line for line in problems.lines())}")
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return Traces(path, digest.hexdigest(), by_question, +rules,
                  [q.id for q in questions if q.id not in by_question], problems)


def _matched(heads: dict[str, list[Head]], matcher: QuestionMatcher,
             problems: Problems) -> dict[str, tuple[Question, str]]:
    """Each trace's question and the rule that matched it; a question two traces answer is
    left to neither."""
    found: dict[str, list[str]] = defaultdict(list)
    asked: dict[str, tuple[Question, str]] = {}
    for trace, listed in heads.items():
        head = _question_head(listed)
        if head is None:
            problems.add("trace(s) that ask no question", f"trace {trace}")
            continue
        try:
            question, rule = matcher.match(head.qid, head.text)
        except NoMatch:
            several = isinstance(head.text, str) and normalised(head.text) in matcher.shared
            problems.add(f"trace(s) matching {'several questions' if several else 'no question'}",
                         f"trace {trace} ({str(head.text or head.qid)[:60]!r})")
            continue
        found[question.id].append(trace)
        asked[trace] = (question, rule)
    wanted = {}
    for question_id, traces in found.items():
        if len(traces) > 1:
            problems.add("question(s) answered by several traces",
                         f"{question_id} (traces {', '.join(traces[:3])})")
            continue
        wanted[traces[0]] = asked[traces[0]]
    return wanted


def _head(span: Span) -> Head | None:
    if span.parent is not None and operation(span) != "invoke_agent":
        return None
    qid, text = question_of(span.attributes)
    if qid is None and text is None:
        return None
    return Head(span.parent is None, span.start or 0, qid, text)


def _question_head(heads: list[Head]) -> Head | None:
    """The root's question, else the earliest agent span's."""
    return min(heads, key=lambda head: (not head.root, head.start), default=None)


__all__ = ["SUFFIXES", "Traces", "TracesFileError", "load_traces"]
