"""Question and article files (JSON Lines): read strictly, before any LLM call.

A dataset is `questions.jsonl` (`title`, `question`, optional `id` and the optional fields of
`Question`; `title` is null exactly for a question of kind `general`) beside `articles.jsonl`
(`title`, `content`, optional `url`, `created`: a timestamp as harness/core/dates.py reads it):
the format of the paper's released sets and of what the builders write. Every problem is
reported as `file:line: what is wrong`, so that a run never spends tokens on a dataset it would
later choke on. Files are UTF-8 (a byte-order mark allowed; harness/core/textfile.py) and
streamed line by line.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator

from freshrag.core.dates import parse_timestamp
from freshrag.core.errors import UserError
from freshrag.core.jsonl import loads
from freshrag.core.manifest import read_manifest
from freshrag.core.textfile import lines, lone_surrogate
from freshrag.core.types import KINDS, LABELS, QUESTION_FIELDS, UNKNOWN, Article, Question


class DatasetError(UserError, ValueError):
    """A dataset file that cannot be used; the message starts with `file:line:`."""


@dataclass(frozen=True)
class Dataset:
    name: str
    questions: list[Question]
    articles: dict[str, Article]
    files: dict[str, Path]
    # The version a build recorded in the directory's manifest.json (builders/versions.py:
    # id, number, parent, created); None for a set without one, e.g. the paper's released sets.
    version: dict[str, Any] | None = None

    def file_hashes(self) -> dict[str, str]:
        return {kind: sha256_file(path) for kind, path in self.files.items()}

    def path_name(self) -> str:
        """The name as a default directory takes it: `wiki v2` is `wiki-v2`, with no space."""
        return self.name.replace(" ", "-")

    def gold_article(self, question: Question) -> Article | None:
        """The article that answers `question`; None for a general query, which has none (the
        judge then grades with its prompt for no article). The run and its walks (the dry run,
        the batch) both ask here, so that they grade the same way."""
        return None if question.gold_title is None else self.articles[question.gold_title]


def example_dir() -> Path:
    """The invented example dataset shipped inside the package."""
    return Path(__file__).parents[1] / "data" / "example"


def load_dataset(questions_path: Path, articles_path: Path, name: str | None = None) -> Dataset:
    articles = load_articles(articles_path)
    questions = load_questions(questions_path, articles)
    return Dataset(name or _default_name(questions_path), questions, articles,
                   {"questions": questions_path, "articles": articles_path})


def load_dataset_dir(directory: Path) -> Dataset:
    if not directory.is_dir():
        raise DatasetError(f"{directory}: " + ("not a directory" if directory.exists()
                                               else "no such dataset directory"))
    for needed in ("questions.jsonl", "articles.jsonl"):
        if not (directory / needed).is_file():
            raise DatasetError(f"{directory}: no {needed} in the dataset directory")
    version = dataset_version(directory)
    name = directory.resolve().name
    if version:  # `wiki-v2` (the default name of a second version) is `wiki v2`, like `wiki v1`
        number = version["number"]
        name = f"{re.sub(rf'-v{number}$', '', name)} v{number}"
    dataset = load_dataset(directory / "questions.jsonl", directory / "articles.jsonl", name=name)
    return replace(dataset, version=version)


def dataset_version(directory: Path) -> dict[str, Any] | None:
    """The version recorded in the directory's manifest.json, if it records one. A versioned
    set's name carries its number (`wiki v2`), so that rows and reports tell versions apart."""
    version = (read_manifest(directory) or {}).get("version")
    if version is None:
        return None
    if not (isinstance(version, dict) and isinstance(version.get("number"), int)
            and isinstance(version.get("id"), str)):
        raise DatasetError(f"{directory / 'manifest.json'}: field 'version' must hold a whole "
                           f"'number' and an 'id', got {version!r:.200}")
    return version


def load_articles(path: Path) -> dict[str, Article]:
    articles: dict[str, Article] = {}
    for line_no, row in dataset_rows(path):
        title = _text_field(row, "title", path, line_no)
        content = _text_field(row, "content", path, line_no)
        if title in articles:
            raise DatasetError(f"{path}:{line_no}: duplicate article title {title!r}")
        for name in ("url", "created"):
            if not isinstance(row.get(name), (str, type(None))):
                raise DatasetError(f"{path}:{line_no}: field {name!r} must be a string or null, "
                                   f"got {row[name]!r}")
        if row.get("created") is not None:
            try:
                parse_timestamp(row["created"])
            except ValueError as err:
                raise DatasetError(f"{path}:{line_no}: field 'created': {err}, or null") from None
        _check_month(row, path, line_no)
        articles[title] = Article(title, content, row.get("url"), row.get("created"))
    if not articles:
        raise DatasetError(f"{path}: no articles")
    return articles


def load_questions(path: Path, articles: dict[str, Article]) -> list[Question]:
    questions, seen_ids = [], set()
    for line_no, row in dataset_rows(path):
        fields = _question_fields(row, path, line_no)
        title = _gold_title(row, fields["kind"], articles, path, line_no)
        text = _text_field(row, "question", path, line_no)
        qid = question_id(row, path, line_no)
        _check_created(row, path, line_no)
        if qid in seen_ids:
            raise DatasetError(f"{path}:{line_no}: duplicate question id {qid!r}")
        seen_ids.add(qid)
        questions.append(Question(qid, text, title, **fields))
    if not questions:
        raise DatasetError(f"{path}: no questions")
    return questions


def _gold_title(row: dict[str, Any], kind: str | None, articles: dict[str, Article],
                path: Path, line_no: int) -> str | None:
    """The gold article's title; null exactly for a general query, which no article answers."""
    if kind == "general":
        if row.get("title") is not None:
            raise DatasetError(f"{path}:{line_no}: field 'title' must be null for kind 'general' "
                               f"(a general query has no gold article), got {row['title']!r}")
        return None
    if row.get("title") is None:
        raise DatasetError(f"{path}:{line_no}: field 'title' is missing (only a question of kind "
                           f"'general' goes without a gold article)")
    title = _text_field(row, "title", path, line_no)
    if title not in articles:
        raise DatasetError(f"{path}:{line_no}: title {title!r} has no article in the articles file")
    return title


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dataset_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, row) of every line of a dataset file but blank ones, each a JSON object of
    Unicode text, or a DatasetError naming the file and line."""
    for line_no, line in lines(path, DatasetError):
        if not line.strip():
            continue
        try:
            row = loads(line)
        except json.JSONDecodeError as err:
            raise DatasetError(f"{path}:{line_no}: not valid JSON: {err.msg} "
                               f"(column {err.colno})") from None
        except RecursionError:
            raise DatasetError(f"{path}:{line_no}: JSON nested too deeply") from None
        if not isinstance(row, dict):
            raise DatasetError(f"{path}:{line_no}: expected a JSON object, "
                               f"got {type(row).__name__}")
        if "\\u" in line and (bad := lone_surrogate(row)) is not None:
            raise DatasetError(f"{path}:{line_no}: {bad!r} holds a lone surrogate escape "
                               f"(\\ud800-\\udfff alone), which is not Unicode text")
        yield line_no, row


def question_id(row: dict[str, Any], path: Path, line_no: int) -> str:
    """The row's `id` (a non-empty string or a whole number), else one made of the line number."""
    value = row.get("id")
    if value is None:
        return f"q{line_no:05d}"
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise DatasetError(f"{path}:{line_no}: field 'id' must be a non-empty string or a whole "
                           f"number, got {value!r}")
    return str(value)


def _question_fields(row: dict[str, Any], path: Path, line_no: int) -> dict[str, Any]:
    """The optional fields of a question (types.QUESTION_FIELDS), each checked: absent or null is
    None, a value of the wrong type or outside its vocabulary names the file, line and field."""
    fields = {name: row.get(name) for name in QUESTION_FIELDS}
    for name, value in fields.items():
        wanted = bool if name == "need" else str
        if value is not None and not isinstance(value, wanted):
            raise DatasetError(f"{path}:{line_no}: field {name!r} must be "
                               f"{'true, false' if wanted is bool else 'a string'} or null, "
                               f"got {value!r}")
    for name, allowed in (("label", (*LABELS, UNKNOWN)), ("kind", KINDS)):
        if fields[name] is not None and fields[name] not in allowed:
            raise DatasetError(f"{path}:{line_no}: field {name!r} is {fields[name]!r}; "
                               f"it must be one of {', '.join(allowed)}")
    return fields


def _check_created(row: dict[str, Any], path: Path, line_no: int) -> None:
    """A question's optional `created` (its article's creation time) and `month`."""
    created = row.get("created")
    if created is not None:
        try:
            parse_timestamp(created)
        except ValueError as err:
            raise DatasetError(f"{path}:{line_no}: field 'created': {err}, or null") from None
    _check_month(row, path, line_no)


def _check_month(row: dict[str, Any], path: Path, line_no: int) -> None:
    """The optional `month` of a dated set: "YYYY-MM", the month of `created` where both are."""
    month = row.get("month")
    if month is None:
        return
    if not isinstance(month, str) or not re.fullmatch(r"[0-9]{4}-(0[1-9]|1[0-2])", month):
        raise DatasetError(f"{path}:{line_no}: field 'month' must be YYYY-MM or null, "
                           f"got {month!r:.80}")
    created = row.get("created")
    if created and parse_timestamp(created).strftime("%Y-%m") != month:
        raise DatasetError(f"{path}:{line_no}: field 'month' is {month}, but 'created' "
                           f"({created}) falls in another month")


def _text_field(row: dict[str, Any], name: str, path: Path, line_no: int) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        problem = "missing" if value is None else "empty or not a string"
        raise DatasetError(f"{path}:{line_no}: field {name!r} is {problem}")
    return value


def _default_name(questions_path: Path) -> str:
    stem = questions_path.stem
    return stem.removeprefix("questions-") if stem != "questions" else questions_path.parent.name
