"""The settings of a retrieval index and the error it raises (docs/retrieval.md#the-index).

Kept apart from the index itself and light: every command's options and a run's inputs import
`IndexConfig` before a command is chosen, and nothing here may load Qdrant, the text splitter or
an embedding model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from freshrag.core.errors import UserError
from freshrag.executors.choice import Executor

DEFAULT_DIRECTORY = Path("results") / ".index"
ENGINES = ("auto", "local", "edge")  # where an index without a server URL is kept (store.py, edge.py)
EDGE_ABOVE = 20_000  # chunks (estimated from the text) above which "auto" takes the engine


class RetrievalError(UserError, RuntimeError):
    """A corpus, embedder or Qdrant store the index cannot use; the message names which."""


@dataclass(frozen=True)
class IndexConfig:
    directory: Path = DEFAULT_DIRECTORY  # embedded Qdrant's storage, when no URL is given
    qdrant_url: str | None = None  # a Qdrant server: then `engine` is not consulted
    # "local": qdrant-client's local mode; "edge": the Qdrant engine in-process; "auto": local
    # mode up to EDGE_ABOVE chunks, the engine past it (docs/design.md#a-retrieval-world)
    engine: str = "auto"
    chunk_size: int = 1024
    chunk_overlap: int = 48
    top_k: int = 5
    text_weight: float = 0.0  # 0 dense only, 1 lexical only, between: fused (lexical.py)
    batch_size: int = 256  # chunks embedded and upserted per step
    # a background corpus (`freshrag corpus`) whose passages the index holds beside the
    # articles' chunks (retrieval/background.py); None: the articles alone
    corpus: Path | None = None
    # how the build embeds its batches (retrieval/batches.py): here, or on Ray actors each
    # holding one model; and how many batches at once (0: 1 here, 4 to an endpoint, 2 an actor)
    executor: Executor = Executor()
    embed_concurrency: int = 0
