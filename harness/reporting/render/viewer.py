"""The sample viewer of the HTML report (docs/reports.md#the-viewer): every answer of the report,
browsable in the one self-contained page, offline, with no server.

The page carries the data as JSON in `<script type="application/json">` elements, which a browser
never runs, and a small inline script (assets/viewer.js; its markup and styles beside it) reads
them:

- `viewer-data`: what the sample list shows and filters on, compact: the questions once
  (`[dataset, id, text, gold title, label, kind, hops]`; a multi-article question's gold titles
  in hop order, joined by ` · `, where a chunk of any of them is marked gold), the run
  identities' labels once, then one array per answer (`LIST_COLUMNS`, with why an agent stopped
  and its wasted steps, docs/reports.md#trajectories, for the filters).
  Parsed once, when the page opens.
- `viewer-block-N`: the whole records (calls with their prompts and replies, details, grade,
  scorers' results, the steps the script draws as a timeline, why an agent stopped, and the step
  that first found each gold article, as harness/reporting/trajectory.py finds it: `gold_found`)
  of about `BLOCK_SAMPLES` answers, whole questions at a time. A block is parsed only when one of its answers is opened, so a page of
  100,000 answers opens in seconds. Within a block a long string met twice (a shared system
  prompt, an answer, its call's reply and its answer step) is stored once in the block's
  `strings` and referenced as NUL + its index (a string of the data that starts with NUL gets a
  second one, which the script takes off). The gold article, which every judge prompt of a
  question ends with, is cut from those prompts and kept once as the record's `gold_passage`;
  the script puts it back.
- The list and its script come before the blocks, so the list is on screen while the browser
  still reads the blocks.

The page's other mode, for people to grade answers blind to the system and the judge, is
labelling.py beside this module (`freshrag report --html F --label`).

Model and dataset text stays text: the JSON is escaped so that nothing in it can end its
`<script>` element (`<`, `>`, `&` and the two JavaScript line separators as `\\uXXXX`), and the
script puts every value on the page through `textContent`, never as markup.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator

from freshrag.core.fields import value_name
from freshrag.core.records import SampleRow
from freshrag.core.samples import answer_tokens, is_scored, judge_scores
from freshrag.core.summary import AnswerSummary, summary_of
from freshrag.core.types import QUESTION_FIELDS
from freshrag.reporting.identity import group_rows, labels
from freshrag.reporting.outcomes import hops
from freshrag.reporting.retrieval_metrics import gold_set
from freshrag.reporting.trajectory import gold_found, step_figures
from freshrag.scoring import judge

BLOCK_SAMPLES = 200  # answers per lazily parsed block: one block parses in milliseconds
SHARED_MIN_CHARS = 120  # a string this long met twice in a block is stored once
SNIPPET_CHARS = 200  # of each answer, kept in the list for the search box
LIST_COLUMNS = ("question", "system", "status", "score", "truthfulness", "relevance",
                "decision", "input_tokens", "output_tokens", "latency_s", "retrievals",
                "answer", "block", "slot", "stopped", "wasted")
# The judge's user message ends with the article it grades against (harness/scoring/judge.py),
# or with each of a multi-article question's: the gold passage the viewer shows.
ARTICLE_MARK = judge.ARTICLE_MARK
GOLDS_JOIN = " · "  # between a multi-article question's gold titles in the list and overview
ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
           "\u2029": "\\u2029"}
ASSETS = Path(__file__).with_name("assets")


def viewer_section(rows: list[SampleRow]) -> str:
    """The viewer's markup: its controls, its data blocks, its styles and script. What the
    tables read of a row (its identity, grade, tokens, steps) is read from its summary
    (core/summary.py summary_of); the rest is shown as the row holds it."""
    summaries = {id(row): summary_of(row) for row in rows}
    names = _row_labels(rows, summaries)
    questions = _questions(rows)
    order = {key: n for n, key in enumerate(questions)}
    systems = list(dict.fromkeys(names[id(row)] for row in rows))
    listed, blocks = [], []
    for block_no, block in enumerate(_blocks(questions.values())):
        for slot, row in enumerate(block):
            listed.append(_list_entry(row, summaries[id(row)], order[_question_key(row)],
                                      systems.index(names[id(row)]), block_no, slot))
        blocks.append(_block(block, summaries))
    data = {"columns": LIST_COLUMNS, "systems": systems, "article_mark": ARTICLE_MARK,
            "questions": [_question_entry(group[0], summaries[id(group[0])])
                          for group in questions.values()],
            "samples": listed}
    # the list and its script first: the list is on screen while the browser still parses the
    # blocks that follow
    parts = [_asset("viewer.html"), json_script("viewer-data", data),
             f"<style>{_asset('viewer.css')}</style>", f"<script>{_asset('counted.js')}{_asset('viewer.js')}</script>"]
    parts += [json_script(f"viewer-block-{n}", block) for n, block in enumerate(blocks)]
    return "\n".join(parts)


def json_script(ident: str, value: Any) -> str:
    """`value` as a JSON data element that no string inside it can end or turn into markup."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                      default=str)
    for char, escape in ESCAPES.items():
        text = text.replace(char, escape)
    return f"<script type=\"application/json\" id=\"{ident}\">{text}</script>"


def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- the list


def _row_labels(rows: list[SampleRow], summaries: dict[int, AnswerSummary]) -> dict[int, str]:
    groups = group_rows([summaries[id(row)] for row in rows])
    names = labels(groups)
    named = {id(answer): names[key] for key, group in groups.items() for answer in group}
    return {id(row): named[id(summaries[id(row)])] for row in rows}


def _question_key(row: SampleRow) -> tuple[str, str]:
    return str(row["dataset"]), str(row["question_id"])


def _questions(rows: list[SampleRow]) -> dict[tuple[str, str], list[SampleRow]]:
    """Rows by question, questions and their answers in the order the rows came."""
    groups: dict[tuple[str, str], list[SampleRow]] = {}
    for row in rows:
        groups.setdefault(_question_key(row), []).append(row)
    return groups


def _question_entry(row: SampleRow, answer: AnswerSummary) -> list[Any]:
    golds = row.get("gold_titles")
    return [str(row["dataset"]), str(row["question_id"]), row.get("question"),
            GOLDS_JOIN.join(golds) if golds else row.get("gold_title"),
            _text(row.get("label")), _text(row.get("kind")), hops(answer)]


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def status(answer: AnswerSummary) -> str:
    """`failed`, `unscored` or `scored`: the list's status column."""
    if answer.status == "failed":
        return "failed"
    return "scored" if is_scored(answer) else "unscored"


def _list_entry(row: SampleRow, answer: AnswerSummary, question: int, system: int, block: int,
                slot: int) -> list[Any]:
    scores = judge_scores(answer)
    truth, rel = (scores["truthfulness"], scores["relevance"]) if scores else (None, None)
    total = scores["truthfulness"] + scores["relevance"] if scores else None
    tokens = _system_tokens(answer)
    latency = row.get("answer_latency_s", row.get("latency_s"))
    text = row.get("answer") or ""
    return [question, system, status(answer), total, truth, rel, answer.decision, tokens[0],
            tokens[1], None if latency is None else round(latency, 3), row.get("retrievals"),
            text[:SNIPPET_CHARS], block, slot, row.get("stopped"),
            step_figures(answer)["wasted_steps"]]


def _system_tokens(answer: AnswerSummary) -> tuple[int | None, int | None]:
    """What the system spent (every role but the judge), None where it did not say."""
    spent = answer_tokens(answer)
    return (None if "input_tokens" in answer.unknown else spent[0],
            None if "output_tokens" in answer.unknown else spent[1])


# --------------------------------------------------------------------------- the blocks


def _blocks(questions: Iterable[list[SampleRow]]) -> Iterator[list[SampleRow]]:
    """Whole questions, about BLOCK_SAMPLES answers a block, so a comparison of two answers to
    one question parses one block."""
    block: list[SampleRow] = []
    for group in questions:
        block.extend(group)
        if len(block) >= BLOCK_SAMPLES:
            yield block
            block = []
    if block:
        yield block


def _block(rows: list[SampleRow], summaries: dict[int, AnswerSummary]) -> dict[str, Any]:
    records = [_record(row, summaries[id(row)]) for row in rows]
    counts = Counter(text for record in records for text in _strings(record)
                     if len(text) >= SHARED_MIN_CHARS)
    shared = [text for text, n in counts.items() if n > 1]
    index = {text: f"\x00{n}" for n, text in enumerate(shared)}
    return {"strings": shared, "samples": [_replace(record, index) for record in records]}


def _record(row: SampleRow, answer: AnswerSummary) -> dict[str, Any]:
    """The row as run-format.md defines it, plus the question's fields as the tables name their
    values (`need: yes`), the gold passage found in the judge's prompt and, for an answer with
    steps, the step that first found each gold article (`gold_found`). A judge message that
    carries the passage keeps only what comes before it and is marked `with_passage`, for the
    script to put the passage back: the passage, the same for every answer to the question, is
    then stored once in the block."""
    record: dict[str, Any] = {key: value for key, value in row.items()
                              if key not in ("question", "calls")}
    record["question_fields"] = {name: value_name(record[name]) for name in QUESTION_FIELDS
                                 if record.get(name) is not None and name != "gold_titles"}
    record["gold_passage"] = passage = gold_passage(row)
    if answer.steps:
        record["gold_found"] = gold_found(answer.steps, gold_set(answer))
    record["calls"] = [_without_passage(call, passage) for call in row.get("calls") or []]
    return record


def gold_passage(row: SampleRow) -> str | None:
    """The article the judge graded against, as its prompt carried it (None: no judge call with
    an article, e.g. a general query or an imported run)."""
    for call in row.get("calls") or []:
        for message in _judge_messages(call):
            if ARTICLE_MARK in message["content"]:
                return message["content"].split(ARTICLE_MARK, 1)[1]
    return None


def _judge_messages(call: Any) -> list[dict[str, Any]]:
    if not (isinstance(call, dict) and call.get("role") == "judge"):
        return []
    return [m for m in call.get("messages") or []
            if isinstance(m, dict) and isinstance(m.get("content"), str)]


def _without_passage(call: Any, passage: str | None) -> Any:
    suffix = None if passage is None else ARTICLE_MARK + passage
    if suffix is None or not any(m["content"].endswith(suffix) for m in _judge_messages(call)):
        return call
    messages = [{**m, "content": m["content"][:-len(suffix)], "with_passage": True}
                if isinstance(m, dict) and isinstance(m.get("content"), str)
                and m["content"].endswith(suffix) else m for m in call["messages"]]
    return {**call, "messages": messages}


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _replace(value: Any, index: dict[str, str]) -> Any:
    if isinstance(value, str):
        return index.get(value) or ("\x00" + value if value.startswith("\x00") else value)
    if isinstance(value, dict):
        return {key: _replace(item, index) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace(item, index) for item in value]
    return value
