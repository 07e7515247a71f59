"""The LLM client: every chat call in freshrag goes through `LLMClient.chat`.

One `openai` SDK client per role endpoint, so any OpenAI-compatible server works (OpenAI, vLLM,
Ollama, llama.cpp); a chat request goes out as the SDK would send it, on the SDK's HTTP stack but
past its per-call machinery (harness/llm/wire.py). This is where usage is normalised into `Usage` (from the API's `usage`, or
counted with tiktoken and flagged estimated), where the response cache is consulted, and where
transient failures (rate limits, timeouts, connection errors, 5xx) are retried with bounded
exponential backoff and jitter (harness/llm/failures.py). Nothing else is retried. The request
and its cache key are built in harness/llm/request.py; a text is fitted to the model's window
by harness/llm/fitting.py.

Every attempt has a deadline for the whole exchange (`timeout_s`, harness/llm/deadline.py), and
a stop (SIGINT, SIGTERM) ends it within a second. Whatever comes back is checked before it is
used: a reply that is no JSON completion (an HTML page, a cut JSON body, a 5,000-digit number), a reply
without text or call, text or arguments over `MAX_REPLY_CHARS`, is an `EndpointError` naming the
role and endpoint, so the caller records that one call as failed and goes on. A 401 or 403 is
`AccessDenied`: the key is wrong for every call, so the run stops at the first and no other call
is sent to that endpoint with that key.

Only usable replies are cached: some text, or a tool call whose arguments are a JSON object. An
empty reply, or a tool call whose arguments do not parse, is returned to the caller (which
decides what it means: a missing question, an unscored grade, decision `none`) but never stored,
so that a resumed run or build asks again instead of replaying it. Attempt n of a request is sent
with seed + n, so that a retry on a seeded endpoint samples afresh rather than repeating itself.

With a cache, a request identical to one in flight (two systems whose first call is the same
answer, asked by pairs running at once) waits for that one and is answered from the cache, as it
would be had the pairs run one after the other: one request is paid for, not two, and a dry run's
count (which assumes the cache) holds. If the first one fails or its reply is not usable, the
waiting one asks itself.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Protocol

from tenacity import Retrying

from freshrag.core.config import LLMSettings, RoleConfig
from freshrag.core.types import LLMResponse
from freshrag.llm import deadline
from freshrag.llm.cache import ResponseCache
from freshrag.llm.errors import (
    AccessDenied,
    ContextTooLong,
    EndpointError,
    EndpointUnreachable,
    LocalServerDied,
)
from freshrag.llm.failures import (
    CONTEXT_OVERFLOW,
    connection_error,
    describe,
    refused_key,
    retrying,
    unreadable,
)
from freshrag.llm.replies import completion_value, is_usable
from freshrag.llm.request import chat_request, request_key, response
from freshrag.llm.tally import TALLY
from freshrag.llm.weights import LIST_TIMEOUT_S, asked
from freshrag.llm.wire import EMBEDDINGS_PATH, ChatRoute

# openai is imported where a call is made: importing it takes half a second, and every
# command's --help imports this module.
if TYPE_CHECKING:
    import openai


class LocalEndpoint(Protocol):
    """The embedded server as the client sees it (freshrag.llm.local_server.LocalServer)."""

    base_url: str
    model_id: str  # the model file's hash and the runtime's version, for the cache key

    def death(self) -> str | None:
        """Why the server is gone, or None while it runs."""
        ...


class CallGate(Protocol):
    """Asked before every call that the cache cannot answer (freshrag.cost.budget.Budget)."""

    def reserve(self, role: str, request: dict[str, Any]) -> Any:
        """A ticket for the call, or an exception that stops it being made."""
        ...

    def settle(self, ticket: Any, value: dict[str, Any] | None) -> None:
        """The call ended: with its reply, or None when it failed."""
        ...


class LLMClient:
    """Chat completions for every role, cached, retried and accounted."""

    def __init__(self, settings: LLMSettings, cache: ResponseCache | None = None,
                 local: LocalEndpoint | None = None, backoff_s: float = 1.0,
                 seed: int | None = None):
        self.settings = settings
        self.cache = cache
        self.local = local
        self.backoff_s = backoff_s
        self.seed = seed
        self.gate: CallGate | None = None  # a budget that may refuse a call (harness/cost/budget.py)
        self._clients: dict[tuple[str, str], tuple[openai.OpenAI, ChatRoute, ChatRoute]] = {}
        self._lock = threading.Lock()
        self._in_flight: dict[str, threading.Event] = {}  # cache key -> set when its call ends
        self._denied: dict[tuple[str, str], str] = {}  # (base URL, key) -> why it was refused
        # (base URL, model) -> what the endpoint says of its weights (harness/llm/weights.py);
        # its own lock: asking takes `_lock` (`_client`) and may take seconds
        self._weights: dict[tuple[str, str], str] = {}
        self._weights_lock = threading.Lock()
        self._told_stale: set[tuple[str, str]] = set()

    def base_url(self, role: str) -> str:
        cfg = self.settings.role(role)
        if not cfg.is_local:
            return cfg.base_url
        if self.local is None:
            raise EndpointError(f"role {role!r} uses the embedded local server, which is not running")
        return self.local.base_url

    def chat(self, role: str, messages: list[dict[str, Any]], *,
             tools: list[dict[str, Any]] | None = None, tool_choice: str | None = None,
             temperature: float = 0.0, max_tokens: int | None = None,
             attempt: int = 0, top_logprobs: int | None = None, epoch: int = 1) -> LLMResponse:
        cfg = self.settings.role(role)
        request, key = self.prepare(role, messages, tools=tools, tool_choice=tool_choice,
                                    temperature=temperature, max_tokens=max_tokens,
                                    attempt=attempt, top_logprobs=top_logprobs, epoch=epoch)
        cached = self._cached_or_lead(key)
        if cached is not None:
            return response(role, cfg.model, request["messages"], cached, cache_hit=True)
        try:
            gate = self.gate
            ticket = gate.reserve(role, request) if gate else None
            value = None
            try:
                value = self._call(role, cfg, request)
            finally:
                if gate and ticket is not None:
                    gate.settle(ticket, value)
            self.store(key, role, value)
        finally:
            self._land(key)
        made = response(role, cfg.model, request["messages"], value, cache_hit=False)
        TALLY.add(role, made.usage)
        return made

    def _cached_or_lead(self, key: str) -> dict[str, Any] | None:
        """The cached reply to `key`, waiting first for an identical call in flight; or None, and
        this thread now makes the call (`_land` ends it)."""
        while True:
            cached = self.cache.get(key) if self.cache else None
            if cached is not None or self.cache is None:
                return cached
            with self._lock:
                flight = self._in_flight.get(key)
                if flight is None:
                    self._in_flight[key] = threading.Event()
                    return None
            flight.wait()

    def _land(self, key: str) -> None:
        if self.cache is not None:
            with self._lock:
                self._in_flight.pop(key).set()

    def prepare(self, role: str, messages: list[dict[str, Any]], *,
                tools: list[dict[str, Any]] | None = None, tool_choice: str | None = None,
                temperature: float = 0.0, max_tokens: int | None = None,
                attempt: int = 0, top_logprobs: int | None = None,
                epoch: int = 1) -> tuple[dict[str, Any], str]:
        """The request body `chat` would send and its cache key: the one place a request is
        built (harness/llm/request.py), so that a dry run and a batch send exactly what a live
        call would; `epoch` (--epochs) is part of the key, never of the request."""
        cfg = self.settings.role(role)
        seed = None if self.seed is None else self.seed + attempt  # a retry samples afresh
        request = chat_request(cfg.model, messages, tools=tools, tool_choice=tool_choice,
                               temperature=temperature, max_tokens=max_tokens,
                               top_logprobs=top_logprobs, seed=seed)
        endpoint, weights = self._cache_endpoint(cfg), self._weights_of(role, cfg)
        if weights:
            self._tell_stale(cfg, request_key(endpoint, request, attempt, epoch))
        return request, request_key(endpoint, request, attempt, epoch, weights)

    def store(self, key: str, role: str, value: dict[str, Any]) -> bool:
        """Cache a usable reply (with its role and model, whose mean output a dry run reads);
        whether it was usable."""
        if not is_usable(value):
            return False
        if self.cache:
            self.cache.put(key, {**value, "role": role, "model": self.settings.role(role).model})
        return True

    def _cache_endpoint(self, cfg: RoleConfig) -> str:
        """The endpoint as the cache knows it: the configured base URL, or for the embedded
        server its model file's hash and runtime version (its port changes between runs, and a
        new model file or llama.cpp build must not replay the old one's replies)."""
        if cfg.is_local and self.local is not None:
            return f"{cfg.base_url}:{self.local.model_id}"
        return cfg.base_url

    def _weights_of(self, role: str, cfg: RoleConfig) -> str:
        """What the role's endpoint says about the weights behind its model name, asked once
        (harness/llm/weights.py); "" for the embedded server, whose model file keys it already."""
        if cfg.is_local:
            return ""
        with self._weights_lock:
            if (cfg.base_url, cfg.model) not in self._weights:
                def list_models() -> Any:
                    with deadline.within(LIST_TIMEOUT_S):
                        return self._client(role, cfg).with_options(
                            timeout=LIST_TIMEOUT_S).get("/models", cast_to=object)
                self._weights[cfg.base_url, cfg.model] = asked(list_models, cfg.model)
            return self._weights[cfg.base_url, cfg.model]

    def _tell_stale(self, cfg: RoleConfig, unweighed: str) -> None:
        """Say once per endpoint and model that the cache holds replies keyed on the name alone
        (`unweighed`: this request's key without the weights), which are no longer used."""
        if self.cache is None or (cfg.base_url, cfg.model) in self._told_stale:
            return
        if self.cache.get(unweighed) is not None:
            self._told_stale.add((cfg.base_url, cfg.model))
            print(f"note: the response cache {self.cache.path} holds replies of {cfg.model!r} at "
                  f"{cfg.base_url} keyed on the model's name alone (written before freshrag asked "
                  "the endpoint about its weights, or while it did not say); they are not used "
                  "and these calls are made again (docs/run-format.md#the-response-cache)",
                  file=sys.stderr, flush=True)

    def _call(self, role: str, cfg: RoleConfig, request: dict[str, Any]) -> dict[str, Any]:
        import openai

        route = self._route(role, cfg)
        started = time.monotonic()
        attempts = 0
        try:
            for attempt in self._retrying(cfg):
                with attempt, deadline.within(self.settings.timeout_s):
                    attempts = attempt.retry_state.attempt_number
                    completion = route.post(request)  # the SDK's request, without its CPU (wire.py)
            return completion_value(completion, request, time.monotonic() - started)
        except openai.APIConnectionError as err:
            if cfg.is_local and self.local is not None and self.local.death():
                raise LocalServerDied(self.local.death()) from None
            raise connection_error(err)(self._describe(role, err, attempts)) from None
        except openai.BadRequestError as err:
            kind = ContextTooLong if CONTEXT_OVERFLOW.search(str(err)) else EndpointError
            raise kind(self._describe(role, err, attempts)) from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as err:
            raise self._deny(role, cfg, err) from None
        except openai.OpenAIError as err:
            raise EndpointError(self._describe(role, err, attempts)) from None
        except EndpointError as err:  # completion_value's checks of the reply
            raise EndpointError(f"{role} endpoint {self.base_url(role)}: {err}") from None
        except Exception as err:  # a reply json cannot read: cut short, huge numbers
            raise EndpointError(self._unreadable(role, err)) from None

    def embed(self, role: str, texts: list[str]) -> list[list[float]]:
        """Embeddings of `texts` from the role's `/v1/embeddings` endpoint, in input order,
        retried like chat calls. Not cached: the retrieval index stores what it embedded."""
        cfg = self.settings.role(role)
        route = self._endpoint(role, cfg)[2]
        result = self.sdk_call(role, "embeddings",
                               lambda _: route.post({"model": cfg.model, "input": texts}),
                               deadline_s=self.settings.timeout_s)
        try:  # the reply as JSON, unchecked: a reply of another shape fails here
            vectors = [list(map(float, item["embedding"]))
                       for item in sorted(result["data"], key=lambda item: item["index"])]
        except (KeyError, TypeError, ValueError) as err:
            raise EndpointError(self._unreadable(role, err) + " (embeddings)") from None
        if len(vectors) != len(texts):
            raise EndpointError(f"{role} endpoint {self.base_url(role)} returned {len(vectors)} "
                                f"embeddings for {len(texts)} texts")
        return vectors

    def sdk_call(self, role: str, what: str, call: Callable[[openai.OpenAI], Any],
                 deadline_s: float | None = None) -> Any:
        """`call(client)` on the role's openai client, retried as a chat call is (transient
        errors only, bounded, with backoff); for embeddings and the Batch API's files and
        batches (whose uploads may take longer than a chat call: no deadline unless given)."""
        import openai

        cfg = self.settings.role(role)
        client = self._client(role, cfg)
        attempts = 0
        try:
            for attempt in self._retrying(cfg):
                with attempt, deadline.within(deadline_s):
                    attempts = attempt.retry_state.attempt_number
                    return call(client)
        except openai.APIConnectionError as err:
            raise EndpointUnreachable(self._describe(role, err, attempts) + f" ({what})") from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as err:
            raise self._deny(role, cfg, err) from None
        except openai.OpenAIError as err:
            raise EndpointError(self._describe(role, err, attempts) + f" ({what})") from None
        except Exception as err:  # a reply the SDK could not read
            raise EndpointError(self._unreadable(role, err) + f" ({what})") from None

    def _retrying(self, cfg: RoleConfig) -> Retrying:
        return retrying(self.settings.max_attempts, self.backoff_s,
                        lambda: bool(cfg.is_local and self.local is not None
                                     and self.local.death()))

    def _client(self, role: str, cfg: RoleConfig) -> openai.OpenAI:
        return self._endpoint(role, cfg)[0]

    def _route(self, role: str, cfg: RoleConfig) -> ChatRoute:
        return self._endpoint(role, cfg)[1]

    def _endpoint(self, role: str,
                  cfg: RoleConfig) -> tuple[openai.OpenAI, ChatRoute, ChatRoute]:
        """The role's SDK client, its chat route and its embeddings route, made once per
        endpoint and key;
        AccessDenied once the endpoint refused the key, Stopped once the process is stopping."""
        base_url = self.base_url(role)
        deadline.check_stop()
        with self._lock:
            if (base_url, cfg.key()) in self._denied:  # refused once: refused for every call
                raise AccessDenied(self._denied[base_url, cfg.key()])
            if (base_url, cfg.key()) not in self._clients:
                import openai

                sdk = openai.OpenAI(
                    base_url=base_url, api_key=cfg.key(), timeout=self.settings.timeout_s,
                    http_client=deadline.deadline_client(),  # the exchange's deadline, the stop
                    max_retries=0)  # retries are ours, so that they are bounded and visible
                self._clients[base_url, cfg.key()] = (sdk, ChatRoute(sdk),
                                                      ChatRoute(sdk, EMBEDDINGS_PATH))
            return self._clients[base_url, cfg.key()]

    def _deny(self, role: str, cfg: RoleConfig, err: Exception) -> AccessDenied:
        """AccessDenied for the role's endpoint and key; later calls with them are not sent."""
        source = f"${cfg.api_key_env}" if cfg.api_key_env else "api_key" if cfg.api_key else "no key"
        message = refused_key(self._where(role), source, err, self.settings.secrets())
        with self._lock:
            self._denied[self.base_url(role), cfg.key()] = message
        return AccessDenied(message)

    def _unreadable(self, role: str, err: Exception) -> str:
        return unreadable(self._where(role), err, self.settings.secrets())

    def _describe(self, role: str, err: Exception, attempts: int) -> str:
        return describe(self._where(role), err, attempts, self.settings.secrets())

    def _where(self, role: str) -> str:
        return f"{role} endpoint {self.base_url(role)}"
