"""The records of a run directory, typed once (docs/run-format.md): the row of samples.jsonl
(`SampleRow`) and its judge grade (`GradeRecord`), the row of scores.jsonl (`ScoreRow`) and what
reports attach of it to a row (`AnswerScore`), and manifest.json (`Manifest`).

The writers (core/samples.py `sample_row`, scoring/store.py `score_row`, the runner), the readers
and every report use these types. They are TypedDicts: a row stays the plain dict that json reads
and writes, so what is written is byte for byte what the docs describe, and the type checker
checks every look-up. The readers' shape check of a samples row (core/samples.py SAMPLE_FIELDS)
is derived from `SampleFields` below, and the judge's grade that a row takes from a judge pass
is merged by scoring/store.py (`judged`, into a summary; `with_judge_pass`, into a whole row).
"""

# No `from __future__ import annotations`: TypedDict reads NotRequired only from annotations
# evaluated as the class is made (Python 3.11), and the shape check reads its required keys.
from typing import Any, Literal, NotRequired, TypedDict, get_args


class UsageRecord(TypedDict):
    """Tokens of one role, summed over its calls (core/types.py Usage)."""

    input: int
    output: int
    # true when any part was counted locally because the endpoint reported none
    estimated: NotRequired[bool]


class CallRecord(TypedDict, total=False):
    """One LLM call as a row holds it (`calls[*]`, the same in scores.jsonl; core/types.py
    LLMResponse). A light read keeps only core/light.py CALL_SUMMARY of it."""

    role: str
    model: str
    text: str | None  # a text reply
    tool_name: str | None
    tool_arguments: str | None  # the raw JSON text of a tool call, as the endpoint sent it
    usage: UsageRecord
    latency_s: float
    cache_hit: bool  # answered from the response cache
    messages: list[dict[str, Any]]  # the messages actually sent
    # per generated token its log-probability and the top alternatives, when asked; else null
    logprobs: list[dict[str, Any]] | None
    # answered by the OpenAI Batch API, so priced at the batch rate; absent from rows written
    # before it existed, which are list price
    batch: bool


class ChunkRecord(TypedDict):
    """A chunk a search step found (core/types.py RetrievedChunk, without its text)."""

    title: str
    index: int  # its place in its article: the chunk's id with the title
    score: float


class StepRecord(TypedDict):
    """One step of an answer's trajectory (`steps[*]`; core/types.py Step as core/steps.py
    `step_records` writes it). Each field is written; a reader checks those present."""

    kind: Literal["decide", "search", "read", "reason", "answer"]
    query: NotRequired[str | None]  # a search's query; null for the other kinds
    retrieved: NotRequired[list[ChunkRecord]]  # what a search found, best first
    title: NotRequired[str | None]  # the article a read step read whole
    text: NotRequired[str | None]  # a decision's label, a reasoning step's text, an answer
    # a search whose query equals an earlier search's in the same answer
    repeated: NotRequired[bool]
    calls: NotRequired[int]  # how many of the row's calls the step made
    usage: NotRequired[dict[str, UsageRecord]]  # per role, summed over the step's calls
    latency_s: NotRequired[float]  # summed over the step's calls


class ContextCut(TypedDict):
    """How the article was halved to fit the judge's window."""

    chars: int
    halvings: int


# The judge's scores in a grade, each 1..5 (scoring/judge.py FIELDS)
GradeField = Literal["truthfulness", "relevance"]
GRADE_FIELDS: tuple[GradeField, ...] = ("truthfulness", "relevance")


class GradeRecord(TypedDict):
    """The judge's grade of a row (`grade`; core/types.py Grade as written): scores 1..5, null
    when unscored, with the reason it is unscored. Imported rows may hold 4.0 for 4."""

    truthfulness: float | None
    relevance: float | None
    unscored_reason: str | None  # null when scored
    raw: list[Any]  # the tool arguments of every attempt
    context_cut: NotRequired[ContextCut | None]  # when the article was halved to fit
    reason: NotRequired[str | None]  # the judge's one line on why; null when it gave none
    # never written: "freshrag score" on reading, when a judge pass gave the grade
    # (scoring/store.py judged, with_judge_pass)
    graded_by: NotRequired[str]


class AnswerScore(TypedDict):
    """Repeat 0 of one scorer for a row's answer, as reports attach it to the row (`scores`,
    scoring/store.py answer_scores): a ScoreRow's parts, and the model of each of its roles."""

    status: str
    metrics: dict[str, float]
    reason: str | None
    raw: list[Any] | None
    usage: dict[str, UsageRecord]
    answer_sha256: str | None
    details: dict[str, Any] | None
    models: dict[str, str]


# A row's `details.decision` (docs/run-format.md#samplesjsonl): a decider's verdict ("none": no
# usable one), or the router's route (systems/router.py), whose answer without retrieval is a
# decider's `no-retrieve` too (one name: `no-retrieval` is refused as any unknown value is); null
# for a system that does not decide
Decision = Literal["retrieve", "no-retrieve", "none", "one-retrieval", "multi-step"]
DECISIONS: tuple[str, ...] = get_args(Decision)


class SampleFields(TypedDict):
    """The fields of a samples.jsonl row that every reader may meet, each checked on reading
    (core/row_check.py sample_problem), in this order, against the JSON types of its annotation;
    the required ones are indexed directly, the others only looked at when present (rows made
    by hand and older rows may lack them; a light read leaves out those that are null)."""

    # the dataset's name (null in rows made by hand: the report takes the manifest's)
    dataset: NotRequired[str | None]
    question_id: str  # the question's id from the questions file (else `q` and its line number)
    question: NotRequired[str]  # its text
    gold_title: str | None  # the article that answers it; null only for a general query
    # a multi-article question's gold articles in hop order, `gold_title` first, their number and
    # how they answer it ("bridge", "comparison"); null for a one-article question
    gold_titles: NotRequired[list[str] | None]
    hops: NotRequired[int | None]
    multihop: NotRequired[str | None]
    system: str  # the system's name, as in --systems
    # which asking of the pair this row is, 1..N, in a run of --epochs N above 1 (on every row);
    # absent (or null) in a run of one epoch: 1
    epoch: NotRequired[int | None]
    # "failed": an LLM error after the retries, or an exception a system's own code raised
    # (`error` says why; tried again on resume)
    status: Literal["ok", "failed"]
    answer: NotRequired[str | None]  # the system's answer text (null when failed)
    # how many times the system retrieved; null when a system outside freshrag did not say
    retrievals: int | None
    usage: dict[str, UsageRecord]  # per role (answer, decision, judge, ...), summed over calls
    grade: GradeRecord | None
    # every LLM call the pair made (the system's, then the judge's); a failed row keeps those
    # that succeeded before the failure, so that the tokens of failed pairs are counted too
    calls: NotRequired[list[CallRecord]]
    # what the system reports about itself (decision, retrieved chunks, cuts; for a system
    # outside freshrag, `unknown`: what it did not report)
    details: NotRequired[dict[str, Any] | None]
    # the answer's trajectory, in order (empty when a system outside freshrag reported none);
    # absent from rows written before it existed
    steps: NotRequired[list[StepRecord]]
    # why an agent's answer was cut short: "max_steps" or "budget" (docs/methods.md#agents);
    # null when it answered as it chose, and in rows written before agents existed
    stopped: NotRequired[Literal["max_steps", "budget"] | None]
    latency_s: NotRequired[float | None]  # wall time of the pair, the judge included
    # the system's own: what it reported, else the wall time of its `answer`; null when none
    answer_latency_s: NotRequired[float | None]
    error: NotRequired[str | None]  # why the pair failed (null when ok)
    # more of why, where a system's own code raised: its traceback (absent otherwise)
    error_detail: NotRequired[str | None]
    finished_at: NotRequired[str | None]  # when the row was written (UTC, ISO 8601)


class SampleRow(SampleFields, total=False):
    """One row of samples.jsonl per (question, system), appended the moment the pair finishes
    (core/samples.py sample_row), with everything needed to recompute any table later."""

    # The question set's optional fields (core/types.py Question), null where the set has none;
    # checked when the questions file is read.
    label: str | None
    information_need: str | None
    kind: str | None
    need: bool | None
    reference: str | None
    group: str | None
    criterion: str | None
    value_then: str | None  # a changed fact's value at the cutoff (`reference`: its value now)
    change: str | None  # a changed fact's tag: "fast" or "slow"
    premise: str | None  # a changed fact's question: "false" if it presumes the value then
    models: dict[str, str]  # imported rows, which have no calls: the model of each role
    # Never written: what reports add on reading (reporting/report.py load_runs): the run
    # directory, and the scores of this answer by scorer
    run: str
    scores: dict[str, AnswerScore]


class ScoreRow(TypedDict):
    """One row of scores.jsonl per (dataset, question_id, system, scorer, repeat), appended as
    each finishes (scoring/store.py score_row), the last row of a key winning on reading."""

    dataset: NotRequired[str | None]  # with question_id and system: the samples row scored
    question_id: str
    system: str
    # of the answer text scored, so that a re-answered pair is scored again rather than
    # matched to a score of another answer
    answer_sha256: NotRequired[str]
    scorer: str
    repeat: int  # 0 first; `freshrag score --repeats N` gives 0..N-1
    # `scored`; `unscored` (the reply could not be used: `reason` and `raw`); `not_applicable`
    # (`reason`: e.g. nothing was retrieved); `failed` (an endpoint error: tried again on resume)
    status: str
    # numbers by name, only when scored (judge: truthfulness, relevance; faithfulness;
    # answer_relevance; context_relevance; claims_precision, claims_recall; abstained 1/0)
    metrics: dict[str, float]
    # what the scorer reports (statements and verdicts, generated questions, the abstention
    # verdict's source, cuts)
    details: NotRequired[dict[str, Any] | None]
    reason: NotRequired[str | None]
    raw: NotRequired[list[Any]]  # the raw replies
    # per role (`scorer`, or `judge` for judge repeats), as in samples.jsonl: a scorer's tokens
    # are never mixed with the system's or the run's judge's
    usage: dict[str, UsageRecord]
    calls: NotRequired[list[CallRecord]]
    latency_s: NotRequired[float]
    finished_at: NotRequired[str]
    # only for a user's scorer (docs/scoring.md#your-own-scorer): origin, where, sha256, version
    source: NotRequired[dict[str, Any]]


class Manifest(TypedDict, total=False):
    """manifest.json of a run (`kind` "run"), an import ("import") or a dataset ("dataset"):
    how it was made, written whole at every change (core/manifest.py). The parts a run's
    readers rely on are checked when read (core/manifest_shape.py)."""

    kind: str
    name: str  # the run directory's name
    # `name`, `files` (the questions and articles files), `sha256` of each, `questions` (how
    # many), and for a versioned set `version`
    dataset: dict[str, Any]
    systems: list[str]  # every system the run has answered with, across resumes
    # per system: `origin`, `where`, `sha256`, `version` (docs/own-system.md)
    system_sources: dict[str, Any]
    # per system: what it declares it is (`Declarations.kind`: fixed, decides, agent), which
    # the report reads (reporting/outcomes.py kind)
    system_kinds: dict[str, str]
    # limit, concurrency, cache, seed, today, knowledge_cutoff, context_tokens, max_steps,
    # token_budget, epochs (absent before --epochs: 1)
    config: dict[str, Any]
    # timeout_s, max_attempts, roles (per role model, base_url, api_key_env, api_key_set; never
    # a key) and resolved_base_urls
    llm: dict[str, Any]
    index: dict[str, Any] | None  # the retrieval index's record (null when nothing retrieved)
    prompts_sha256: dict[str, str]  # of every prompt and tool schema the run may send
    versions: dict[str, Any]  # Python and the packages that decide answers
    git_commit: str | None  # freshrag's commit, when run from a clone
    started_at: str | None
    resumed_at: list[str]
    finished_at: str | None  # null while running
    judge_probe: dict[str, Any] | None  # the probes' summary (null with --no-probe)
    capped: dict[str, Any] | None  # with --max-cost: max_cost, spent, calls, capped
    batch: dict[str, Any] | None  # with --batch
    shard: dict[str, int]  # with --shard i/N: index (i) and count (N) of the pairs it answers
    # of a run `freshrag merge` joined from shards: count (N), and per shard given its index,
    # dir and finished; missing and unfinished, the shards' indexes (docs/run-format.md)
    merged: dict[str, Any]
    format_version: int  # the layout's version; a newer one than this freshrag reads is refused
    # an import's: when, and per DATASET/SYSTEM the pickle's path, SHA-256, rows and time
    created_at: str
    imports: dict[str, Any]
    # a dataset's (builders/manifest.py, docs/building.md): its build's stages and settings,
    # where its articles and cutoff came from, the models and prompts of its builder, the
    # funnel of its questions, its traffic mix and its version (docs/living.md)
    stages: dict[str, Any]
    settings: dict[str, Any]
    source: str
    cutoff_source: str
    models: dict[str, Any]
    prompts: dict[str, str]
    min_critique: dict[str, Any]
    funnel: dict[str, Any]
    traffic: dict[str, Any]
    version: dict[str, Any]
