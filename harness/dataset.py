"""Question and article files (JSON Lines), read strictly before any LLM call.

A dataset is `questions.jsonl` (`title`, `question`, optional `id`) beside `articles.jsonl`
(`title`, `content`, optional `url`, `created`): the format of the paper's released sets and of
what the builders write. Every problem is reported as `file:line: what is wrong`, so that a run
never spends tokens on a dataset it would later choke on.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from harness.types import Article, Question


class DatasetError(ValueError):
    """A dataset file that cannot be used; the message starts with `file:line:`."""


@dataclass(frozen=True)
class Dataset:
    name: str
    questions: list[Question]
    articles: dict[str, Article]
    files: dict[str, Path]

    def file_hashes(self) -> dict[str, str]:
        return {kind: sha256_file(path) for kind, path in self.files.items()}


def example_dir() -> Path:
    """The invented example dataset shipped inside the package."""
    return Path(__file__).parent / "data" / "example"


def load_dataset(questions_path: Path, articles_path: Path, name: str | None = None) -> Dataset:
    articles = load_articles(articles_path)
    questions = load_questions(questions_path, articles)
    return Dataset(name or _default_name(questions_path), questions, articles,
                   {"questions": questions_path, "articles": articles_path})


def load_dataset_dir(directory: Path) -> Dataset:
    for needed in ("questions.jsonl", "articles.jsonl"):
        if not (directory / needed).is_file():
            raise DatasetError(f"{directory}: no {needed} in the dataset directory")
    return load_dataset(directory / "questions.jsonl", directory / "articles.jsonl",
                        name=directory.resolve().name)


def load_articles(path: Path) -> dict[str, Article]:
    articles: dict[str, Article] = {}
    for line_no, row in _rows(path):
        title = _text_field(row, "title", path, line_no)
        content = _text_field(row, "content", path, line_no)
        if title in articles:
            raise DatasetError(f"{path}:{line_no}: duplicate article title {title!r}")
        articles[title] = Article(title, content, row.get("url"), row.get("created"))
    if not articles:
        raise DatasetError(f"{path}: no articles")
    return articles


def load_questions(path: Path, articles: dict[str, Article]) -> list[Question]:
    questions, seen_ids = [], set()
    for line_no, row in _rows(path):
        title = _text_field(row, "title", path, line_no)
        text = _text_field(row, "question", path, line_no)
        if title not in articles:
            raise DatasetError(f"{path}:{line_no}: title {title!r} has no article in the articles file")
        qid = str(row.get("id") or f"q{line_no:05d}")
        if qid in seen_ids:
            raise DatasetError(f"{path}:{line_no}: duplicate question id {qid!r}")
        seen_ids.add(qid)
        questions.append(Question(qid, text, title))
    if not questions:
        raise DatasetError(f"{path}: no questions")
    return questions


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        handle = open(path, encoding="utf-8")
    except OSError as err:
        raise DatasetError(f"{path}: cannot open: {err.strerror}") from None
    with handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise DatasetError(f"{path}:{line_no}: not valid JSON: {err.msg}") from None
            if not isinstance(row, dict):
                raise DatasetError(f"{path}:{line_no}: expected a JSON object")
            yield line_no, row


def _text_field(row: dict[str, Any], name: str, path: Path, line_no: int) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        problem = "missing" if value is None else "empty or not a string"
        raise DatasetError(f"{path}:{line_no}: field {name!r} is {problem}")
    return value


def _default_name(questions_path: Path) -> str:
    stem = questions_path.stem
    return stem.removeprefix("questions-") if stem != "questions" else questions_path.parent.name
