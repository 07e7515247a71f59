"""A samples.jsonl row as the runner writes it, and rows changed from it at one field: what the
light read's tests and the answer summary's tests both read (tests/core/)."""

import json

from freshrag.core.samples import sample_row
from freshrag.core.summary import summary_of
from freshrag.core.types import (
    Grade,
    LLMResponse,
    Question,
    RetrievedChunk,
    Step,
    SystemAnswer,
    Usage,
)

QUESTION = Question("q1", "Which bridge has nine spans?", "Velmora")
CHUNK = RetrievedChunk("Velmora", 2, "Title: Velmora\nNine spans.", 0.8123456789)


def good(question_id: str = "q1") -> dict:
    """A row as the runner writes it: a search step, the answer, the judge's call."""
    calls = [LLMResponse("answer", "m", None, "search", '{"query": "v"}', Usage(30, 4), 0.5,
                         False, [{"role": "user", "content": "Which bridge?"}]),
             LLMResponse("answer", "m", "Nine.", None, None, Usage(40, 3), 0.25, False, [])]
    answer = SystemAnswer("Nine.", calls=calls, retrievals=1, steps=[
        Step("search", calls[:1], query="velmora bridge", retrieved=(CHUNK,)),
        Step("answer", calls[1:], text="Nine.")],
        details={"decision": None, "retrieved": [
            {"title": CHUNK.title, "index": CHUNK.index, "score": 0.81, "text": CHUNK.text}]})
    judge = LLMResponse("judge", "j", None, "grade", "{}", Usage(90, 9), 0.1, False, [])
    row = sample_row("A", Question(question_id, QUESTION.text, QUESTION.gold_title), "react",
                     answer, Grade(5, 4), [*calls, judge], 1.0)
    return json.loads(json.dumps(row))


def changed(path: str, value) -> dict:
    """good() with the value at `path` (keys and indexes, dotted) set to `value`."""
    row = good("bad")
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    target = row
    for part in parents:
        target = target[part]
    target[last] = value
    return row


def dropped(path: str) -> dict:
    row = changed(path, None)
    *parents, last = path.split(".")
    target = row
    for part in parents:
        target = target[int(part) if part.isdigit() else part]
    del target[last]
    return row


def analysis_row(question, system, truth=5, rel=5, retrieved=None, decision=None, tokens=(100, 10),
        gold="Gold", dataset="A_f"):
    """A samples.jsonl row; `retrieved` is the ranked chunk titles, None if it did not retrieve."""
    details = {"decision": decision}
    if retrieved is not None:
        details["retrieved"] = [{"title": t, "index": i, "score": 0.5} for i, t in enumerate(retrieved)]
    grade = {"truthfulness": truth, "relevance": None if truth is None else rel,
             "unscored_reason": "bad" if truth is None else None, "raw": []}
    return {"dataset": dataset, "question_id": question, "question": "?", "gold_title": gold,
            "system": system, "status": "ok", "answer": "a",
            "retrievals": 0 if retrieved is None else 1,
            "usage": {"answer": {"input": tokens[0], "output": tokens[1], "estimated": False},
                      "judge": {"input": 999, "output": 99, "estimated": False}},
            "grade": grade, "calls": [], "details": details}


def summary(row: dict, path=None, line: int = 0):
    """The answer summary (core/summary.py summary_of) of a row as a test describes it, what
    every table reads of it; a required field the test leaves out as a row that says nothing
    of it holds it (no usage, no grade, no retrieval)."""
    return summary_of({"question_id": "q", "system": "s", "gold_title": None, "status": "ok",
                       "retrievals": 0, "usage": {}, "grade": None, **row}, path, line)


def summaries(rows) -> list:
    """The summaries of rows as a test describes them (`summary`), in order."""
    return [summary(row) for row in rows]
