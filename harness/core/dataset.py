"""Question and article files (JSON Lines): read strictly, before any LLM call.

A dataset is `questions.jsonl` (`title`, `question`, optional `id` and the optional fields of
`Question`; `title` is null exactly for a question of kind `general`; a multi-article question's
`gold_titles` name its articles in hop order, `title` first:
docs/building.md#dataset-files) beside `articles.jsonl`
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
from typing import Any, Iterable, Iterator

from freshrag.core.arguments import PATH, Argument, check_arguments, path, refused
from freshrag.core.dates import parse_timestamp
from freshrag.core.errors import UserError
from freshrag.core.jsonl import loads
from freshrag.core.manifest import read_manifest
from freshrag.core.textfile import NotUnicode, lines
from freshrag.core.titles import title_form
from freshrag.core.types import (
    KINDS,
    LABELS,
    MULTIHOP,
    QUESTION_FIELDS,
    UNKNOWN,
    Article,
    Question,
)

GOLD_SET = ("gold_titles", "hops", "multihop")  # a question's fields read by `_gold_set`


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

    def gold_articles(self, question: Question) -> tuple[Article, ...]:
        """The articles that answer `question`, in hop order: one for a one-article question,
        none for a general query (the judge then grades with its prompt for no article). The run
        and its walks (the dry run, the batch) both ask here, so that they grade the same way."""
        return tuple(self.articles[title] for title in question.golds)

    def created(self, question: Question) -> str | None:
        """When the question's newest gold article was created: a question dates from the
        newest article it needs (docs/living.md#sets-dated-by-month). None for a general query,
        or where a gold article's creation is unknown."""
        return newest_created(self.gold_articles(question))


def newest_created(articles: Iterable[Article]) -> str | None:
    """The latest `created` of the articles; None for none, or if any lacks one."""
    created = [article.created for article in articles]
    if not created or None in created:
        return None
    return max((c for c in created if c is not None), key=parse_timestamp)


def example_dir() -> Path:
    """The invented example dataset shipped inside the package."""
    return Path(__file__).parents[1] / "data" / "example"


LOADING = {  # the loaders' arguments (core/arguments.py: each checked as its option would be)
    "questions_path": Argument(f"a questions file, {PATH}", path()),
    "articles_path": Argument(f"an articles file, {PATH}", path()),
    "name": Argument("a dataset's name (text, not empty), or None",
                     lambda value: refused(value is None or isinstance(value, str) and bool(value))),
    "directory": Argument(f"a dataset directory, {PATH}", path()),
}


def load_dataset(questions_path: Path, articles_path: Path, name: str | None = None) -> Dataset:
    check_arguments({"questions_path": questions_path, "articles_path": articles_path,
                     "name": name}, LOADING)
    questions_path, articles_path = Path(questions_path), Path(articles_path)
    articles = load_articles(articles_path)
    questions = load_questions(questions_path, articles)
    return Dataset(name or _default_name(questions_path), questions, articles,
                   {"questions": questions_path, "articles": articles_path})


def load_dataset_dir(directory: Path) -> Dataset:
    check_arguments({"directory": directory}, LOADING)
    directory = Path(directory)
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
    """The articles by title, in NFC (core/titles.py): two titles that differ only by Unicode
    normalisation are one title, and a second article of it is refused as a duplicate."""
    articles: dict[str, Article] = {}
    first: dict[str, tuple[int, str]] = {}  # title: the line that gave it, in its form
    for line_no, row in dataset_rows(path):
        given = _text_field(row, "title", path, line_no)
        title = title_form(given)
        content = _text_field(row, "content", path, line_no)
        if title in articles:
            line, form = first[title]
            twin = "" if form == given else " in another Unicode normalisation form"
            raise DatasetError(f"{path}:{line_no}: duplicate article title {given!r:.80}: line "
                               f"{line}'s{twin}")
        first[title] = line_no, given
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
        fields.update(_gold_set(row, title, articles, path, line_no))
        text = _text_field(row, "question", path, line_no)
        qid = question_id(row, path, line_no)
        _check_created(row, path, line_no)
        changed_at = _timestamp(row, "changed_at", path, line_no)
        if qid in seen_ids:
            raise DatasetError(f"{path}:{line_no}: duplicate question id {qid!r}")
        seen_ids.add(qid)
        questions.append(Question(qid, text, title, **fields, changed_at=changed_at))
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
    title = title_form(_text_field(row, "title", path, line_no))
    if title not in articles:
        raise DatasetError(f"{path}:{line_no}: title {title!r} has no article in the articles file")
    return title


def _gold_set(row: dict[str, Any], title: str | None, articles: dict[str, Article],
              path: Path, line_no: int) -> dict[str, Any]:
    """A multi-article question's `gold_titles` (2 or more distinct titles of the articles file,
    the row's `title` first), `hops` (their number, derived when absent) and `multihop`; a
    one-article row may say `hops: 1` and nothing else."""
    where = f"{path}:{line_no}: field"
    titles, hops, multihop = row.get("gold_titles"), row.get("hops"), row.get("multihop")
    if hops is not None and (isinstance(hops, bool) or not isinstance(hops, int)):
        raise DatasetError(f"{where} 'hops' must be a whole number or null, got {hops!r:.80}")
    if multihop is not None and multihop not in MULTIHOP:
        raise DatasetError(f"{where} 'multihop' is {multihop!r:.80}; it must be one of "
                           f"{', '.join(MULTIHOP)}, or null")
    if titles is None:
        if hops not in (None, 1) or multihop is not None:
            named = "hops" if hops not in (None, 1) else "multihop"
            raise DatasetError(f"{where} {named!r} is {row[named]!r:.80}, but the row has no "
                               f"'gold_titles': a one-article question has 1 hop and no kind of "
                               f"multi-hop")
        return {"gold_titles": (), "hops": hops, "multihop": None}
    if not (isinstance(titles, list) and titles and all(
            isinstance(t, str) and t.strip() for t in titles)):
        raise DatasetError(f"{where} 'gold_titles' must be a list of article titles, got "
                           f"{titles!r:.80}")
    titles = [title_form(gold) for gold in titles]
    problem = _gold_set_problem(titles, title, articles)
    if problem:
        raise DatasetError(f"{where} 'gold_titles' {problem}")
    if hops is not None and hops != len(titles):
        raise DatasetError(f"{where} 'hops' is {hops}, but 'gold_titles' names {len(titles)} "
                           f"articles")
    return {"gold_titles": tuple(titles), "hops": len(titles), "multihop": multihop}


def _gold_set_problem(titles: list[str], title: str | None,
                      articles: dict[str, Article]) -> str | None:
    if title is None:
        return "is given for a general query, which no article answers"
    if len(titles) < 2:
        return f"names {len(titles)} article; a multi-article question has 2 or more"
    if titles[0] != title:
        return f"must start with the row's 'title' {title!r}, got {titles[0]!r:.80} first"
    twice = next((t for n, t in enumerate(titles) if t in titles[:n]), None)
    if twice is not None:
        return f"names {twice!r:.80} twice"
    missing = next((t for t in titles if t not in articles), None)
    if missing is not None:
        return f"names {missing!r:.80}, which has no article in the articles file"
    return None


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
        try:  # text kept exactly: a lone surrogate is named, for the user to fix
            row = loads(line, exact_text=True)
        except json.JSONDecodeError as err:
            raise DatasetError(f"{path}:{line_no}: not valid JSON: {err.msg} "
                               f"(column {err.colno})") from None
        except NotUnicode as err:
            raise DatasetError(f"{path}:{line_no}: {err}") from None
        if not isinstance(row, dict):
            raise DatasetError(f"{path}:{line_no}: expected a JSON object, "
                               f"got {type(row).__name__}")
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
    fields = {name: row.get(name) for name in QUESTION_FIELDS if name not in GOLD_SET}
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
    _timestamp(row, "created", path, line_no)
    _check_month(row, path, line_no)


def _timestamp(row: dict[str, Any], name: str, path: Path, line_no: int) -> str | None:
    """The row's optional timestamp `name` (as core/dates.py reads one), or None."""
    value = row.get(name)
    if value is not None:
        try:
            parse_timestamp(value)
        except ValueError as err:
            raise DatasetError(f"{path}:{line_no}: field {name!r}: {err}, or null") from None
    return value


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
