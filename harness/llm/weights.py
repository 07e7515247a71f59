"""What an endpoint says about the weights behind a model name, for the response cache's key
(docs/run-format.md#the-response-cache).

A server may change the weights it serves under one name (a new GGUF file behind the same
llama.cpp alias); a cache keyed on the name alone would answer from the old weights' replies.
So the key holds what the endpoint's `GET /v1/models` entry for the model says about its weights,
and only that: the fields in `WEIGHT_FIELDS` (llama.cpp's `meta`: parameters, file size,
vocabulary, training context; vLLM's `root`, the checkpoint it loaded, and `parent`, the base
of an adapter). Everything else is left out because it does not tell weights apart (`id` is the
name, `owned_by`) or changes on every request (`created` is the time of the request on
llama.cpp and vLLM). An endpoint whose entry has none of these (OpenAI, Ollama) or that lists no
models gives no identity: its replies are keyed on the name as before, and the cache cannot know
that the weights changed. A reply's `system_fingerprint` comes with the reply, after the key is
needed, so it cannot key it.
"""

from __future__ import annotations

import json
from typing import Any, Callable

WEIGHT_FIELDS = ("meta", "root", "parent")
LIST_TIMEOUT_S = 10.0  # one listing per endpoint and model: a slow one must not stall a run


def identity(listing: Any, model: str) -> str:
    """The weights of `model` as `listing` (the JSON of `GET /v1/models`) describes them, as
    canonical JSON; "" when it names no such model or says nothing about its weights."""
    entries = listing.get("data") if isinstance(listing, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            found = {name: entry[name] for name in WEIGHT_FIELDS if entry.get(name) is not None}
            return json.dumps(found, sort_keys=True, separators=(",", ":")) if found else ""
    return ""


def asked(list_models: Callable[[], Any], model: str) -> str:
    """`identity` of what `list_models()` returns; "" (unknown) when the endpoint cannot list its
    models (no such route, refused, down): the cache then keys on the name, as it must."""
    try:
        return identity(list_models(), model)
    except Exception:  # whatever went wrong, the weights are unknown, which the docs say
        return ""
