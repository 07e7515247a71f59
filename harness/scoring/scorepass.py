"""A score pass: the chosen scorers (docs/scoring.md#scorers; the judge's repeats for
docs/scoring.md#judge-agreement) over a run's answered rows, into
`scores.jsonl` (store.py).

`freshrag score RUN_DIR --scorers ...` runs one on a finished run (or an imported one) without
answering again; `freshrag run --scorers ...` runs one after its pairs. Every (row, scorer,
repeat) finished before (scored, unscored or not applicable, for the same answer text) is
skipped, so a pass killed mid-way resumes where it stopped; calls finished before the kill come
from the response cache. An endpoint error on one score is a `failed` score row, tried again on
resume; an endpoint that cannot be reached stops the pass, keeping what finished.

What a scorer sees of a row (`score_input`): the question and its optional fields, the answer,
the gold article, the run's judge grade, and the retrieved context: `details.context` where an
import kept it, else the extracts of the row's last `answer` call, which systems/rag.py sends
after the first blank line of the system message (RAG_PROMPT), when the row retrieved.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Iterable

from freshrag.core.concurrency import map_with_progress
from freshrag.core.dataset import DatasetError, load_articles
from freshrag.core.errors import FreshragError, said
from freshrag.core.files import dumps
from freshrag.core.jsonl import JsonlWriter, ResultsError
from freshrag.core.manifest import read_manifest
from freshrag.core.records import SampleRow, ScoreRow
from freshrag.core.rundir import kind
from freshrag.core.samples import SAMPLES, read_samples
from freshrag.core.types import LLM, QUESTION_FIELDS, Article, LLMResponse, Question
from freshrag.core.wording import counted
from freshrag.llm.client import ContextTooLong, EndpointError, EndpointUnreachable
from freshrag.scoring import SCORERS, plugins
from freshrag.scoring.base import STATUSES, Embed, ScoreInput, Scorer, ScoreResult, unscored
from freshrag.scoring.store import FINISHED, SCORES, answer_sha256, key, read_scores, score_row

Item = tuple[SampleRow, str, int]  # (samples row, scorer name, repeat)
SCORED_KINDS = ("run", "import")  # directories whose answers may be scored


class ScoreError(ResultsError):
    """A score pass that cannot start: unknown scorer, a directory without answers, a missing
    input (the gold articles of an import). The message names the option or file."""


def scorer_names(text: str) -> tuple[str, ...]:
    """`--scorers judge,faithfulness,mine=my_scorer.py:MyScorer`: the scorers' names, in order,
    each once; a user's scorer is loaded and checked here (harness/scoring/plugins.py), and known
    by its name from then on."""
    unknown = plugins.unknown(text)
    if unknown or not text.replace(",", "").strip():
        raise ScoreError(f"--scorers: unknown scorer(s) {unknown}; valid scorers: "
                         f"{', '.join(SCORERS.names())}, or FILE.py:NAME, or "
                         f"MODULE:NAME for your own")
    return tuple(source.name for source in plugins.resolve_all(text))


def scorer_roles(names: Iterable[str]) -> tuple[str, ...]:
    """The LLM roles the named scorers call (the embedded server starts if one is local)."""
    return tuple(dict.fromkeys(plugins.lookup(name).role for name in names))


def score_inputs(run_dir: Path, articles: dict[str, Article] | None
                 ) -> tuple[list[SampleRow], dict[str, Article]]:
    """A directory's rows (each with its dataset's name) and the gold articles: `articles` if
    given, else those of the run's dataset files. An import keeps no articles: none then."""
    manifest = read_manifest(run_dir)
    if manifest is None or not (run_dir / SAMPLES).exists():
        raise ScoreError(f"{run_dir}: no {SAMPLES} and manifest.json; is this a run directory?")
    if kind(manifest) not in SCORED_KINDS:
        raise ScoreError(f"{run_dir}: holds no answers to score (a {kind(manifest)} directory)")
    name = (manifest.get("dataset") or {}).get("name")
    rows = read_samples(run_dir / SAMPLES)
    for row in rows:
        row["dataset"] = row.get("dataset") or name
    files = (manifest.get("dataset") or {}).get("files") or {}
    if articles is None and kind(manifest) == "run" and files.get("articles"):
        try:
            articles = load_articles(Path(files["articles"]))
        except DatasetError as err:  # a relative path recorded from another directory
            raise ScoreError(f"{run_dir}: cannot read the run's articles ({err}); give them "
                             f"with --articles FILE or --dataset DIR") from None
    return rows, articles or {}


def missing_inputs(rows: list[SampleRow], names: Iterable[str],
                   articles: dict[str, Article]) -> str | None:
    """What the named scorers need that is not there (gold articles), or None. A general query's
    row has no gold article to miss (its `gold_title` is null); a multi-article row needs each."""
    needing = [name for name in names if "article" in plugins.lookup(name).needs]
    titles = sorted({title for row in rows if row["status"] == "ok"
                     for title in _golds(row)} - set(articles))
    if needing and titles:
        return (f"{', '.join(needing)} {'needs' if len(needing) == 1 else 'need'} the gold "
                f"articles, and {counted(len(titles), 'title')} not at hand (e.g. {titles[0]!r}); give them with --articles FILE or --dataset DIR")
    return None


def _golds(row: SampleRow) -> list[str]:
    """The titles of a row's gold articles: its gold set, else its gold title (none for a
    general query)."""
    title = row["gold_title"]
    return row.get("gold_titles") or ([title] if title is not None else [])


def make_scorers(names: Iterable[str], embed: Embed | None = None) -> dict[str, Scorer]:
    """The named scorers (built-in, or the user's: harness/scoring/plugins.py), those that need
    embeddings given `embed` as their `embed` attribute."""
    made = {}
    for name in names:
        scorer = plugins.lookup(name).make()
        if "embeddings" in scorer.needs:
            setattr(scorer, "embed", embed)
        made[name] = scorer
    return made


def retrieved_context(row: SampleRow) -> str | None:
    """The text the answer was given from retrieval, or None if the row retrieved nothing."""
    details = row.get("details") or {}
    if isinstance(details.get("context"), str) and details["context"].strip():
        return details["context"]
    if not row.get("retrievals"):
        return None
    answers = [call for call in row.get("calls") or [] if call.get("role") == "answer"]
    system = next((m.get("content") for m in (answers[-1].get("messages") or [])
                   if m.get("role") == "system"), None) if answers else None
    if not isinstance(system, str) or "\n\n" not in system:
        return None
    return system.split("\n\n", 1)[1].strip() or None


def score_input(row: SampleRow, articles: dict[str, Article], repeat: int) -> ScoreInput:
    fields: dict[str, Any] = {name: row.get(name) for name in QUESTION_FIELDS}
    fields["gold_titles"] = tuple(fields["gold_titles"] or ())
    title = row["gold_title"]
    question = Question(id=row["question_id"], text=row.get("question") or "", gold_title=title,
                        **fields)
    golds = tuple(articles[gold] for gold in question.golds if gold in articles)
    return ScoreInput(question=question, answer=row.get("answer") or "",
                      context=retrieved_context(row),
                      article=articles.get(title) if title is not None else None,
                      grade=row.get("grade"), repeat=repeat,
                      articles=golds if len(question.golds) > 1 else ())


def pending(run_dir: Path, rows: list[SampleRow], names: Iterable[str],
            repeats: int) -> list[Item]:
    """The (row, scorer, repeat) not finished yet for the row's current answer."""
    done = {key(s): s["answer_sha256"] for s in read_scores(run_dir) if s["status"] in FINISHED}
    items = []
    for row in rows:
        if row["status"] != "ok" or row.get("answer") is None:
            continue  # a failed pair has no answer to score
        for name in names:
            for repeat in range(repeats):
                k = (row.get("dataset"), row["question_id"], row["system"], name, repeat)
                if done.get(k) != answer_sha256(row["answer"]):
                    items.append((row, name, repeat))
    return items


def check_same_models(run_dir: Path, scorers: dict[str, Scorer], llm: LLM) -> None:
    """Refuse a pass whose scorer model, or a user's scorer's code, differs from the one a
    scorer's earlier scores used: resumed, or added to, the two models' (or versions') scores
    would merge into one row of every table."""
    rows = read_scores(run_dir)
    check_same_code(run_dir, scorers, rows)
    settings = getattr(llm, "settings", None)
    if settings is None:  # a scripted model in tests: no configured roles to compare
        return
    for row in rows:
        scorer = scorers.get(row["scorer"])
        if scorer is None:
            continue
        now_model = settings.role(scorer.role).model
        used = {call["model"] for call in row.get("calls") or [] if call["role"] == scorer.role}
        if used - {now_model}:
            raise ResultsError(
                f"{run_dir / SCORES}: {row['scorer']} was scored with the {scorer.role} model "
                f"{sorted(used)[0]!r}, and this pass would use {now_model!r}: the two models' "
                f"scores would merge into one row; score a copy of the run directory instead")


def check_same_code(run_dir: Path, scorers: Iterable[str],
                    rows: list[ScoreRow] | None = None) -> None:
    """Refuse a pass whose user's scorer is not the code (file hash, package version) that wrote
    the scorer's earlier scores (their `source`), nor a built-in one of the same name."""
    now = {name: plugins.lookup(name) for name in scorers}
    for row in read_scores(run_dir) if rows is None else rows:
        source = now.get(row["scorer"])
        if source is None:
            continue
        before = row.get("source") or {"origin": "built-in"}
        current = {"origin": "built-in"} if source.builtin else source.record()
        if _identity(before) != _identity(current):
            raise ResultsError(
                f"{run_dir / SCORES}: {row['scorer']} was scored by {_said(before)}, and this "
                f"pass would use {_said(current)}: the two versions' scores would merge into one "
                f"row; score a copy of the run directory instead")


def _identity(record: dict[str, Any]) -> tuple[Any, ...]:
    return record.get("origin") == "built-in", record.get("sha256"), record.get("version")


def _said(record: dict[str, Any]) -> str:
    if record.get("origin") == "built-in":
        return "the built-in scorer"
    code = f"SHA-256 {str(record.get('sha256'))[:12]}"
    return f"{record.get('where')} ({code}, version {record.get('version')})" \
        if record.get("version") else f"{record.get('where')} ({code})"


def score_rows(run_dir: Path, rows: list[SampleRow], scorers: dict[str, Scorer], llm: LLM,
               articles: dict[str, Article], repeats: int = 1,
               concurrency: int = 8) -> dict[str, Any]:
    """Score what is pending; the caller holds the run directory (harness/core/rundir.py). Returns
    counts: items done now, skipped as finished before, and per scorer by status."""
    check_same_models(run_dir, scorers, llm)
    items = pending(run_dir, rows, scorers, repeats)
    writer = JsonlWriter(run_dir / SCORES)

    def one(item: Item) -> ScoreRow:
        row, name, repeat = item
        written = _score_one(row, scorers[name], name, llm, articles, repeat)
        writer.write(written)
        return written

    try:
        done = map_with_progress(one, items, concurrency, desc=f"{run_dir.name} scores",
                                 unit="score")
    finally:
        writer.close()
    total = sum(row["status"] == "ok" and row.get("answer") is not None for row in rows)
    counts: dict[str, dict[str, int]] = {name: {} for name in scorers}
    for written in done:
        by = counts[written["scorer"]]
        by[written["status"]] = by.get(written["status"], 0) + 1
    return {"scored_now": len(done), "skipped": total * len(scorers) * repeats - len(items),
            "by_scorer": counts}


def _score_one(row: SampleRow, scorer: Scorer, name: str, llm: LLM,
               articles: dict[str, Article], repeat: int) -> ScoreRow:
    recorder = Recorder(llm)
    started = time.monotonic()
    try:
        result = checked_score(scorer, name, recorder, score_input(row, articles, repeat))
    except EndpointUnreachable:
        raise
    except ContextTooLong as err:  # will not fit next time either: finished, unscored
        result = unscored(f"too long for the {scorer.role} model: {err}")
    except EndpointError as err:
        result = ScoreResult("failed", reason=str(err))
    written = score_row(row, name, repeat, result, recorder.calls, time.monotonic() - started)
    source = plugins.lookup(name)
    if not source.builtin:
        written["source"] = source.record()
    return written


def checked_score(scorer: Scorer, name: str, llm: LLM, item: ScoreInput) -> ScoreResult:
    """`scorer.score`, with what a scorer's own code (a user's) does wrong made a failed result,
    never a traceback or a row its readers refuse: an exception of its own (freshrag's, an
    endpoint's, the budget's or a walk's stop, go on up), or a value no score row can hold. The
    pass and the walks of a run's plan score through this."""
    try:
        result = scorer.score(llm, item)
    except FreshragError:
        raise
    except Exception as err:  # the scorer's own code: this score fails, the pass goes on
        return ScoreResult("failed", reason=f"scorer {name!r} raised {said(err)}"[:2000])
    problem = result_problem(result)
    if problem:
        return ScoreResult("failed", reason=f"scorer {name!r} returned {problem}"[:2000])
    return result


def result_problem(result: Any) -> str | None:
    """What keeps `result` from being a ScoreResult that a score row holds, or None."""
    if not isinstance(result, ScoreResult):
        return f"a {type(result).__name__}, not a ScoreResult"
    if result.status not in STATUSES:
        return f"the status {result.status!r:.40}, not one of {', '.join(STATUSES)}"
    metrics = result.metrics
    if not isinstance(metrics, dict) or not all(
            isinstance(key, str) and isinstance(value, (int, float))
            and not isinstance(value, bool) and math.isfinite(value)
            for key, value in metrics.items()):
        return f"metrics {metrics!r:.80}, not names mapped to finite numbers"
    if not isinstance(result.reason, (str, type(None))):
        return f"a reason {result.reason!r:.80}, not text"
    if not isinstance(result.details, dict):
        return f"details {result.details!r:.80}, not an object"
    try:
        dumps(result.details)
    except (TypeError, ValueError) as err:  # what the score row's writer would refuse
        return f"details that JSON cannot hold ({err})"
    return None


class Recorder:
    """The LLM as one score sees it: every call kept, for its row's usage and raw replies."""

    def __init__(self, llm: LLM):
        self.llm = llm
        self.calls: list[LLMResponse] = []

    def chat(self, role: str, messages: list[dict[str, Any]], **options: Any) -> LLMResponse:
        response = self.llm.chat(role, messages, **options)
        self.calls.append(response)
        return response
