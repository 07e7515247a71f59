"""`freshrag build --style multihop`: questions that need two post-cutoff articles
(docs/building.md#multi-hop-questions).

1. Stage `facts` also reads the link table of the A_r articles from the build's source into
   `links.jsonl` (builders/sources/links.py): a line per article, its links to main-namespace
   pages in page order.
2. The questions stage plans the candidates (builders/styles/multihop_plan.py): bridges along the
   links, comparisons from the fact table. A bridge's question is written by the `builder`
   model from A's sentence that names B and a fact of B, by a forced `write_bridge` call giving
   the question and its answer (a question that names B, or states its answer, is no usable
   reply); a comparison's is a template with its reference computed from the facts.
3. Every written question takes the both-needed check (builders/styles/multihop_check.py).

Each candidate is a line of `multihop.jsonl` once its calls are done, kept or dropped with the
reason (`unusable_reply`, `not_answered_with_all`, `answered_by_one_article`, `check_unscored`,
`too_long`), its check's answers and grades, so that a resumed build asks only for candidates it
has no line of (and the response cache holds the calls of one cut short). `questions.jsonl` is
then rebuilt from the kept ones: `title` (the first hop), `gold_titles` (in hop order), `hops`,
`multihop` (`bridge` or `comparison`), `reference`, and the usual fields; its `created` and
`month` are those of its newest gold article. With `--distractors K`, builders/styles/
distractors.py then adds K close articles per question to the corpus.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from freshrag.builders.forced import forced_call, text_field, usage_record
from freshrag.builders.labels.prompts import messages
from freshrag.builders.records import read_records, read_title_list
from freshrag.builders.sources.pages import BuildError
from freshrag.builders.styles.base import (
    QUESTIONS,
    Articles,
    Config,
    Plain,
    Walk,
    options_of,
    read_articles,
)
from freshrag.builders.styles.distractors import DISTRACTORS, add_distractors, distractor_counts
from freshrag.builders.styles.facts import FACTS
from freshrag.builders.styles.multihop_check import check
from freshrag.builders.styles.multihop_plan import KINDS, LINKS, Candidate, Plan, plan
from freshrag.builders.styles.prompted import STAGE_KINDS
from freshrag.core.concurrency import map_with_progress
from freshrag.core.dates import parse_timestamp
from freshrag.core.jsonl import JsonlWriter, replace_jsonl
from freshrag.core.reference import matches
from freshrag.core.types import LLM
from freshrag.llm.toolcall import ReplyError, line_of_text, room_for

CANDIDATES = "multihop.jsonl"
QUESTION_CHARS = 300
BRIDGE_MAX_TOKENS = room_for(QUESTION_CHARS + 200)
UNUSABLE = "unusable_reply"
BRIDGE_PROMPT = (
    "You write one question that can only be answered by reading two Wikipedia articles. The "
    "user gives a sentence of the first article, which mentions the subject of the second, and "
    "a fact from the second article. Write a question that refers to the second subject only "
    "the way the first article's sentence describes it, never by its name, and asks for the "
    "fact, so that a reader must go through the first article to the second. Call the function "
    "write_bridge with the question and its short answer."
)
BRIDGE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "write_bridge",
        "description": "Submit the two-article question and its answer.",
        "parameters": {
            "type": "object",
            "properties": {
                "question": line_of_text(QUESTION_CHARS) | {"description": "the question"},
                "answer": line_of_text(200) | {"description": "its short answer"},
            },
            "required": ["question", "answer"],
        },
    },
}


@dataclass(frozen=True)
class MultihopOptions:
    """`--style multihop`'s options, its settings too."""

    multihop: tuple[str, ...] = KINDS  # --multihop: the kinds of two-article question
    distractors: int = 0  # --distractors: articles close to the gold ones, per question


class MultiHop(Plain):
    """The style object (builders/styles/base.py); beyond it, the roles its check calls, the
    links it reads in stage facts and the distractors it adds in the questions stage
    (`source_step`), and its part of the funnel."""

    name = "multihop"
    description = "two-article bridge and comparison questions, kept if they need both"
    files = (LINKS, CANDIDATES, DISTRACTORS)
    roles = ("answer", "judge")
    takes_distractors = True  # --distractors
    options = MultihopOptions

    def settings(self, config: Config) -> dict[str, Any]:
        return {"multihop": list(kinds(config)), "distractors": distractors(config)}

    def write_questions(self, llm: LLM, config: Config, titles: list[str]) -> int:
        return write_multihop(llm, config, titles)

    def walk(self, config: Config, titles: list[str], articles: Articles, done: set[str],
             known: bool) -> Walk:
        todo = _todo(config, titles, articles)

        def run(llm: LLM, position: int, title: str, label: bool) -> None:
            for candidate in todo.get(title, []):
                settle(llm, candidate, articles, walked=True)
        return run

    def source_step(self, stage: str, config: Config, open_source: Callable[[], Any]) -> str | None:
        """Stage facts: the links of the A_r articles; the questions stage: the distractors."""
        out = config.out
        if stage == "facts":
            if not (out / LINKS).exists():
                titles = [row["title"] for row in read_records(out / "articles.jsonl")]
                found = open_source().links(titles)
                replace_jsonl(out / LINKS, ({"title": title, "links": [
                    link.record() for link in found.get(title, [])]} for title in titles))
            rows = read_records(out / LINKS)
            return f"{sum(len(row['links']) for row in rows)} links of {len(rows)} articles"
        if stage == "questions" and distractors(config):
            return add_distractors(out, distractors(config), config.seed, open_source)
        return None

    def before_calls(self, config: Config) -> None:
        """Refuse, before the build's first model call, a sample that gives no candidate at all:
        planned over the articles the questions can still come from (A_d's, else A_r's), which
        the later stages only narrow, so none of theirs would give one."""
        stages = ("A_r", "A_d")[:1 + (config.questions_from != "A_r")]
        listed = [stage for stage in stages if (config.out / f"{stage}.txt").exists()]
        if listed:
            _check_plannable(config, read_title_list(config.out / f"{listed[-1]}.txt"))

    def funnel(self, config: Config) -> dict[str, Any]:
        return {"multihop": multihop_funnel(config)} if (config.out / CANDIDATES).exists() \
            else {}


MULTIHOP = MultiHop()


def kinds(config: Config) -> tuple[str, ...]:
    return options_of(config, MultihopOptions).multihop


def distractors(config: Config) -> int:
    return options_of(config, MultihopOptions).distractors


def _plan(config: Config, titles: list[str], articles: Articles) -> Plan:
    for name, stage in ((FACTS, "facts"), (LINKS, "facts")):
        if not (config.out / name).exists():
            raise BuildError(f"{config.out}: stage {stage} has not finished ({name} is missing); "
                             f"run it first (freshrag build --stage facts ..., no LLM call)")
    return plan(config.out, config.questions_from, titles, articles, kinds(config),
                config.questions_per_article, config.seed)


def _todo(config: Config, titles: list[str], articles: Articles) -> dict[str, list[Candidate]]:
    """Per first article, the candidates without a line in multihop.jsonl (the dry run's)."""
    done = {row["id"] for row in read_records(config.out / CANDIDATES)}
    todo: dict[str, list[Candidate]] = {}
    for candidate in _plan(config, titles, articles).candidates:
        if candidate.id not in done:
            todo.setdefault(candidate.gold_titles[0], []).append(candidate)
    return todo


def write_multihop(llm: LLM, config: Config, titles: list[str]) -> int:
    """The candidates of `titles` written and checked, then questions.jsonl; how many it holds."""
    articles = read_articles(config.out)
    planned = _plan(config, titles, articles).candidates
    done = {row["id"] for row in read_records(config.out / CANDIDATES)}
    writer = JsonlWriter(config.out / CANDIDATES)
    try:
        map_with_progress(lambda c: writer.write(settle(llm, c, articles)),
                          [c for c in planned if c.id not in done], config.concurrency,
                          desc="two-article questions", unit="question")
    finally:
        writer.close()
    order = {candidate.id: k for k, candidate in enumerate(planned)}
    kept = sorted((row for row in read_records(config.out / CANDIDATES)
                   if row["id"] in order and row["dropped"] is None), key=lambda r: order[r["id"]])
    return replace_jsonl(config.out / QUESTIONS, (question_row(row, articles, config)
                                                  for row in kept))


def settle(llm: LLM, candidate: Candidate, articles: Articles,
           walked: bool = False) -> dict[str, Any]:
    """One candidate's line: its question written (a bridge) and checked, or why it was not.
    `walked` (the dry run): every check call is made, as for a question kept in the end."""
    row: dict[str, Any] = {**candidate.record(), "dropped": None, "reason": None, "raw": [],
                           "generator": None, "check": [], "usage": usage_record([])}
    question, reference, calls = candidate.question, candidate.reference, []
    if candidate.kind == "bridge":
        outcome = forced_call(llm, "builder", BRIDGE_TOOL, lambda _: messages(
            BRIDGE_PROMPT, bridge_user(candidate)), (lambda v: (str(v.get("question")), str(
                v.get("answer")))) if walked else (lambda v: parse_bridge(v, candidate)),
            max_tokens=BRIDGE_MAX_TOKENS, temperature=1.0)
        calls = outcome.calls
        row.update(raw=outcome.raw, generator=calls[-1].model if calls else None,
                   usage=usage_record(calls))
        if not outcome.ok:
            return {**row, "dropped": UNUSABLE, "reason": outcome.reason}
        question, answer = outcome.value
        reference = reference or answer
    golds = [(title, articles[title]["content"]) for title in candidate.gold_titles]
    verdict = check(llm, question or "", reference or "", golds, walked)
    return {**row, "question": question, "reference": reference, "dropped": verdict.dropped,
            "reason": verdict.reason, "check": verdict.steps}


def bridge_user(candidate: Candidate) -> str:
    first, second = candidate.gold_titles
    return (f"First article: {first}\nIts sentence: {candidate.sentence}\n"
            f"Second article: {second}\nA fact of the second article: {candidate.fact}")


def parse_bridge(values: dict[str, Any], candidate: Candidate) -> tuple[str, str]:
    """(question, answer) of a `write_bridge` call; a ReplyError for a question that names the
    second article or states its own answer (one read from the first alone)."""
    question, answer = text_field(values, "question", 1_000), values.get("answer")
    if not isinstance(answer, str) or not answer.strip() or len(answer) > 500:
        raise ReplyError(f"answer is {str(answer)[:200]!r}, not a short non-empty string")
    answer = " ".join(answer.split())  # a date or a number is an answer too
    second = candidate.gold_titles[1]
    if second.lower() in question.lower():
        raise ReplyError(f"the question names the second article, {second!r}")
    if matches(question, candidate.reference or answer):
        raise ReplyError("the question states its own answer")
    return question, answer


def question_row(row: dict[str, Any], articles: Articles, config: Config) -> dict[str, Any]:
    """A kept candidate as a line of questions.jsonl."""
    golds = row["gold_titles"]
    dated = [articles[t] for t in golds if articles[t].get("created")]
    newest = max(dated, key=lambda a: parse_timestamp(a["created"]), default=articles[golds[0]])
    return {"id": row["id"], "title": golds[0], "question": row["question"],
            "gold_titles": golds, "hops": len(golds), "multihop": row["kind"],
            "reference": row["reference"], "revision_id": articles[golds[0]].get("revision_id"),
            "generator": row["generator"], "style": MULTIHOP.name,
            "stage": config.questions_from, "cutoff": config.cutoff.isoformat(),
            "created": newest.get("created"), "month": newest.get("month"),
            **STAGE_KINDS.get(config.questions_from, {})}


def multihop_funnel(config: Config) -> dict[str, Any]:
    """Candidates = kept + dropped (by reason), per kind; what the stage's articles lacked for
    a candidate, per kind; the distractors, if asked for."""
    rows = read_records(config.out / CANDIDATES)
    result: dict[str, Any] = {}
    for kind in kinds(config):
        mine = [row for row in rows if row["kind"] == kind]
        result[kind] = {"candidates": len(mine),
                        "kept": sum(row["dropped"] is None for row in mine),
                        "dropped": dict(Counter(row["dropped"] for row in mine
                                                if row["dropped"]))}
    lacking = _lacking(config)
    for kind, counts in lacking.items():
        result[kind]["lacking"] = counts
    if distractors(config) and (config.out / DISTRACTORS).exists():
        result["distractors"] = distractor_counts(config.out, distractors(config))
    return result


def _check_plannable(config: Config, titles: list[str]) -> None:
    found = _plan(config, titles, read_articles(config.out))
    if found.candidates:
        return
    why = "; ".join(f"{kind}: " + ", ".join(f"{reason.replace('_', ' ')} {count}"
                                            for reason, count in counts.items() if count)
                    for kind, counts in found.lacking.items())
    raise BuildError(f"{config.out}: no two-article question can be planned from the "
                     f"{len(titles)} articles it may ask about ({why}); a bridge needs an article that "
                     f"links to another sampled one and names it, a comparison two articles "
                     f"with the same infobox field. Sample a wiki or dump whose new articles "
                     f"link to each other; no model was called")


def _lacking(config: Config) -> dict[str, dict[str, int]]:
    try:
        titles = read_title_list(config.out / f"{config.questions_from}.txt")
        return _plan(config, titles, read_articles(config.out)).lacking
    except (OSError, BuildError):
        return {}

