"""Background corpora for runs in a large world (docs/retrieval.md#runs-in-a-large-world): a
generated multistream dump made into a corpus by `freshrag corpus`, its pages written from the
dataset's own sentences (so that they are near misses for its questions, not noise), and, with
`twins`, pages titled as the dataset's articles (the dump's copy of a gold article)."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Iterable, Iterator

from freshrag.core.types import Article
from freshrag.workflows.corpus import make_corpus
from tests.support.wikidump import DumpPage, Revision, write_multistream

CREATED = "2015-01-15T12:00:00Z"
SENTENCES = 10  # a page's sentences, drawn from the dataset's: about two passages of 1,024


def world_pages(articles: Iterable[Article], count: int, first_id: int = 1,
                seed: int = 0) -> Iterator[DumpPage]:
    """`count` pages titled `Background page N`, each of sentences drawn from the articles'."""
    sentences = [s for article in articles
                 for s in re.split(r"(?<=[.!?])\s+", article.content.replace("\n", " "))
                 if len(s) > 40 and "==" not in s]
    rng = random.Random(seed)
    for page_id in range(first_id, first_id + count):
        text = " ".join(rng.sample(sentences, SENTENCES))
        yield DumpPage(page_id, f"Background page {page_id}",
                       [Revision(2 * page_id, CREATED, text)])


def twin_pages(articles: Iterable[Article], first_id: int) -> list[DumpPage]:
    """A page per article, titled as it and holding its text: the copy the dump has of a gold
    article."""
    return [DumpPage(first_id + i, article.title,
                     [Revision(2 * (first_id + i), CREATED, article.content)])
            for i, article in enumerate(articles)]


def make_world(directory: Path, articles: list[Article], pages: int,
               twins: Iterable[Article] = (), processes: int = 2,
               pages_per_shard: int = 2_000) -> Path:
    """The corpus `directory` (its name the corpus's), made by `freshrag corpus` from a generated
    dump of `pages` background pages and the twins; the dump lies beside it."""
    dump_dir = directory.parent / f"{directory.name}-dump"
    twins = list(twins)
    dump, index = write_multistream(dump_dir, [*world_pages(articles, pages),
                                               *twin_pages(twins, pages + 1)])
    make_corpus(directory, [str(dump)], index, processes=processes,
                pages_per_shard=pages_per_shard)
    return directory
