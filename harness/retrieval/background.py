"""A background corpus searched beside a dataset's articles: the index holds both, so that every
system searches one world, the dataset's chunks among a Wikipedia's passages
(docs/retrieval.md#runs-in-a-large-world).

The passages stream from the corpus's Parquet shards (passages.py) into the index in batches, so
a run never holds the corpus's text. Gold passages stay known: a passage whose title (NFC,
core/titles.py) is one of the dataset's articles is left out, and counted, so that the dataset's
own chunks are the only ones of that title and every metric that compares titles (hit@k,
multi-hop recall, the scan) reads as it does without a corpus.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from freshrag.core.titles import title_form
from freshrag.core.types import Article
from freshrag.retrieval.chunking import Chunk
from freshrag.retrieval.passages import MANIFEST, Corpus, CorpusError, shard_path

BATCH = 4096  # passages read from a shard at a time


@dataclass(frozen=True)
class Background:
    """A finished corpus, checked against the index's chunker, and the dataset titles it leaves
    out."""

    corpus: Corpus
    titles: frozenset[str]  # the dataset's article titles, NFC

    @property
    def sha256(self) -> str:
        return str(self.corpus.manifest["content_sha256"])

    @property
    def passages(self) -> int:
        return len(self.corpus)

    def chunks(self) -> Iterator[Chunk]:
        """The corpus's passages as index chunks, in shard order, the dataset's titles left out."""
        for batch in self.corpus.batches(BATCH):
            for title, chunk, text in zip(batch.titles, batch.chunks, batch.texts):
                if title_form(title) not in self.titles:
                    yield Chunk(title, chunk, text)

    def skipped(self) -> int:
        """Passages left out as twins of the dataset's articles: the title column alone read."""
        import pyarrow.parquet as pq

        count = 0
        for shard in self.corpus.shards:
            with pq.ParquetFile(shard_path(self.corpus.directory, shard["name"])) as table:
                for batch in table.iter_batches(batch_size=BATCH, columns=["title"]):
                    count += sum(title_form(title) in self.titles
                                 for title in batch.column(0).to_pylist())
        return count

    def text_bytes(self) -> int:
        """The passages' text in UTF-8 bytes, from the shards' Parquet metadata alone (the text
        column's uncompressed size, 4 bytes of length a passage taken off): what a dry run
        prices without reading the text."""
        import pyarrow.parquet as pq

        total = 0
        for shard in self.corpus.shards:
            metadata = pq.read_metadata(shard_path(self.corpus.directory, shard["name"]))
            column = metadata.schema.names.index("text")
            total += sum(metadata.row_group(group).column(column).total_uncompressed_size
                         for group in range(metadata.num_row_groups)) - 4 * metadata.num_rows
        return max(total, 0)

    def record(self, skipped: int) -> dict[str, Any]:
        """What a run's manifest and report say of the corpus."""
        return {"name": self.corpus.directory.name, "directory": str(self.corpus.directory),
                "sha256": self.sha256, "passages": self.passages, "skipped": skipped}


def open_background(directory: Path, articles: Iterable[Article], chunk_size: int,
                    chunk_overlap: int) -> Background:
    """The finished corpus in `directory`, cut as the index cuts (else refused naming it)."""
    corpus = Corpus(Path(directory))
    rules = corpus.manifest.get("rules", {})
    cut = (rules.get("chunk_size"), rules.get("chunk_overlap"))
    if cut != (chunk_size, chunk_overlap):
        raise CorpusError(f"{directory}: the corpus's passages are cut at {cut[0]} characters "
                          f"with an overlap of {cut[1]} ({MANIFEST}), the index's chunks at "
                          f"{chunk_size} with {chunk_overlap}: give --chunk-size {cut[0]} "
                          f"--chunk-overlap {cut[1]}, or a corpus cut as the index")
    return Background(corpus, frozenset(title_form(article.title) for article in articles))

