"""How the LLM client (harness/llm/client.py) tells an endpoint's failures apart and words
them (docs/faults.md): which errors are retried, with bounded exponential backoff and jitter
(rate limits, timeouts, connection errors, 5xx; nothing else), which mean the prompt is over the
model's window, which mean no connection at all; and every message naming the role and
endpoint with the keys redacted."""

from __future__ import annotations

import re
from typing import Callable

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from freshrag.core.wording import counted
from freshrag.llm import deadline
from freshrag.llm.errors import EndpointError, EndpointUnreachable

# How OpenAI, llama.cpp, vLLM and others word a context overflow in their 400 replies.
CONTEXT_OVERFLOW = re.compile(r"context.length|maximum context|context window|too many tokens|"
                              r"exceeds the context", re.IGNORECASE)


def is_transient(err: BaseException) -> bool:
    """Errors worth another attempt: rate limits, timeouts, connection errors and 5xx."""
    import openai

    if isinstance(err, (openai.RateLimitError, openai.APIConnectionError)):
        return True  # APITimeoutError is an APIConnectionError
    return isinstance(err, openai.APIStatusError) and err.status_code >= 500


def retrying(max_attempts: int, backoff_s: float, server_died: Callable[[], bool]) -> Retrying:
    """Attempts of one call: transient errors only, `max_attempts` at most, with backoff; none
    after `server_died()` (a dead embedded server will not come back: said at once, not after
    six attempts)."""
    return Retrying(stop=stop_after_attempt(max_attempts),
                    wait=wait_random_exponential(multiplier=backoff_s, max=60),
                    retry=retry_if_exception(lambda err: is_transient(err) and not server_died()),
                    reraise=True, sleep=deadline.sleep)  # a stop cuts the wait short


def connection_error(err: Exception) -> type[EndpointError]:
    """EndpointUnreachable when no connection could be made (no call can succeed: the run stops);
    EndpointError when one was and the exchange failed (a timeout, a reply cut short)."""
    cause = type(err.__cause__).__name__  # httpx's or httpx2's exception, by name for either
    return EndpointUnreachable if cause in ("ConnectError", "UnsupportedProtocol") else EndpointError


def redact(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "[key]")
    return text


def describe(where: str, err: Exception, attempts: int, secrets: list[str]) -> str:
    """`err` after `attempts` attempts at `where` (the role's endpoint), keys redacted."""
    status = getattr(err, "status_code", None)
    what = f"HTTP {status}: {err}" if status else f"{type(err).__name__}: {err}"
    return redact(f"{where} failed after {counted(attempts, 'attempt')}: {what}", secrets)


def unreadable(where: str, err: Exception, secrets: list[str]) -> str:
    """A reply at `where` that no reader could take (cut short, huge numbers, another shape)."""
    detail = redact(str(err), secrets)[:300]
    return (f"{where} sent a reply that is not an OpenAI response ({type(err).__name__}: "
            f"{detail})")


def refused_key(where: str, source: str, err: Exception, secrets: list[str]) -> str:
    """The endpoint at `where` refused the key from `source` (HTTP 401 or 403)."""
    return redact(f"{where} refused the key ({source}): HTTP {getattr(err, 'status_code', '?')}: "
                  f"{err}; check the key and the model's access, then run the same command "
                  f"again", secrets)
