"""A forced function call's arguments, read one way everywhere: the judge, the scorers, the
deciders and the builders all ask for one named function and accept only a call of it whose
arguments are a JSON object (docs/methods.md#judge: structured output through function calling).

What each caller then checks (a rating 1–5, a boolean, a non-empty question) is its own; what a
reply that is no such call at all looks like, and how it is told, is decided here once, so that
an `unscored`, `unknown` or `failed` record gives the same reason for the same fault whichever
step it came from.
"""

from __future__ import annotations

import json
from typing import Any

from freshrag.core.errors import FreshragError
from freshrag.core.jsonl import loads
from freshrag.core.types import LLMResponse


class ReplyError(FreshragError, ValueError):
    """Why a reply is not what the forced call asked for."""


def tool_arguments(response: LLMResponse, name: str) -> dict[str, Any]:
    """The arguments of the `name` call in `response` as a JSON object, or ReplyError."""
    if response.tool_name != name or response.tool_arguments is None:
        raise ReplyError(f"no {name} call")
    try:
        # strict=False: a raw line break inside a string is the one slip grammar-constrained
        # servers let through (llama.cpp's JSON grammar allows any character but `"` and `\`);
        # the callers' own checks of each field stay strict
        value = loads(response.tool_arguments, strict=False)
    except json.JSONDecodeError as err:
        raise ReplyError(f"invalid JSON arguments ({err.msg}, column {err.colno})") from None
    if not isinstance(value, dict):
        raise ReplyError(f"arguments are {type(value).__name__}, not an object")
    return value


# What a forced call's JSON needs beyond its strings: braces, keys, quotes, spacing.
JSON_OVERHEAD_TOKENS = 32


def line_of_text(max_chars: int, min_chars: int = 1) -> dict[str, Any]:
    """The JSON Schema of one line of text of `min_chars` to `max_chars` characters, for a field
    of a forced call's arguments.

    The pattern reaches the grammar of constrained servers (llama.cpp), where it wins over the
    length bounds: the text starts with neither whitespace nor JSON punctuation and holds no line
    break, so a small model can neither fill a string with `]\\n{` nor run one on until
    `max_tokens` cuts the JSON short. Servers without a grammar ignore it; the callers' parsers
    check what matters."""
    rest = f"{max(min_chars - 1, 0)},{max_chars - 1}"
    body = f'[^ \\n\\t"\\\\\\[\\]{{}}][^\\n"\\\\]{{{rest}}}'
    pattern = f"^{body}$" if min_chars else f"^({body})?$"  # min 0: the empty string too
    return {"type": "string", "minLength": min_chars, "maxLength": max_chars, "pattern": pattern}


def room_for(*max_chars: int) -> int:
    """A `max_tokens` that lets a grammar-constrained reply close its JSON: a token is at least
    one character, so strings of at most these lengths fit, with the JSON around them."""
    return sum(max_chars) + JSON_OVERHEAD_TOKENS
