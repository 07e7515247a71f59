"""The dry run's estimate: what walked jobs would cost, per role and model, before any call is
made.

Every job (a run's pairs and judge probes as its plan gives them, harness/run/plan.py; a score
pass's scores; a build's articles) is walked through its own code with a
`freshrag.cost.plan.Planner`: calls the response cache holds cost nothing; every other call gets a
made-up reply and is counted: input tokens over the request `LLMClient.prepare` builds (the
bytes a live call would send), by the embedded model's own tokenizer for a role the embedded
server plays (harness/llm/local_tokens.py: the prompt as its chat handler renders it), else by
tiktoken; output tokens from the mean of the cached replies of the same role, model and kind
(text or tool call), else from the request's `max_tokens`. Each row names its tokenizer.

A system whose number of calls depends on its decisions (boolean, advanced, dated-boolean) is
walked twice: once with every decision against retrieval, the model answering at once (low),
once with every decision for it (high); the table gives both. A system that loops is held to
the most calls its `call_shape` declares (harness/core/types.py), so its high scenario ends at
its loop's bound. Lists in made-up replies follow
the scenario too: as short as their schema allows (low), or `MADE_UP_ITEMS` long (high), so a
scorer whose later calls depend on a list (faithfulness and claims check the statements found)
gets the range from "nothing found, no further call" to "statements found, checked".

Retrieval is not run (a dry run embeds nothing): a retrieving system gets `top_k` chunks of the
corpus, cut as the index cuts them and picked by a hash of the query, so its prompts are as
long as typical ones. Dollars come from harness/cost/prices.py, halved under `--batch`
(the OpenAI Batch API's discount). docs/costs.md#dry-run; the systems: docs/methods.md#systems;
the scorers: docs/scoring.md#scorers.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, cast

from freshrag.core import tables
from freshrag.core.types import RetrievedChunk
from freshrag.cost.budget import BATCH_DISCOUNT
from freshrag.cost.plan import Job, PlannedCall, Planner, Walked, walk
from freshrag.llm import local_tokens
from freshrag.llm.client import LLMClient
from freshrag.llm.tokens import TiktokenCounter
from freshrag.retrieval.chunking import chunk_articles

DEFAULT_OUTPUT = 512  # tokens assumed for a text reply with no max_tokens and nothing observed
SCENARIOS = ("low", "high")  # decisions against retrieval / for it
MADE_UP_ITEMS = 3  # items of a made-up list in the high scenario, within the schema's bounds


class StandInRetriever:
    """`top_k` corpus chunks per query, picked by a hash of it: the length of real retrievals
    without embedding anything."""

    def __init__(self, articles: dict[str, Any], chunk_size: int, chunk_overlap: int, top_k: int):
        self.chunks = chunk_articles(articles.values(), chunk_size, chunk_overlap)
        self.top_k = top_k

    def retrieve(self, query: str) -> list[RetrievedChunk]:
        start = int(hashlib.sha256(query.encode()).hexdigest(), 16) % max(len(self.chunks), 1)
        picked = [self.chunks[(start + i) % len(self.chunks)]
                  for i in range(min(self.top_k, len(self.chunks)))]
        return [RetrievedChunk(c.title, c.index, c.text, 1.0 - i / 10)
                for i, c in enumerate(picked)]

    def record(self) -> dict[str, Any]:
        return {"stand_in": True, "chunks": len(self.chunks), "top_k": self.top_k}


def observed_outputs(client: LLMClient) -> dict[tuple[str, str, str], float]:
    """Mean output tokens of the cached replies per (role, model, "text" or "tool")."""
    totals: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for value in client.cache.values() if client.cache else []:
        if "role" in value and "model" in value:
            kind = "tool" if value.get("tool_name") else "text"
            totals[value["role"], value["model"], kind].append(value["usage"]["output"])
    return {key: sum(v) / len(v) for key, v in totals.items()}


# What counts a role's requests: `count_request(request, tool_name, arguments, text)` gives
# (input, output) tokens, `name` says which tokenizer (harness/llm/tokens.py, harness/llm/local_tokens.py)
Counters = Callable[[str, str], Any]


def counters(client: LLMClient) -> Counters:
    """Per (role, model): the embedded model's own tokenizer for a role the embedded server
    plays (where llama-cpp-python and the model are installed), else tiktoken."""
    local_roles = {role for role in client.settings.roles if client.settings.role(role).is_local}
    local = local_tokens.embedded() if local_roles else None
    return lambda role, model: local if local and role in local_roles else _tiktoken(model)


@functools.lru_cache(maxsize=None)
def _tiktoken(model: str) -> TiktokenCounter:
    return TiktokenCounter(model)


class MadeUpReply:
    """A dry run's answer to a call the cache does not hold: a reply of the kind the request asks
    for, with the decision of the scenario, and its token counts."""

    def __init__(self, retrieve: bool, observed: dict[tuple[str, str, str], float],
                 counter: Counters):
        self.retrieve = retrieve
        self.observed = observed
        self.counter = counter

    def __call__(self, role: str, request: dict[str, Any], key: str) -> dict[str, Any]:
        model = request["model"]
        tools: list[dict[str, Any]] = request.get("tools") or []
        forced = request.get("tool_choice")
        counter = self.counter(role, model)
        if isinstance(forced, dict) or (tools and self.retrieve):
            name = forced["function"]["name"] if isinstance(forced, dict) else \
                tools[0]["function"]["name"]
            schema = next(t["function"]["parameters"] for t in tools
                          if t["function"]["name"] == name)
            arguments = json.dumps(_fill(schema, self.retrieve, key[:8]))
            input_tokens, counted = counter.count_request(request, name, arguments)
            output = self.observed.get((role, model, "tool"), counted)
            return _value(None, name, arguments, input_tokens, output, counter.name)
        output = self.observed.get((role, model, "text"),
                                   request.get("max_tokens") or DEFAULT_OUTPUT)
        # the judge reads an answer this long; the key in it keeps two systems' made-up answers
        # (and so their judge calls) apart, as real answers are
        text = " ".join([key[:8]] + ["word"] * max(int(output) - 1, 0))
        input_tokens, _ = counter.count_request(request, text=text)
        return _value(text, None, None, input_tokens, output, counter.name)


def _value(text: str | None, tool: str | None, arguments: str | None, input_tokens: int,
           output: float, tokenizer: str) -> dict[str, Any]:
    return {"text": text, "tool_name": tool, "tool_arguments": arguments, "latency_s": 0.0,
            "usage": {"input": input_tokens, "output": round(output), "estimated": True},
            "tokenizer": tokenizer}


def _fill(schema: dict[str, Any], flag: bool, tag: str) -> Any:
    """Arguments that satisfy a tool's schema: booleans and list lengths take the scenario's;
    strings are the call's `tag`, so that two calls' made-up statements (and the requests that
    check them) differ, as real ones do."""
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][len(schema["enum"]) // 2]
    if kind == "object":
        return {name: _fill(sub, flag, tag) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        least = schema.get("minItems", 0)
        most = schema.get("maxItems", MADE_UP_ITEMS)
        n = min(max(MADE_UP_ITEMS, least), most) if flag else least
        return [_fill(schema.get("items", {}), flag, tag) for _ in range(n)]
    made: dict[Any, Any] = {"boolean": flag, "integer": schema.get("minimum", 1), "number": 1.0,
                            "string": tag}
    return made.get(kind)


@dataclass
class Line:
    """The calls of one role and model (or of one system) in one scenario."""

    calls: int = 0
    cached: int = 0  # answered by the response cache as it is now
    repeated: int = 0  # a request planned before in this walk: sent once, then read back
    tokens: dict[str, list[int]] = field(default_factory=dict)  # model -> [input, output]
    tokenizers: set[str] = field(default_factory=set)  # what counted the calls to make

    @property
    def input(self) -> int:
        return sum(pair[0] for pair in self.tokens.values())

    @property
    def output(self) -> int:
        return sum(pair[1] for pair in self.tokens.values())

    def usd(self, prices: dict[str, tuple[float, float]], discount: float) -> float | None:
        """What the calls to make cost; None when a model among them has no price."""
        if any(model not in prices for model in self.tokens):
            return None
        return round(discount * sum(i * prices[m][0] + o * prices[m][1]
                                    for m, (i, o) in self.tokens.items()) / 1e6, 6)


# What a line of the tally is: (role, model) for the table per role, (group,) per system
By = Callable[[Walked, PlannedCall], tuple[Any, ...]]


def tally(walked: list[Walked], cached_run: bool = True,
          by: By = lambda item, call: (call.role, call.request["model"])) -> dict[tuple[Any, ...], Line]:
    """Calls and tokens per line (`by`: per role and model unless told). A request planned twice
    (advanced's first answer is baseline's answer; one question asked twice) is sent once and
    then read from the cache: a call where the plan (`walked` in its order) first makes it, a
    repeat after, unless the
    run keeps no cache (`--no-cache`, `cached_run` false), which sends it each time."""
    lines: dict[tuple[Any, ...], Line] = defaultdict(Line)
    sent: set[str] = set()
    for item in walked:
        for call in item.calls:
            line = lines[by(item, call)]
            if call.cached:
                line.cached += 1
            elif cached_run and call.key in sent:
                line.repeated += 1
            else:
                sent.add(call.key)
                line.calls += 1
                tokens = line.tokens.setdefault(call.request["model"], [0, 0])
                tokens[0] += call.value["usage"]["input"]
                tokens[1] += call.value["usage"]["output"]
                line.tokenizers.add(call.value["tokenizer"])
    return lines


def estimate(client: LLMClient, jobs: list[Job], prices: dict[str, tuple[float, float]],
             batch: bool = False, concurrency: int = 8,
             observed: dict[tuple[str, str, str], float] | None = None,
             cached_run: bool = True) -> dict[str, Any]:
    """The estimate of `jobs` (a run's plan, a score pass's, a build's): per role and model, and
    per system where the jobs have one (`Job.group`), calls, tokens and dollars in each scenario.
    `observed`: output lengths to assume instead of the client's cache's
    (tests/benchmarks/bench_estimate.py); `cached_run`: false for a command run with --no-cache,
    which sends a request as often as it is made (tally)."""
    observed = observed_outputs(client) if observed is None else observed
    counter = counters(client)
    order = {id(job): n for n, job in enumerate(jobs)}  # a walk ends jobs in any order
    walks = {name: sorted(walk(jobs, Planner(client, MadeUpReply(name == "high", observed,
                                                                  counter)),
                               concurrency, desc=f"dry run ({name})"),
                          key=lambda item: order[id(item.job)]) for name in SCENARIOS}
    discount = BATCH_DISCOUNT if batch else 1.0
    by_role = {name: tally(walked, cached_run) for name, walked in walks.items()}
    rows = [{"role": role, "model": model,
             **_figures([by_role[name].get((role, model), Line()) for name in SCENARIOS],
                        prices, discount),
             "tokenizer": ", ".join(sorted(set().union(*(by_role[name].get((role, model), Line())
                                                        .tokenizers for name in SCENARIOS))))
             or None}
            for role, model in sorted(set(by_role["low"]) | set(by_role["high"]))]
    by_system = {name: tally(walked, cached_run, lambda item, call: (item.job.group,))
                 for name, walked in walks.items()}
    groups = list(dict.fromkeys(job.group for job in jobs if job.group is not None))
    systems = [{"system": group, **_figures([by_system[name].get((group,), Line())
                                             for name in SCENARIOS], prices, discount)}
               for group in groups]
    return {"jobs": len(jobs), "batch": batch, "rows": rows, "systems": systems,
            "output_from": {"/".join(key): round(mean, 1) for key, mean in observed.items()}}


def _figures(lines: list[Line], prices: dict[str, tuple[float, float]],
             discount: float) -> dict[str, Any]:
    """A line's figures in the two scenarios, each as [least, most]: answering at once costs
    fewer calls, but a long direct answer may cost more output than a tool call."""
    usd = [line.usd(prices, discount) for line in lines]
    return {"calls": sorted(line.calls for line in lines),
            "cached_calls": sorted(line.cached for line in lines),
            "repeated_calls": sorted(line.repeated for line in lines),
            "input_tokens": sorted(line.input for line in lines),
            "output_tokens": sorted(line.output for line in lines),
            "usd": None if None in usd else sorted(cast(list[float], usd))}


def render(result: dict[str, Any], walked: str = "pairs and judge probes",
           spans: str = "every decision against retrieval and every decision for it") -> str:
    """The estimate as markdown tables, per role and model then per system; a range `low–high`
    where decisions change it. `walked` and `spans`: what the jobs were and what a range spans,
    for the last line."""
    if not result["rows"]:  # a table of no role would be its header alone
        return (f"dry run: {result['jobs']} {walked} walked, none left to call a model for: "
                "the work is done.")
    lines = tables.header(["role", "model", "calls", "from cache", "repeats", "input tokens",
                           "output tokens", "USD", "tokenizer"])
    for row in result["rows"]:  # a model's name is the user's (freshrag.toml): escaped
        lines.append(tables.row([row["role"], row["model"], *_cells(row),
                                 row["tokenizer"] or "–"]))
    usd = [row["usd"] for row in result["rows"]]
    if usd and all(u is not None for u in usd):
        total = [sum(u[i] for u in usd) for i in (0, 1)]
        lines.append(tables.row([tables.Markdown("**total**"), "", "", "", "", "", "",
                                 _span(total, "${:,.4f}"), ""]))
    if result.get("systems"):  # a system's name is the user's: escaped
        lines += ["", *tables.header(["system", "calls", "from cache", "repeats", "input tokens",
                                      "output tokens", "USD"])]
        lines += [tables.row([row["system"], *_cells(row)]) for row in result["systems"]]
    lines.append("")
    lines.append(f"dry run: {result['jobs']} {walked} walked, no call made"
                 + (" (prices with the batch discount)" if result["batch"] else "")
                 + f"; a range spans {spans}.")
    lines.append("`from cache`: what the response cache answers now; `repeats`: a request "
                 "planned again (by another pair or system), sent once and then read from the "
                 "cache"
                 + ("; per system, a request is counted where the plan first makes it."
                    if result.get("systems") else "."))
    return "\n".join(lines)


def _cells(row: dict[str, Any]) -> list[str]:
    """calls, from cache, repeats, input tokens, output tokens and USD of a row."""
    return [_span(row["calls"]), _span(row["cached_calls"]), _span(row["repeated_calls"]),
            _span(row["input_tokens"]), _span(row["output_tokens"]),
            _span(row["usd"], "${:,.4f}")]


def _span(pair: list[Any] | None, fmt: str = "{:,}") -> str:
    if pair is None:
        return "unpriced"
    low, high = (fmt.format(v) for v in pair)
    return low if low == high else f"{low}–{high}"


class _LocalModelId:
    """The embedded model as the cache keys it, without starting its server."""

    base_url = "local"

    def __init__(self, model_id: str):
        self.model_id = model_id

    def death(self) -> None:
        return None


def local_stand_in() -> _LocalModelId | None:
    """So that a dry run finds the embedded model's cached replies (None: no model installed)."""
    from freshrag.llm import local_server
    try:
        return _LocalModelId(local_server.model_id(local_server.gguf_path()))
    except Exception:  # no packaged model here: its calls are then all counted as uncached
        return None
