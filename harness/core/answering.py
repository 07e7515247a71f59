"""The words of an answer call that the systems and the builders share (docs/methods.md#systems):
the RAG prompt, which hands the model extracts headed by their articles' titles, and the bound on
an answer's tokens.

The builders' multi-hop check answers a written question exactly as a retrieving system would
(docs/building.md#multi-hop-questions), so the two live here, below both, rather than in either.
"""

from __future__ import annotations

ANSWER_MAX_TOKENS = 512

RAG_PROMPT = (
    "You are a helpful assistant. Answer the user's question accurately and concisely, using the "
    "extracts below. They come from Wikipedia articles; each extract is headed by the title of its "
    "article.\n\n{extracts}"
)
