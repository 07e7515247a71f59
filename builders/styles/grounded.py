"""`freshrag build --style grounded`: questions whose answers come from the fact table, written
in several wordings (docs/methods.md#grounded-questions-and-robustness-groups).

1. Every template (builders/styles/templates.py) is filled from `facts.sqlite` and executed; each filled
   query is a line of `queries.jsonl`, with its SQL, parameters, answers and, if it cannot be a
   group, why: `empty`, `ambiguous`, `outside_stage` (its article is not in `--questions-from`)
   or `not_selected` (beyond `--groups`, which takes a seeded sample, the kinds in turn).
2. For each kept query and each linguistic criterion (`--criteria`), the builder model writes
   one text form under that criterion, by a forced `write_question` call. The query and its forms
   are a semantic group: each form is a line of `questions.jsonl` carrying `reference` (the SQL
   answer), `group`, `criterion`, `sql` and `params`. A reply that is no usable call, or whose
   question gives the answer away, is asked again as a new attempt (`QUESTION_TRIES` in all),
   then written to `forms-failed.jsonl` with the reason and the raw reply, and asked again when
   the build resumes.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from freshrag.builders.prompts import FORM_MAX_TOKENS, GROUNDED_PROMPT, WRITE_QUESTION_TOOL
from freshrag.builders.records import read_records
from freshrag.builders.sources.pages import BuildError
from freshrag.builders.styles.base import Articles, Config, Plain, Walk, options_of
from freshrag.builders.styles.facts import FACTS, closing_db
from freshrag.builders.styles.templates import (
    KINDS,
    Query,
    builtin_templates,
    fill_templates,
    load_templates,
)
from freshrag.core.concurrency import map_with_progress
from freshrag.core.jsonl import JsonlWriter, replace_jsonl
from freshrag.core.reference import matches
from freshrag.core.types import LLM, LLMResponse
from freshrag.llm.toolcall import ReplyError, tool_arguments

QUERIES, FAILED = "queries.jsonl", "forms-failed.jsonl"
WRITE_QUESTION = WRITE_QUESTION_TOOL["function"]["name"]
QUESTION_TRIES = 3
# The instruction of each wording criterion. freshrag.core.types.WORDING_AXES pairs them by axis: the
# report compares the two values of an axis within groups (harness/reporting/groups.py).
CRITERIA = {
    "short": "Make it as short as possible: at most eight words.",
    "long": "Make it long: at least twenty words, with a clause of background about the subject "
            "before the actual question.",
    "formal": "Use a formal register, as in an encyclopaedia or an official letter.",
    "casual": "Use a casual, conversational register, as when asking a friend.",
    "direct": "Ask directly, starting with a question word (what, which, when, who, where, how).",
    "indirect": "Ask indirectly, as a request such as 'I would like to know ...' or "
                "'Tell me ...', not starting with a question word.",
}


@dataclass(frozen=True)
class GroundedOptions:
    """`--style grounded`'s options, its settings too."""

    templates: Path | None = None  # --templates: more SQL query templates (templates.py)
    criteria: tuple[str, ...] = tuple(CRITERIA)  # --criteria: one text form each per group
    groups: int | None = None  # --groups: semantic groups at most, a seeded sample


class Grounded(Plain):
    """The style object (builders/styles/base.py): its options (`GroundedOptions`) are its
    settings; it writes the text forms of the groups about each article."""

    name = "grounded"
    description = "text forms of SQL queries over the articles' infobox facts"
    files = (QUERIES, FAILED)
    options = GroundedOptions

    def settings(self, config: Config) -> dict[str, Any]:
        given = options_of(config, GroundedOptions)
        return {"templates": given.templates and str(given.templates),
                "criteria": list(given.criteria), "groups": given.groups}

    def write_questions(self, llm: LLM, config: Config, titles: list[str]) -> int:
        return grounded_questions(llm, config, titles)

    def walk(self, config: Config, titles: list[str], articles: Articles, done: set[str],
             known: bool) -> Walk:
        forms = grounded_forms(config, titles, done)

        def run(llm: LLM, position: int, title: str, label: bool) -> None:
            for query, criterion in forms.get(title, []):
                write_form(llm, query, criterion)
        return run


GROUNDED = Grounded()


def grounded_questions(llm: LLM, config: Config, titles: list[str]) -> int:
    """The questions stage with `--style grounded` for the articles `titles`; returns how many
    text forms exist."""
    if not (config.out / FACTS).exists():
        raise BuildError(f"{config.out}: stage facts has not finished; run it first "
                         f"(freshrag build --stage facts ...)")
    given = options_of(config, GroundedOptions)
    queries = write_queries(config.out, titles, given.templates, given.groups, config.seed)
    return write_forms(llm, config.out, queries, given.criteria, config.concurrency)


def write_queries(out: Path, stage_titles: list[str], templates_file: Path | None,
                  groups: int | None, seed: int) -> list[Query]:
    """Fill and execute every template once, record each query's fate in queries.jsonl, and
    return the kept ones (the semantic groups). Done already: read back."""
    path = out / QUERIES
    if not path.exists():
        queries, kept = fill_queries(out, stage_titles, templates_file, groups, seed)
        # whole or not at all: the same templates give the same file
        replace_jsonl(path, ({**query.record(), "dropped": query.dropped or (
            None if query.group in kept else
            "outside_stage" if query.gold_title not in stage_titles else "not_selected")}
            for query in queries))
    return [Query(**{key: row[key] for key in ("group", "template", "kind", "sql", "params",
                                              "text", "values", "gold_title")})
            for row in read_records(path) if row["dropped"] is None]


def fill_queries(out: Path, stage_titles: list[str], templates_file: Path | None,
                 groups: int | None, seed: int) -> tuple[list[Query], set[str]]:
    """Every filled query and the groups kept, without writing (the dry run reads this too)."""
    templates = builtin_templates() + (load_templates(templates_file) if templates_file else [])
    with closing_db(out / FACTS) as db:
        queries = fill_templates(db, templates)
    return queries, _select(queries, set(stage_titles), groups, seed)


def _select(queries: list[Query], titles: set[str], groups: int | None, seed: int) -> set[str]:
    """Group ids kept: answerable queries about the stage's articles, `groups` of them at most,
    a seeded shuffle taken kind by kind in turn so that a few groups still mix the kinds."""
    usable = [query for query in queries if query.dropped is None and query.gold_title in titles]
    random.Random(seed).shuffle(usable)
    by_kind = {kind: [q for q in usable if q.kind == kind] for kind in KINDS}
    ordered = []
    while any(by_kind.values()):
        for kind in KINDS:
            if by_kind[kind]:
                ordered.append(by_kind[kind].pop(0))
    return {query.group for query in ordered[:groups]}


def grounded_forms(config: Config, titles: list[str], done: set[str]
                   ) -> dict[str, list[tuple[Query, str]]]:
    """For `build --dry-run`: per gold article, the (query, criterion) forms not written yet, of
    the groups queries.jsonl keeps (or would keep, chosen without writing it)."""
    if not (config.out / FACTS).exists():
        raise BuildError(f"{config.out}: facts is not built yet, so there is nothing to count: "
                         f"build --stage facts first (it makes no LLM call), then --dry-run again")
    given = options_of(config, GroundedOptions)
    if (config.out / QUERIES).exists():
        kept = write_queries(config.out, titles, given.templates, given.groups, config.seed)
    else:
        queries, groups = fill_queries(config.out, titles, given.templates, given.groups,
                                       config.seed)
        kept = [query for query in queries if query.group in groups]
    forms: dict[str, list[tuple[Query, str]]] = {}
    for query in kept:
        for criterion in given.criteria:
            if query.gold_title is not None and form_id(query, criterion) not in done:
                forms.setdefault(query.gold_title, []).append((query, criterion))
    return forms


def write_forms(llm: LLM, out: Path, queries: list[Query], criteria: tuple[str, ...],
                concurrency: int) -> int:
    """One text form per (group, criterion) not written yet; returns how many exist."""
    done = {row["id"] for row in read_records(out / "questions.jsonl")}
    todo = [(query, criterion) for query in queries for criterion in criteria
            if form_id(query, criterion) not in done]
    writer, failed = JsonlWriter(out / "questions.jsonl"), JsonlWriter(out / FAILED)

    def write(item: tuple[Query, str]) -> bool:
        query, criterion = item
        question, reason, response = write_form(llm, query, criterion)
        if question:
            writer.write(form_row(query, criterion, question, response))
            return True
        failed.write({"id": form_id(query, criterion), "group": query.group,
                      "criterion": criterion, "reason": reason,
                      "raw": response.tool_arguments if response.tool_name else response.text})
        return False

    try:
        map_with_progress(write, todo, concurrency, desc="text forms", unit="form")
    finally:
        writer.close()
        failed.close()
    return len(read_records(out / "questions.jsonl"))


def write_form(llm: LLM, query: Query, criterion: str) -> tuple[str | None, str | None, Any]:
    """(question, why not, last reply) of one (group, criterion): `QUESTION_TRIES` attempts."""
    reason, response = None, None
    for attempt in range(QUESTION_TRIES):
        response = llm.chat("builder", form_messages(query, criterion), tools=[WRITE_QUESTION_TOOL],
                            tool_choice=WRITE_QUESTION, temperature=1.0,
                            max_tokens=FORM_MAX_TOKENS, attempt=attempt)
        question, reason = parse_form(response, query.answer or "")
        if question:
            return question, None, response
    return None, reason, response


def form_messages(query: Query, criterion: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": GROUNDED_PROMPT.format(instruction=CRITERIA[criterion])},
            {"role": "user", "content": f"Ask for: {query.text}\nSQL: {query.sql}\n"
                                        f"Parameters: {json.dumps(query.params)}"}]


def parse_form(response: LLMResponse, answer: str) -> tuple[str | None, str | None]:
    """The question of a `write_question` call, or (None, why it is not usable)."""
    try:
        question = tool_arguments(response, WRITE_QUESTION).get("question")
    except ReplyError as err:
        return None, str(err)
    if not isinstance(question, str) or not question.strip():
        return None, f"question is {question!r}, not a non-empty string"
    question = " ".join(question.split())
    if answer and matches(question, answer):
        return None, "the question states its own answer"
    return question, None


def form_id(query: Query, criterion: str) -> str:
    return f"{query.group}-{criterion}"


def form_row(query: Query, criterion: str, question: str, response: LLMResponse) -> dict[str, Any]:
    return {"id": form_id(query, criterion), "title": query.gold_title, "question": question,
            "reference": query.answer, "group": query.group, "criterion": criterion,
            "label": "fact_single", "sql": query.sql, "params": query.params,
            "template": query.template, "query_kind": query.kind, "generator": response.model,
            "style": "grounded", "usage": asdict(response.usage)}


def grounded_counts(out: Path) -> dict[str, Any] | None:
    """The funnel of the grounded questions, from the files: queries and why dropped, groups,
    forms written and failed."""
    if not (out / QUERIES).exists():
        return None
    queries = read_records(out / QUERIES)
    dropped: dict[str, int] = {}
    for row in queries:
        if row["dropped"]:
            dropped[row["dropped"]] = dropped.get(row["dropped"], 0) + 1
    forms = {row["id"] for row in read_records(out / "questions.jsonl") if row.get("group")}
    failing = {row["id"] for row in read_records(out / FAILED)} - forms
    return {"queries": len(queries), "dropped": dropped,
            "groups": sum(row["dropped"] is None for row in queries),
            "forms": len(forms), "forms_failed": len(failing)}
