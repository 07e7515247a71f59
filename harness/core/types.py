"""Core types shared by the harness, the systems and the builders.

Everything that crosses a module boundary is one of these small values. A RAG strategy plugs in
through the `System` Protocol (section IV of the paper); every LLM call comes back as an
`LLMResponse`, never a bare string, so that usage, latency and the messages sent travel with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Literal, Protocol, TypeVar, runtime_checkable

# `labeller`: labels questions (builders/labels/labeller.py); `scorer`: every scorer beyond the judge
# (harness/scoring/), counted apart from the judge's tokens
ROLES = ("answer", "decision", "judge", "builder", "labeller", "embeddings", "scorer")
ARTICLE_CHARS = 15_000  # the paper cuts articles to 15,000 characters wherever they enter a prompt
# Question labels by how the gold article answers (docs/methods.md#question-labels); a labeller
# whose reply could not be parsed gives "unknown".
LABELS = ("fact_single", "summary", "reasoning", "unanswerable")
# Traffic kinds (docs/methods.md#retrieval-need-and-deciders): fresh questions about post-cutoff
# articles, control questions about articles the model saw, general queries needing no document.
KINDS = ("fresh", "control", "general")
# Wording criteria of grounded text forms (docs/grounded.md#text-forms):
# per axis, the two values a paired test compares within semantic groups.
WORDING_AXES = {"length": ("short", "long"), "style": ("formal", "casual"),
                "directness": ("direct", "indirect")}
# What a model that classifies (the labeller, the recency classifier) is recorded as saying when
# its reply could not be parsed.
UNKNOWN = "unknown"
# The kinds of step in an answer's trajectory (docs/run-format.md#steps)
STEP_KINDS = ("decide", "search", "read", "reason", "answer")
# Why an agent's answer was cut short (SystemAnswer.stopped; docs/methods.md#agents)
STOPS = ("max_steps", "budget")
# What a system declares it is (Declarations.kind; docs/own-system.md)
SystemKind = Literal["fixed", "decides", "agent"]
SYSTEM_KINDS: tuple[SystemKind, ...] = ("fixed", "decides", "agent")
DEFAULT_MAX_STEPS = 5  # an agent's most model calls for one answer (--max-steps)
DEFAULT_TOKEN_BUDGET = 32_000  # an agent's most tokens, in and out, for one answer (--token-budget)


@dataclass(frozen=True)
class Article:
    """A gold article: the ground truth the judge sees (and the oracle system, by design)."""

    title: str
    content: str
    url: str | None = None
    created: str | None = None

    def full_text(self) -> str:
        return f"{self.title}\n\n{self.content}"

    def prompt_text(self) -> str:
        """Title + text, cut to the paper's 15,000 characters."""
        return self.full_text()[:ARTICLE_CHARS]


@dataclass(frozen=True)
class Question:
    """One question tied to the article that answers it, or to the articles that answer it
    together (a multi-article question: docs/methods.md#multi-article-questions)."""

    id: str
    text: str
    gold_title: str | None  # None for a general query (kind "general"): no article answers it
    # What a question set may say about each question, None where it says nothing. Reports break
    # their tables down by these; a row carries them (samples.sample_row).
    label: str | None = None             # one of LABELS, or "unknown"
    information_need: str | None = None  # the information need it was generated for
    kind: str | None = None              # one of KINDS
    need: bool | None = None             # retrieval needed, known by construction
    reference: str | None = None         # a reference answer: a statement, an SQL result
    group: str | None = None             # semantic group: the questions sharing one meaning
    criterion: str | None = None         # the wording criterion this text form was written under
    # A multi-article question's gold articles in hop order, the first being `gold_title`; empty
    # for a one-article question. `hops` is their number, `multihop` "bridge" or "comparison".
    gold_titles: tuple[str, ...] = ()
    hops: int | None = None
    multihop: str | None = None
    # A changed fact (docs/building.md#changed-facts): its value at the cutoff, `reference`
    # being its value now, and how often it changes, "fast" or "slow"; `premise` "false" for a
    # question that presumes the value then still holds, "none" for one that presumes nothing
    value_then: str | None = None
    change: str | None = None
    premise: str | None = None
    # When its value now was set (a timestamp): the month the effective cutoff orders it by
    # (docs/cutoff.md#from-changed-facts); rows do not carry it
    changed_at: str | None = None

    @property
    def golds(self) -> tuple[str, ...]:
        """Every gold article's title in hop order: one for a one-article question, none for a
        general query."""
        if self.gold_titles:
            return self.gold_titles
        return (self.gold_title,) if self.gold_title else ()

    def fields(self) -> dict[str, Any]:
        """The optional fields above, as a row carries them (`gold_titles` a list, or null)."""
        fields = {name: getattr(self, name) for name in QUESTION_FIELDS}
        fields["gold_titles"] = list(self.gold_titles) or None
        return fields


QUESTION_FIELDS = ("label", "information_need", "kind", "need", "reference", "group", "criterion",
                   "gold_titles", "hops", "multihop", "value_then", "change", "premise")
# How the articles of a multi-article question answer it (docs/methods.md#multi-article-questions)
MULTIHOP = ("bridge", "comparison")


@dataclass(frozen=True)
class Usage:
    """Tokens spent by one or more calls. `estimated` is true when any part was counted locally."""

    input: int = 0
    output: int = 0
    estimated: bool = False

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input + other.input, self.output + other.output,
                     self.estimated or other.estimated)


@dataclass(frozen=True)
class LLMResponse:
    """What one chat call returned, with everything needed to account for it."""

    role: str
    model: str
    text: str | None
    tool_name: str | None
    tool_arguments: str | None  # raw JSON text as the endpoint sent it; callers parse strictly
    usage: Usage
    latency_s: float
    cache_hit: bool
    messages: list[dict[str, Any]]
    # Per generated token {"token", "logprob", "top": [{"token", "logprob"}]} when the call asked
    # for log-probabilities (`top_logprobs`) and the endpoint gave them; None otherwise.
    logprobs: list[dict[str, Any]] | None = None
    # The reply came from the OpenAI Batch API (harness/cost/batch.py), so reports price it at the
    # batch rate (harness/reporting/prices.py); a reply asked live, or cached before, is False.
    batch: bool = False


class LLM(Protocol):
    """The LLM client as systems, the judge and the builders see it."""

    def chat(self, role: str, messages: list[dict[str, Any]], *,
             tools: list[dict[str, Any]] | None = None, tool_choice: str | None = None,
             temperature: float = 0.0, max_tokens: int | None = None,
             attempt: int = 0, top_logprobs: int | None = None) -> LLMResponse:
        """One chat completion. `tool_choice` is None, "auto" or the name of a function to force.
        `attempt` > 0 asks for a fresh call that a cached earlier attempt cannot answer (sent
        with seed + attempt when a seed is set). Empty or unparseable replies are never cached.
        `top_logprobs` asks for that many alternatives per token (`LLMResponse.logprobs`)."""
        ...


@dataclass(frozen=True)
class Step:
    """One step of an answer's trajectory (docs/run-format.md#steps), with the calls it made: a
    step's tokens per role and its latency are its calls'. A call belongs to one step only."""

    kind: str  # one of STEP_KINDS
    calls: tuple[LLMResponse, ...] = ()
    query: str | None = None  # what a search searched for
    retrieved: tuple[RetrievedChunk, ...] = ()  # what a search found, best first
    title: str | None = None  # the article a read step reads whole
    text: str | None = None  # a decision's label, a reasoning step's text, an answer's text

    def __post_init__(self) -> None:
        if self.kind not in STEP_KINDS:  # a user's step: named here, not in a reader's refusal
            raise ValueError(f"a step's kind must be one of {', '.join(STEP_KINDS)}, "
                             f"got {self.kind!r:.40}")


@dataclass
class SystemAnswer:
    """A system's answer to one question and everything it spent getting there."""

    text: str
    calls: list[LLMResponse] = field(default_factory=list)
    retrievals: int | None = 0  # None: a system outside freshrag did not say
    details: dict[str, Any] = field(default_factory=dict)  # strategy-specific: decision, chunks, cuts
    # The answer's own latency where the system knows it better than freshrag's clock can (an
    # answers file made elsewhere); None: the runner times `answer` itself.
    latency_s: float | None = None
    steps: list[Step] = field(default_factory=list)  # its trajectory; empty: not reported
    # why an agent stopped before it chose to answer: "max_steps" (its most calls made) or
    # "budget" (its tokens for one question spent); None: it answered when it chose to
    stopped: str | None = None

    def usage_by_role(self) -> dict[str, Usage]:
        return sum_usage_by_role(self.calls)


class System(Protocol):
    """A RAG strategy: one object with one method. What else it may declare, each optional, is
    `Declarations` (read through `uses_index`, `uses_date` and `call_shape`) and `StandIn`."""

    def answer(self, question: Question) -> SystemAnswer: ...


@dataclass(frozen=True)
class CallShape:
    """The chat calls one answer of a system makes, per role: the fewest and the most. A system
    whose calls follow its decisions gives their range; one that loops gives its loop's bound
    (an agent's most steps). A walk (docs/costs.md#dry-run) holds a system to its most."""

    calls: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def steps(self) -> tuple[int, int]:
        """The fewest and the most calls of one answer, over every role."""
        return (sum(low for low, _ in self.calls.values()),
                sum(high for _, high in self.calls.values()))


class Declarations:
    """What a system may declare besides `answer`, with the defaults of one that declares
    nothing; the built-in systems inherit it, a user's may (docs/own-system.md)."""

    uses_index: bool = False  # asks for the retrieval index as `context.retriever`
    uses_date: bool = False  # states today's date and the knowledge cutoff: part of a run's identity
    uses_endpoint: bool = False  # runs an agent framework on `context.endpoint` (own-system.md)
    # bounded by the run's max_steps and token_budget, which are part of a run's identity while
    # it runs
    uses_steps: bool = False
    call_shape: CallShape | None = None  # None: not declared, so nothing holds it to a bound
    # what the report takes it for (docs/reports.md#the-three-way-router): "fixed" retrieves
    # the same way for every question, "decides" decides per question whether to retrieve (a
    # decider or a router), "agent" searches in as many steps as it chooses
    kind: SystemKind = "fixed"


def system_kind(factory: object) -> SystemKind:
    """What a system's class (or factory) declares it is (`Declarations.kind`): "fixed" unless
    it declares "decides" or "agent"."""
    kind = getattr(factory, "kind", "fixed")
    return kind if kind in SYSTEM_KINDS else "fixed"


def uses_index(factory: object) -> bool:
    """Whether a system's class (or factory) asks for the retrieval index."""
    return bool(getattr(factory, "uses_index", False))


def uses_endpoint(factory: object) -> bool:
    """Whether a system's class (or factory) runs an agent framework on `context.endpoint`."""
    return bool(getattr(factory, "uses_endpoint", False))


def uses_date(factory: object) -> bool:
    """Whether a system's class (or factory) states today's date and the knowledge cutoff."""
    return bool(getattr(factory, "uses_date", False))


def uses_steps(factory: object) -> bool:
    """Whether a system's class (or factory) is an agent bounded by the run's max_steps and
    token_budget (systems/agent.py), which are then part of the run's identity."""
    return bool(getattr(factory, "uses_steps", False))


def call_shape(system: object) -> CallShape | None:
    """The shape a built system declares of its calls, None if it declares none."""
    shape = getattr(system, "call_shape", None)
    return shape if isinstance(shape, CallShape) else None


@runtime_checkable
class StandIn(Protocol):
    """A system that calls out of freshrag (a service): a walk of the run's calls asks
    `stand_in` instead of `answer`, an answer of typical length that asks nothing."""

    def stand_in(self, question: Question) -> SystemAnswer: ...


@dataclass(frozen=True)
class Grade:
    """The judge's verdict, with its `reason` when it gave one. Unscored grades keep why they
    are unscored and the raw output; never a score."""

    truthfulness: int | None
    relevance: int | None
    unscored_reason: str | None = None
    raw: list[str | None] = field(default_factory=list)  # tool arguments of every judge attempt
    # {"chars", "halvings"} when the article was halved to fit the judge's window, else None
    context_cut: dict[str, int] | None = None
    # the judge's one line on why it graded so (harness/scoring/judge.py); None if it gave none
    reason: str | None = None

    @property
    def scored(self) -> bool:
        return self.unscored_reason is None


def sum_usage_by_role(calls: list[LLMResponse]) -> dict[str, Usage]:
    """Add up usage per role, the one place where calls become totals."""
    totals: dict[str, Usage] = {}
    for call in calls:
        totals[call.role] = totals.get(call.role, Usage()) + call.usage
    return totals


@dataclass(frozen=True)
class RetrievedChunk:
    """One chunk the retrieval index returned: its article, its place in it, and its similarity."""

    title: str
    index: int
    text: str
    score: float


class Retriever(Protocol):
    """The retrieval index as systems see it."""

    def retrieve(self, query: str) -> list[RetrievedChunk]:
        """The top-k chunks for a query text, best first."""
        ...

    def record(self) -> dict[str, Any]:
        """What the run manifest keeps about the index (collection, chunking, embedding model)."""
        ...


T = TypeVar("T")


class EndpointSession(Protocol):
    """One answer's OpenAI-compatible endpoint (harness/llm/forward.py): an agent framework
    pointed at `base_url` with `api_key` has each chat call made by the run's LLM on the
    answering thread, while `run` runs it; `search` asks the run's index for its tool; `answer`
    gives the calls, searches and steps as the `SystemAnswer` (docs/own-system.md)."""

    base_url: str
    api_key: str

    def run(self, agent: Callable[[], T]) -> T: ...

    def search(self, query: str) -> str: ...

    def answer(self, text: str, stopped: str | None = None) -> SystemAnswer: ...


@dataclass(frozen=True)
class SystemContext:
    """What a system may use: the LLM client, the corpus (the oracle reads its gold article), the
    retrieval index (None when no chosen system retrieves), and, for the dated decision prompt,
    today's date and the answering model's knowledge cutoff."""

    llm: LLM
    articles: dict[str, Article]
    retriever: Retriever | None = None
    today: str | None = None
    knowledge_cutoff: str | None = None
    context_tokens: int = 8192  # the answering model's context window, for cutting retrieved text
    # An agent's bounds for one answer (systems/agent.py): its most model calls, and its most
    # tokens in and out (None: no bound but the calls')
    max_steps: int = DEFAULT_MAX_STEPS
    token_budget: int | None = DEFAULT_TOKEN_BUDGET
    # An OpenAI-compatible endpoint for one answer by a role's model, for an agent framework
    # (`with context.endpoint("answer") as session:`); None where the run serves none
    endpoint: Callable[[str], ContextManager[EndpointSession]] | None = None
