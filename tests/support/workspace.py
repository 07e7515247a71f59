"""A user's working directory for the tests that run documented commands as written (every
`--help` example, every command of the README): the commands run through the CLI's `main` in a
temporary directory, with the fake OpenAI-compatible server standing in for every endpoint a
command names (a provider's URL, `freshrag serve`'s, a user's RAG service) and, through
FRESHRAG_BASE_URL, for the commands that name none, as a user's environment would set it.

The files a user brings are made here in their documented formats, each from what the commands
before it wrote where a user would take it from there: answers files in JSON Lines and CSV and a
Ragas result (docs/own-system.md#answers-made-elsewhere), hand labels (`{id, label}`), people's
labels saved from the labelling page (docs/human-labels.md), a query log (docs/needs.md), a
gate's rules (docs/ci.md), the paper's released A_f set and one of its runs, and wiki dumps for
the builds."""

from __future__ import annotations

import contextlib
import csv
import html.parser
import json
import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from freshrag.builders.labels.labeller import LABELS
from freshrag.cli.main import main
from freshrag.core.dataset import example_dir, load_dataset_dir
from tests import ROOT, WIKIRAG
from tests.support.agent_script import searches_then_answers
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import scorers_reply
from tests.support.wikidump import article_pages, write_dump

PROVIDER = "https://api.openai.com/v1"
SERVED = "http://127.0.0.1:8080/v1"  # `freshrag serve --port 8080`, which the fake stands in for
SERVICE = "http://127.0.0.1:8000"  # a user's RAG service, at the fake's /rag
ENVIRONMENT = {"API_KEY": "sk-example", "MODEL": "gpt-4o-mini", "EMBEDDINGS_MODEL": "fake-embed"}


_AGENT = searches_then_answers(1)


def model_reply(request: dict) -> dict:
    """The scorers' replies (the judge's grade follows the request's seed), and an agent that
    searches once before it answers."""
    tools = {tool["function"]["name"] for tool in request.get("tools") or []}
    return _AGENT(request) if request.get("tool_choice") == "auto" and "search" in tools \
        else scorers_reply(request)


def service_reply(request: dict, headers: dict) -> dict:
    """A user's RAG service: an answer, its context and OpenAI's usage fields."""
    return {"json": {"answer": f"An answer to: {request['question']}",
                     "contexts": ["A passage."],
                     "usage": {"prompt_tokens": 120, "completion_tokens": 12}}}


@dataclass
class Workspace:
    """The working directory and the fake server every endpoint stands on."""

    root: Path
    server: FakeOpenAIServer

    def argv(self, line: str) -> list[str]:
        """A documented command line as the shell splits it (comments dropped, the endpoints
        replaced by the fake's), without its leading `freshrag`."""
        origin = self.server.base_url.removesuffix("/v1")
        for endpoint, stand_in in ((PROVIDER, self.server.base_url),
                                   (SERVED, self.server.base_url), (SERVICE, origin)):
            line = line.replace(endpoint, stand_in)
        argv = shlex.split(line, comments=True)
        assert argv[0] == "freshrag", line
        return argv[1:]

    def run(self, line: str) -> int:
        return main(self.argv(line))


@contextlib.contextmanager
def workspace(root: Path) -> Iterator[Workspace]:
    """`root` as the working directory, FRESHRAG_* as a user's environment would set them to
    the fake server (`model_reply`, a RAG service at /rag), nothing else of FRESHRAG_*."""
    with pytest.MonkeyPatch.context() as patch, \
            FakeOpenAIServer(reply=model_reply, services={"/rag": service_reply}) as server:
        for name in [name for name in os.environ if name.startswith("FRESHRAG_")]:
            patch.delenv(name)
        patch.chdir(root)
        for variable, value in {"BASE_URL": server.base_url, **ENVIRONMENT}.items():
            patch.setenv(f"FRESHRAG_{variable}", value)
        yield Workspace(root, server)


# --------------------------------------------------------------------------- files a user brings


def copy_example(to: str) -> None:
    """The example dataset shipped with freshrag, copied to `to`."""
    shutil.copytree(example_dir(), to)


def questions_of(dataset: str) -> list[Any]:
    return load_dataset_dir(Path(dataset)).questions


def answers_jsonl(path: str, dataset: str) -> None:
    """An answers file in JSON Lines: each question by its text, an answer and its tokens."""
    rows = [{"question": q.text, "answer": f"My system's answer about {q.gold_title}.",
             "input_tokens": 300, "output_tokens": 20, "retrievals": 1}
            for q in questions_of(dataset)]
    Path(path).write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def answers_csv(path: str, dataset: str) -> None:
    """An answers file in CSV: each question by its text, an answer and what it retrieved."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question", "answer", "contexts"])
        writer.writerows([q.text, f"Their answer about {q.gold_title}.",
                          json.dumps([f"{q.gold_title} is described here."])]
                         for q in questions_of(dataset))


def ragas_csv(path: str, dataset: str) -> None:
    """A Ragas result as pandas writes it (`to_pandas().to_csv(path)`: its index column first),
    with Ragas' columns and score columns."""
    import pandas

    questions = questions_of(dataset)
    pandas.DataFrame({
        "user_input": [q.text for q in questions],
        "retrieved_contexts": [[f"{q.gold_title} is described here."] for q in questions],
        "response": [f"Ragas' answer about {q.gold_title}." for q in questions],
        "faithfulness": [0.5 + i % 5 / 10 for i in range(len(questions))],
    }).to_csv(path)


def hand_labels(path: str, dataset: str) -> None:
    """Labels given by hand, `{id, label}` a line, the dataset's ids, the labels in turn."""
    rows = [{"id": q.id, "label": LABELS[i % len(LABELS)]}
            for i, q in enumerate(questions_of(dataset))]
    Path(path).write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


class _LabelData(html.parser.HTMLParser):
    """The JSON of the labelling page's `label-data` element."""

    def __init__(self) -> None:
        super().__init__()
        self.inside, self.text = False, ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.inside = tag == "script" and ("id", "label-data") in attrs

    def handle_data(self, data: str) -> None:
        if self.inside:
            self.text += data

    def handle_endtag(self, tag: str) -> None:
        self.inside = False


def people_labels(page: str, path: str, labeller: str, first: int) -> None:
    """The labels `labeller` saves from the labelling `page` after grading its `first`
    answers, a record a line as the page's script writes it (harness/reporting/labels.py)."""
    parser = _LabelData()
    parser.feed(Path(page).read_text(encoding="utf-8"))
    data = json.loads(parser.text)
    records = [{"freshrag_labels": data["format"], "key": item["key"], "dataset": item["dataset"],
                "question_id": item["question_id"], "answer_sha256": item["answer_sha256"],
                "truthfulness": 1 + (i + len(labeller)) % 5, "relevance": 1 + i % 5,
                "note": "", "labeller": labeller, "labelled_at": "2026-11-26T20:00:00Z",
                "seed": data["seed"], "salt": data["salt"]}
               for i, item in enumerate(data["items"][:first])]
    Path(path).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def query_log(path: str) -> None:
    """A log of users' queries: the invented one the needs docs use (tests/data/needs/)."""
    shutil.copy(ROOT / "tests" / "data" / "needs" / "queries.jsonl", path)


def gate_rules(path: str) -> None:
    """The rules file of docs/ci.md, as written there."""
    page = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    rules = re.search(r"```toml\n# gate\.toml\n(.*?)```", page, re.S)
    assert rules, "docs/ci.md holds no gate.toml"
    Path(path).write_text(rules.group(1), encoding="utf-8")


def paper_set(directory: str, name: str = "A_f") -> None:
    """The paper's released question set `name` as a dataset directory: its questions and the
    articles they ask about (tests/data/wikirag-2024/)."""
    out = Path(directory)
    out.mkdir(parents=True)
    questions = (WIKIRAG / f"questions-{name}.jsonl").read_text(encoding="utf-8")
    titles = {json.loads(line)["title"] for line in questions.splitlines() if line.strip()}
    (out / "questions.jsonl").write_text(questions, encoding="utf-8")
    with (WIKIRAG / "articles.jsonl").open(encoding="utf-8") as lines, \
            (out / "articles.jsonl").open("w", encoding="utf-8") as kept:
        kept.writelines(line for line in lines if json.loads(line)["title"] in titles)


def paper_run(path: str) -> None:
    """A run in the format of the paper's released ones: 12 rows of A_f (tests/data/golden/)."""
    shutil.copy(ROOT / "tests" / "data" / "golden" / "released-A_f-naive.pkl", path)


def example_dump(path: str) -> None:
    """The example articles as a history dump, as a wiki would export them."""
    write_dump(Path(path), list(article_pages(example_dir() / "articles.jsonl")))


def released_dump(path: str, fresh: int, old: int) -> None:
    """A history dump of `fresh` released articles created after GPT-4-0613's cutoff and `old`
    ones of the random sample, which predate it (tests/support/wikidump.py dates them 2015)."""
    rows = [json.loads(line) for line in (WIKIRAG / "articles.jsonl").open(encoding="utf-8")]
    chosen = [r for r in rows if r["created"]][:fresh] + [r for r in rows if not r["created"]][:old]
    subset = Path(path).with_name("released-subset.jsonl")
    subset.write_text("".join(json.dumps(r) + "\n" for r in chosen), encoding="utf-8")
    write_dump(Path(path), list(article_pages(subset)))
    subset.unlink()
