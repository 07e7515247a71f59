"""The dataset files the commands read (`questions.jsonl` and `articles.jsonl`), written by
`write_dataset`: invented towns by default, or the rows a test gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable


def bridges(i: int) -> str:
    """Town i's article by default: the one fact its question asks about."""
    return f"Town {i} has {i + 3} bridges."


def bridges_and_mayor(i: int) -> str:
    """Town i's article with a second fact beside the one asked about."""
    return f"Town {i} has {i + 3} bridges and a mayor named Ola {i}."


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_dataset(directory: Path, n: int = 3, *, content: Callable[[int], str] = bridges,
                  fields: Callable[[int], dict[str, Any]] | None = None,
                  articles: Iterable[dict[str, Any]] | None = None,
                  questions: Iterable[dict[str, Any]] | None = None,
                  prices: tuple[float, float] | None = None) -> tuple[Path, Path]:
    """`questions.jsonl` and `articles.jsonl` in `directory` (made if missing); their paths, in
    that order. Unless the rows are given: n towns, "Town 0" to "Town n-1", each an article of
    `content(i)` and the question "How many bridges does Town i have?" with `fields(i)` added.
    With `prices` (USD per million input and output tokens), a `freshrag.toml` beside them that
    prices the fake server's model, "fake-model"."""
    directory.mkdir(parents=True, exist_ok=True)
    if articles is None:
        articles = [{"title": f"Town {i}", "content": content(i)} for i in range(n)]
    if questions is None:
        questions = [{"title": f"Town {i}", "question": f"How many bridges does Town {i} have?",
                      **(fields(i) if fields else {})} for i in range(n)]
    if prices is not None:
        (directory / "freshrag.toml").write_text(
            f'[prices]\n"fake-model" = {{ input = {prices[0]}, output = {prices[1]} }}\n')
    return (write_jsonl(directory / "questions.jsonl", questions),
            write_jsonl(directory / "articles.jsonl", articles))


def write_multihop_set(source: Path, out: Path, n: int) -> Path:
    """A two-article question set written by hand into `out`: `source`'s articles, and n
    questions each over two of them (article i, then i + 1), bridge and comparison by turn, the
    first hop's title as `title` (docs/building.md#dataset-files)."""
    articles = [json.loads(line) for line in (source / "articles.jsonl").read_text(
        encoding="utf-8").splitlines() if line.strip()]
    titles = [row["title"] for row in articles]
    questions = [{"id": f"m{i}", "title": titles[i], "gold_titles": titles[i:i + 2], "hops": 2,
                  "multihop": ("bridge", "comparison")[i % 2],
                  "question": f"Which was created first, {titles[i]} or {titles[i + 1]}?"}
                 for i in range(n)]
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "articles.jsonl", articles)
    write_jsonl(out / "questions.jsonl", questions)
    return out
