"""Fitting a text to the model's context window: the one rule for sending an article (or a
question's gold articles) whole when it fits and halved when the endpoint says it does not
(docs/running.md, the builder's classifier and questions, the judge, the oracle)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from freshrag.core.types import LLM, LLMResponse
from freshrag.llm.errors import ContextTooLong

CONTEXT_CUTS = 2  # a text too long for a model's window is halved at most this often


@dataclass(frozen=True)
class Fitted:
    """A reply about a text that was cut, if it had to be, to fit the model's window."""

    response: LLMResponse
    chars: int     # characters of the text in the request that was answered
    halvings: int  # how often the text was halved first (0: sent whole)

    @property
    def cut(self) -> dict[str, int] | None:
        """What a row records about the cut (None when the text went whole)."""
        return {"chars": self.chars, "halvings": self.halvings} if self.halvings else None


def chat_fitting(llm: LLM, role: str, text: str, request: Callable[[str], dict[str, Any]],
                 halved: int = 0) -> Fitted:
    """`llm.chat(role, **request(text))`, with `text` halved until the model's window holds it.

    The one rule for fitting an article into a prompt (the builder's classifier and questions,
    the judge, the oracle). The paper hands over 15,000 characters, about 4,000 tokens of English
    for GPT-4; other tokenizers and scripts need many more (SmolLM2 counts 8,350 for some
    articles against its 8,192), and no local count knows every endpoint's tokenizer. So the
    endpoint decides: on a context overflow the text is halved, `CONTEXT_CUTS` times at most in
    all (`halved`: how often a caller's text was halved already, by an earlier call about it).
    Raises ContextTooLong, saying how far the text was cut, if even that is too long.
    """
    keep = len(text)
    for halvings in range(halved, CONTEXT_CUTS + 1):
        try:
            return Fitted(llm.chat(role, **request(text[:keep])), keep, halvings)
        except ContextTooLong as err:
            last = err
            if halvings < CONTEXT_CUTS:
                keep //= 2
    raise ContextTooLong(f"too long for the {role} model's context even cut to {keep:,} of "
                         f"{len(text):,} characters ({last})")


def chat_fitting_all(llm: LLM, role: str, texts: Sequence[str],
                     request: Callable[[list[str]], dict[str, Any]], halved: int = 0) -> Fitted:
    """`chat_fitting` for several texts sent in one prompt (a question's gold articles): each is
    cut to the same most characters, the longest's length at first, and that bound is halved as
    `chat_fitting` halves one text, so that every text keeps its share of the window and a short
    one stays whole longest. `Fitted.chars` is the bound; one text is fitted as `chat_fitting`
    fits it."""
    longest = max(texts, key=len, default="")
    return chat_fitting(llm, role, longest,
                        lambda cut: request([text[:len(cut)] for text in texts]), halved)
