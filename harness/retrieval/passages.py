"""A background corpus as later stages read it: its manifest, and its passages in batches
(docs/corpus.md#reading-a-corpus).

A corpus directory (written by `freshrag corpus`, builders/corpus/) holds `manifest.json` and
`shards/shard-NNNNN.parquet`, each shard a Parquet table of the columns `COLUMNS`. A passage is
a chunk of chunking.py: its text starts `Title: …`, as the index stores chunks. Reading checks
what the manifest promises before the first batch: the build finished, each shard is listed
once and is on disk at its recorded size (with `verify`, its SHA-256 too), and no shard lies
there that the manifest does not list.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from freshrag.retrieval.config import RetrievalError

MANIFEST = "manifest.json"
SHARDS = "shards"
SUFFIX = ".parquet"
KIND = "corpus"
FORMAT = 1
COLUMNS = ("id", "title", "chunk", "text", "created")
ID_STRIDE = 100_000  # a passage's id: its page's id times this, plus its chunk number


class CorpusError(RetrievalError):
    """A corpus, dump or shard that cannot be read or written as asked; the message names the
    file, shard, line or offset."""


def passage_id(page_id: int, chunk: int) -> int:
    if not 0 <= chunk < ID_STRIDE:
        raise CorpusError(f"page {page_id}: chunk {chunk} past the {ID_STRIDE:,} a page may have")
    return page_id * ID_STRIDE + chunk


@dataclass(frozen=True)
class PassageBatch:
    """Passages in columns: the i-th passage is (ids[i], titles[i], chunks[i], texts[i],
    created[i]); `created` is the page's first revision's timestamp, or None where unknown."""

    ids: list[int]
    titles: list[str]
    chunks: list[int]
    texts: list[str]
    created: list[str | None]

    def __len__(self) -> int:
        return len(self.ids)


def shard_path(directory: Path, name: str) -> Path:
    return Path(directory) / SHARDS / f"{name}{SUFFIX}"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def read_corpus_manifest(directory: Path, complete: bool = True) -> dict[str, Any]:
    """The manifest of the corpus in `directory`; with `complete`, refused unless its build
    finished."""
    path = Path(directory) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CorpusError(f"{directory}: no corpus here (no {MANIFEST}); make one with "
                          f"`freshrag corpus`") from None
    except (OSError, ValueError) as err:
        raise CorpusError(f"{path}: cannot read the corpus manifest ({err})") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != KIND:
        raise CorpusError(f"{path}: not a corpus manifest (kind {KIND!r})")
    if manifest.get("format") != FORMAT:
        raise CorpusError(f"{path}: corpus format {manifest.get('format')!r}; this freshrag "
                          f"reads format {FORMAT}")
    if complete and not manifest.get("complete"):
        raise CorpusError(f"{directory}: the corpus build has not finished; run the same "
                          f"`freshrag corpus` again to resume it")
    return manifest


def checked_shards(directory: Path, manifest: dict[str, Any],
                   verify: bool = False) -> list[dict[str, Any]]:
    """The manifest's shards, each once and on disk as recorded; refused naming the shard."""
    seen: set[str] = set()
    shards = manifest.get("shards", [])
    for shard in shards:
        name, path = shard["name"], shard_path(directory, shard["name"])
        if name in seen:
            raise CorpusError(f"{directory}: shard {name} is written twice in {MANIFEST}")
        seen.add(name)
        if not path.is_file():
            raise CorpusError(f"{path}: shard {name} is missing; run the same `freshrag "
                              f"corpus` again to write it")
        if path.stat().st_size != shard["bytes"] or (verify and file_sha256(path)
                                                      != shard["sha256"]):
            raise CorpusError(f"{path}: shard {name} differs from the one {MANIFEST} records "
                              f"(size or SHA-256); run the same `freshrag corpus` again")
    strays = sorted(p.name for p in (Path(directory) / SHARDS).glob(f"*{SUFFIX}")
                    if p.name[: -len(SUFFIX)] not in seen)
    if strays:
        raise CorpusError(f"{directory}/{SHARDS}: {strays[0]} is not in {MANIFEST}: written by "
                          f"another build? Remove it, or the corpus, and build again")
    return list(shards)


class Corpus:
    """A finished corpus: its manifest, and its passages read shard by shard in batches."""

    def __init__(self, directory: Path, verify: bool = False):
        self.directory = Path(directory)
        self.manifest = read_corpus_manifest(self.directory)
        self.shards = checked_shards(self.directory, self.manifest, verify)

    def __len__(self) -> int:
        return int(self.manifest["counts"]["passages"])

    def batches(self, size: int = 1024,
                shards: Sequence[str] | None = None) -> Iterator[PassageBatch]:
        """The passages of every shard (or of `shards`, by name), in shard order, `size` at a
        time at most (a batch never spans two shards)."""
        import pyarrow.parquet as pq

        names = [shard["name"] for shard in self.shards]
        for name in shards if shards is not None else names:
            if name not in names:
                raise CorpusError(f"{self.directory}: no shard {name} in {MANIFEST}")
            with pq.ParquetFile(shard_path(self.directory, name)) as table:
                for batch in table.iter_batches(batch_size=size, columns=list(COLUMNS)):
                    columns = batch.to_pydict()
                    yield PassageBatch(*(columns[c] for c in COLUMNS))
