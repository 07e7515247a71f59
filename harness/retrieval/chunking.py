"""The chunks of the retrieval index (the builders draw questions' evidence from them too,
docs/retrieval.md#the-index): articles cut by `RecursiveCharacterTextSplitter`, 1,024 characters
with an overlap of 48 by default as in the paper, the article's title prepended to every chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from freshrag.core.types import Article


@dataclass(frozen=True)
class Chunk:
    title: str
    index: int  # position within its article
    text: str   # "Title: ...\n" + the article's text piece, as the released runs hold them


def chunk_articles(articles: Iterable[Article], size: int, overlap: int) -> list[Chunk]:
    # imported here: it takes a while, and this module is on every command's --help path
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
    return [Chunk(article.title, i, f"Title: {article.title}\n{piece}")
            for article in articles
            for i, piece in enumerate(splitter.split_text(article.content))]
