"""A build's chunks embedded in batches (docs/design.md#embedding-past-one-machine): in this
process, several batches at once against an embeddings endpoint, or on Ray actors that each hold
one embedding model (`IndexConfig.executor`). Either way the batches are made here, from the
chunks the store lacks, and each batch's vectors come back to the calling thread, which alone
writes the store: qdrant-client's local mode and the engine in-process are each one process's
files, and a point's id is its chunk's position, which only the driver's stream fixes.

On Ray the walk is harness/executors/walk.py's, as for a run's pairs: at most PER_ACTOR batches
in flight per actor (its next batch already sent while it embeds one), a batch lost with its
actor or node asked again once of the others, a lost actor replaced, one batch lost twice ending
the build, which then resumes from what was stored. An embeddings endpoint is called from this
process on either executor: the endpoint is what computes, and actors would only add hops.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Any, Callable, Iterable, Iterator

from freshrag.executors.cluster import connected
from freshrag.executors.walk import Actors, walk, walk_threads
from freshrag.retrieval.chunking import Chunk
from freshrag.retrieval.config import IndexConfig
from freshrag.retrieval.embeddings import Embedder, EndpointEmbedder, LocalMiniLM

ENDPOINT_IN_FLIGHT = 4  # requests at once to an embeddings endpoint unless told
PER_ACTOR = 2  # batches in flight per Ray actor unless told: one embedding, one waiting
SORT_WINDOW = 16  # batches' worth of chunks sorted by length together, so batches pad little


@dataclass(frozen=True)
class Batch:
    """Chunks embedded together, with their ids (positions in the index's chunk stream)."""

    ids: tuple[int, ...]
    chunks: tuple[Chunk, ...]

    @property
    def texts(self) -> list[str]:
        return [chunk.text for chunk in self.chunks]

    def __str__(self) -> str:
        return f"the batch of chunks {min(self.ids)}..{max(self.ids)}"


Stored = Callable[[Batch, list[list[float]]], object]  # the store's writer of a batch's vectors


def picked(chunks: Iterable[Chunk], ids: Iterable[int]) -> Iterator[tuple[int, Chunk]]:
    """(id, chunk) of the stream's chunks at the positions `ids` (ascending): a build's second
    pass over its chunks, which yields only what the store lacks and stops reading the stream
    at the last of them."""
    wanted = iter(ids)
    want = next(wanted, None)
    for i, chunk in enumerate(chunks):
        if want is None:
            return
        if i == want:
            yield i, chunk
            want = next(wanted, None)


def batches(missing: Iterable[tuple[int, Chunk]], size: int) -> Iterator[Batch]:
    """`missing` (id, chunk) cut into batches of `size`, SORT_WINDOW batches' worth at a time
    sorted by length, so that a batch's texts pad little; drawn as they are asked for, so that
    a window is all a build holds of its chunks."""
    missing = iter(missing)
    while part := sorted(islice(missing, size * SORT_WINDOW), key=lambda item: len(item[1].text)):
        for start in range(0, len(part), size):
            ids, chunks = zip(*part[start:start + size])
            yield Batch(ids, chunks)


def embed_batches(found: Iterable[Batch], embedder: Embedder, config: IndexConfig,
                  store: Stored) -> None:
    """Every batch of `found` embedded by `config.executor`, `store(batch, vectors)` called on
    this thread for each, in the order they are done."""
    if config.executor.on_ray and not isinstance(embedder, EndpointEmbedder):
        with connected(config.executor) as ray:
            on_ray(ray, found, embedder, config.embed_concurrency, store)
        return
    endpoint = isinstance(embedder, EndpointEmbedder)
    walk_threads(found, lambda batch: embedder.embed(batch.texts),
                 config.embed_concurrency or (ENDPOINT_IN_FLIGHT if endpoint else 1), store)


class EmbedActor:
    """One Ray actor: the embedder, its model loaded at the first batch and kept."""

    def __init__(self, embedder: Embedder):
        import ray

        granted = ray.get_runtime_context().get_assigned_resources()
        if isinstance(embedder, LocalMiniLM):  # its batches side by side on the actor's CPUs
            embedder.workers = max(1, int(granted.get("CPU", 1)))
            if granted.get("GPU"):
                embedder.device = "cuda"
        self.embedder = embedder

    def embed(self, texts: list[str]) -> Any:
        import numpy

        # float32, as the store keeps them: a third of the bytes of a list of floats
        return numpy.asarray(self.embedder.embed(texts), dtype=numpy.float32)


def on_ray(ray: Any, found: Iterable[Batch], embedder: Embedder, in_flight: int,
           store: Stored) -> None:
    """The batches embedded by one actor per GPU of the cluster (where it has GPUs and the
    model can use one), else per CPU, spread over its nodes; a lost one replaced alike."""
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0)) if _uses_gpu(embedder) else 0
    count = gpus or max(1, int(resources.get("CPU", 1)))
    remote = ray.remote(EmbedActor).options(num_cpus=0 if gpus else 1, num_gpus=1 if gpus else 0,
                                            max_restarts=0, scheduling_strategy="SPREAD")
    shared = ray.put(embedder)  # sent once, whatever the number of actors

    def start() -> Any:
        return remote.remote(shared)

    walk(ray, Actors([start() for _ in range(count)], start), found,
         lambda actor, batch: actor.embed.remote(batch.texts),
         in_flight or PER_ACTOR * count, lambda batch, vectors: store(batch, vectors.tolist()))


def _uses_gpu(embedder: Embedder) -> bool:
    """Whether the embedder runs faster on a GPU: the local model, but not in int8 (torch's
    dynamic quantization is for CPUs)."""
    return isinstance(embedder, LocalMiniLM) and embedder.precision != "int8"
