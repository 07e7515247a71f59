"""Questions generated for named information needs (docs/methods.md#information-needs).

Instead of one question per article at random, the question set follows what users want to know:
for each chunk of the chosen stage's articles (cut by the retrieval index's own splitter,
harness/retrieval/index.py, so a question's evidence is one retrievable chunk) and each need of a needs file
(one description a line), one forced `submit_question` call of the `builder` role returns a
question about that need that the chunk answers, with the chunk's answer, or BLANK when the
chunk holds nothing for the need. A reply that does not parse is asked once more (a new attempt),
then recorded as failed with the reason and every raw reply.

Every (need, chunk) call is a line of `needs.jsonl` (append-only, so a killed build resumes with
the pairs it lacks; failed pairs are asked again, and the response cache answers any call made
before). `questions.jsonl` is rewritten from it when the stage ends: each kept question carries
`information_need` (the need's text), its gold article and chunk, and the answer as `reference`.
`--per-need N` asks at most N chunks per need, a seeded sample, so that cost stays bounded.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from freshrag.builders.records import read_records
from freshrag.core.concurrency import map_with_progress
from freshrag.core.errors import UserError
from freshrag.core.jsonl import JsonlWriter, replace_jsonl
from freshrag.core.textfile import lines
from freshrag.core.types import LLM, Article, LLMResponse, Usage
from freshrag.llm.client import EndpointError, EndpointUnreachable, LLMClient
from freshrag.llm.toolcall import ReplyError, line_of_text, room_for, tool_arguments
from freshrag.retrieval.chunking import Chunk, chunk_articles
from freshrag.retrieval.config import IndexConfig

NEEDS_FILE = "needs.jsonl"   # one line per (need, chunk) call, whatever came of it
QUESTION, BLANK, FAILED = "question", "blank", "failed"
NEED_TRIES = 2               # an unparseable reply is asked once more, as a new attempt
QUESTION_CHARS, ANSWER_CHARS = 200, 300
NEED_MAX_TOKENS = room_for(QUESTION_CHARS, ANSWER_CHARS)  # a question and its answer
MAX_NEED_CHARS = 500         # a need is one sentence; a longer line is a pasted paragraph
MAX_NEEDS = 1000

NEED_PROMPT = (
    "You write test questions for a search system. A user of the system has this information "
    "need: {need}\n\nBelow is a passage of a Wikipedia article. If the passage answers a question "
    "that this user could ask, call submit_question with that question and its answer as the "
    "passage gives it. The question must make sense on its own, without the passage: name the "
    "people, places or events it is about. If the passage holds nothing for this need, call "
    "submit_question with the question BLANK and an empty answer."
)
NEED_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "submit_question",
        "description": "Submit one question about the information need that the passage answers, "
                       "or BLANK when it answers none.",
        "parameters": {
            "type": "object",
            "properties": {
                "question": line_of_text(QUESTION_CHARS) | {
                    "description": "the question, or BLANK if the passage has none"},
                "answer": line_of_text(ANSWER_CHARS, min_chars=0) | {
                    "description": "the answer as the passage gives it; empty for BLANK"},
            },
            "required": ["question", "answer"],
        },
    },
}
NEED_FUNCTION = NEED_TOOL["function"]["name"]
PROMPTS = {"need_question": NEED_PROMPT, "need_question_tool": json.dumps(NEED_TOOL)}


class NeedsError(UserError, ValueError):
    """A needs file (or query log) that cannot be used; the message names the file and line."""


@dataclass(frozen=True)
class NeedsPlan:
    """What the stage asks: the needs, the chunker (the index's defaults) and the cap."""

    needs: tuple[str, ...]
    per_need: int | None = None  # chunks asked per need (a seeded sample); None asks them all
    seed: int = 0
    chunk_size: int = IndexConfig.chunk_size
    chunk_overlap: int = IndexConfig.chunk_overlap


def read_needs(path: Path) -> tuple[str, ...]:
    """The needs of a UTF-8 file, one description a line. A blank line, a duplicate or an overlong
    line is refused naming the file and line: each line becomes a label in every report."""
    needs: dict[str, int] = {}  # casefolded need: its line
    texts: list[str] = []
    for line_no, text in lines(path, NeedsError):
        need = text.strip()
        if not need:
            raise NeedsError(f"{path}:{line_no}: blank line; a needs file holds one need "
                             f"description a line and nothing else")
        if len(need) > MAX_NEED_CHARS:
            raise NeedsError(f"{path}:{line_no}: need of {len(need):,} characters; describe it in "
                             f"one sentence of at most {MAX_NEED_CHARS}")
        if need.casefold() in needs:
            raise NeedsError(f"{path}:{line_no}: the same need as line {needs[need.casefold()]}")
        needs[need.casefold()] = line_no
        texts.append(need)
        if len(needs) > MAX_NEEDS:
            raise NeedsError(f"{path}:{line_no}: more than {MAX_NEEDS:,} needs")
    if not needs:
        raise NeedsError(f"{path}: no needs (one description a line)")
    return tuple(texts)


def needs_digest(needs: tuple[str, ...]) -> str:
    """How a dataset's settings name its needs: a resume with another file is refused."""
    digest = hashlib.sha256(json.dumps(list(needs)).encode()).hexdigest()
    return f"{len(needs)} needs, sha256 {digest[:16]}"


def need_messages(need: str, chunk_text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": NEED_PROMPT.format(need=need)},
            {"role": "user", "content": chunk_text}]


def parse_need_reply(response: LLMResponse) -> tuple[str, str | None, str | None, str | None]:
    """(outcome, question, answer, why it failed) from a `submit_question` call: outcome
    `question`, `blank` (the question is BLANK, any case, with trailing punctuation) or `failed`."""
    try:
        arguments = tool_arguments(response, NEED_FUNCTION)
    except ReplyError as err:
        return FAILED, None, None, str(err)
    question, answer = arguments.get("question"), arguments.get("answer")
    if not isinstance(question, str):
        return FAILED, None, None, f"question is {question!r}, not a string"
    question = " ".join(question.split())
    if question.rstrip(".!").upper() == "BLANK":
        return BLANK, None, None, None
    if not question:
        return FAILED, None, None, "empty question (BLANK is how a passage without one is told)"
    if not isinstance(answer, str):
        return FAILED, None, None, f"answer is {answer!r}, not a string"
    return QUESTION, question, " ".join(answer.split()) or None, None


def generate_need_questions(llm: LLMClient, out: Path, stage: str, titles: list[str],
                            plan: NeedsPlan, concurrency: int = 4) -> int:
    """Ask every (need, chunk) pair not answered yet, then rewrite `questions.jsonl` from the
    records; returns how many questions it holds."""
    articles = {row["title"]: row for row in read_records(out / "articles.jsonl")}
    position = {title: i for i, title in enumerate(titles)}
    todo = need_todo(out, titles, plan, articles)
    writer = JsonlWriter(out / NEEDS_FILE)

    def ask(item: tuple[int, Chunk]) -> None:
        i, chunk = item
        row = {"need_index": i, "need": plan.needs[i], "title": chunk.title,
               "position": position[chunk.title], "chunk": chunk.index,
               **ask_need(llm, plan.needs[i], chunk.text)}
        writer.write(row)

    try:
        map_with_progress(ask, todo, concurrency, desc="need questions", unit="call")
    finally:
        writer.close()
    return write_need_questions(out, stage, articles)


def need_todo(out: Path, titles: list[str], plan: NeedsPlan,
              articles: dict[str, dict[str, Any]]) -> list[tuple[int, Chunk]]:
    """The (need index, chunk) pairs not answered yet in `needs.jsonl` (a failed pair is asked
    again); the build's dry run (harness/cost/build_estimate.py) counts the same list."""
    chunks = chunk_articles([Article(title, articles[title]["content"]) for title in titles],
                            plan.chunk_size, plan.chunk_overlap)
    done = {_key(row) for row in read_records(out / NEEDS_FILE) if row["outcome"] != FAILED}
    return [(i, chunk) for i, need in enumerate(plan.needs)
            for chunk in _sample(chunks, need, plan)
            if (i, chunk.title, chunk.index) not in done]


def _sample(chunks: list[Chunk], need: str, plan: NeedsPlan) -> list[Chunk]:
    """The chunks asked about `need`: all, or a sample of `per_need` seeded by the build's seed and
    the need, so that a resume (and every rerun) asks the same ones."""
    if plan.per_need is None or plan.per_need >= len(chunks):
        return chunks
    picked = random.Random(f"{plan.seed}:{need}").sample(range(len(chunks)), plan.per_need)
    return [chunks[k] for k in sorted(picked)]


def ask_need(llm: LLM, need: str, text: str) -> dict[str, Any]:
    """One (need, chunk) pair: the outcome, with every raw reply and the tokens spent. An error
    that no retry mends (a refused request) fails the pair; an unreachable endpoint stops all."""
    raws: list[str | None] = []
    usage, model = Usage(), None
    for attempt in range(NEED_TRIES):
        try:
            response = llm.chat("builder", need_messages(need, text), tools=[NEED_TOOL],
                                tool_choice=NEED_FUNCTION, temperature=1.0,
                                max_tokens=NEED_MAX_TOKENS, attempt=attempt)
        except EndpointUnreachable:
            raise
        except EndpointError as err:
            return {"outcome": FAILED, "question": None, "reference": None, "reason": str(err),
                    "raw": raws, "model": model, "usage": asdict(usage)}
        model = response.model
        raws.append(response.tool_arguments if response.tool_name else response.text)
        usage += response.usage
        outcome, question, answer, reason = parse_need_reply(response)
        if outcome != FAILED:
            break
    return {"outcome": outcome, "question": question, "reference": answer, "reason": reason,
            "raw": raws, "model": model, "usage": asdict(usage)}


def _key(row: dict[str, Any]) -> tuple[int, str, int]:
    return row["need_index"], row["title"], row["chunk"]


def latest_records(out: Path) -> list[dict[str, Any]]:
    """The last record of every (need, chunk) pair: a failed pair asked again on a resume has
    two lines, and the later one counts."""
    latest = {_key(row): row for row in read_records(out / NEEDS_FILE)}
    return sorted(latest.values(), key=lambda row: (row["need_index"], row["position"],
                                                    row["chunk"]))


def write_need_questions(out: Path, stage: str, articles: dict[str, dict[str, Any]]) -> int:
    """`questions.jsonl` from the records, written whole or not at all."""
    rows = [{"id": f"need{row['need_index']:03d}-{row['position']:05d}-{row['chunk']:03d}",
             "title": row["title"], "question": row["question"],
             "information_need": row["need"], "reference": row["reference"],
             "chunk": row["chunk"], "revision_id": articles[row["title"]].get("revision_id"),
             "created": articles[row["title"]].get("created"),
             "month": articles[row["title"]].get("month"),
             "generator": row["model"], "style": "needs", "stage": stage, "usage": row["usage"]}
            for row in latest_records(out) if row["outcome"] == QUESTION]
    return replace_jsonl(out / "questions.jsonl", rows)


def needs_funnel(out: Path) -> list[dict[str, Any]]:
    """Per need: the chunks asked, the questions kept, the BLANKs and the failures by reason."""
    column = {QUESTION: "questions", BLANK: "blank", FAILED: "failed"}
    per_need: dict[int, dict[str, Any]] = {}
    for row in latest_records(out):
        entry = per_need.setdefault(row["need_index"], {
            "need": row["need"], "asked": 0, "questions": 0, "blank": 0, "failed": 0,
            "failed_by_reason": {}})
        entry["asked"] += 1
        entry[column[row["outcome"]]] += 1
        if row["outcome"] == FAILED:
            kind = _reason_kind(row["reason"])
            entry["failed_by_reason"][kind] = entry["failed_by_reason"].get(kind, 0) + 1
    return [entry for _, entry in sorted(per_need.items())]


# What the funnel counts failures by: the start of each reason parse_need_reply gives.
FAILURE_KINDS = (f"no {NEED_FUNCTION} call", "invalid JSON arguments", "arguments are",
                 "question is", "empty question", "answer is")


def _reason_kind(reason: str | None) -> str:
    """A failure's reason without its particulars, so that the funnel counts alike ones together;
    any other reason is an error the endpoint gave."""
    return next((kind for kind in FAILURE_KINDS if (reason or "").startswith(kind)),
                "endpoint error")
