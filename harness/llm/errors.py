"""How a call to an endpoint fails for good: what the LLM client raises and its callers catch
(harness/llm/client.py), from the mildest to the run-stopping."""

from __future__ import annotations

from freshrag.core.errors import UserError


class EndpointError(UserError, RuntimeError):
    """A call that failed for good; the message names the role and base URL, never the key."""


class ContextTooLong(EndpointError):
    """The endpoint refused the request as longer than the model's context window (HTTP 400):
    the same request will never succeed, but a shorter one may."""


class EndpointUnreachable(EndpointError):
    """The endpoint could not be reached at all after the retries: no pair can succeed."""


class AccessDenied(EndpointUnreachable):
    """The endpoint refused the key (HTTP 401 or 403): no call with it can succeed."""


class LocalServerDied(EndpointUnreachable):
    """The embedded llama.cpp server is gone; the message says how it died and where its log is."""
