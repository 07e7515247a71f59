"""The `--help` examples that need what no unit test has, run as written (LIVE of
tests/support/live_examples.py; the rest run in tests/cli/test_help_examples.py, which checks
that list against every command's examples).

The `build` examples sample the real local MediaWiki as they would sample Wikipedia: the working
directory's freshrag.toml names the wiki (`[build] wiki_api`, docs/configuration.md) as a user
of another wiki would, and the builder role is the fake OpenAI-compatible server through
FRESHRAG_BASE_URL. The wiki holds the paper's released articles, each created two years later
than on Wikipedia (October 2023 to January 2026), so that the examples' dates (a 2024-06-30
cutoff, months 2024-01 to 2025-06, and a next version up to now) find articles on both sides.

`freshrag serve --port 8080` starts the embedded model as a user would, the served run example
runs on it (the example dataset, three questions, the default systems), and Ctrl-C stops it."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

import pytest

from freshrag.cli.main import main
from freshrag.core.jsonl import read_jsonl
from tests import WIKIRAG
from tests.integration.mediawiki import LocalMediaWiki
from tests.support.fake_openai_server import FakeOpenAIServer, forced_tool_name
from tests.support.live_examples import (
    DRY_RUN,
    MONTHLY,
    NEEDS,
    RECENT,
    SERVE,
    SERVED,
    SERVED_RUN,
    SINCE,
)
from tests.support.serving import serving
from tests.support.wikidump import article_pages, creation_log, write_dump

pytestmark = pytest.mark.integration

SHIFT = timedelta(days=731)  # two years, a leap day among them
END_OF_CUTOFF = datetime(2024, 7, 1, tzinfo=timezone.utc)  # the first instant after 2024-06-30
MONTHS = [f"{year}-{month:02d}" for year in (2024, 2025) for month in range(1, 13)][:18]
NEEDS_FILE = ("When did it open or first take place?\n"
              "Who is behind it?\n"
              "What did it cost?\n")


def moment(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone(timezone.utc)


def moved_articles(to: Path) -> dict[str, datetime]:
    """The released articles with each creation two years later, written to `to`; the new
    creation time by title (the undated ones keep the wiki's stand-in date of 2015)."""
    created = {}
    with (WIKIRAG / "articles.jsonl").open(encoding="utf-8") as rows, \
            to.open("w", encoding="utf-8") as out:
        for line in rows:
            row = json.loads(line)
            if row["created"]:
                later = moment(row["created"]) + SHIFT
                row["created"] = later.isoformat()
                created[row["title"]] = later
            out.write(json.dumps(row) + "\n")
    return created


@pytest.fixture(scope="module")
def wiki(tmp_path_factory) -> Iterator[tuple[str, dict[str, datetime]]]:
    """The local MediaWiki holding the moved articles with the creation log a wiki keeps (which
    `--created` samples by month); its api.php and each dated article's creation time."""
    root = tmp_path_factory.mktemp("wiki")
    created = moved_articles(root / "articles.jsonl")
    pages = list(article_pages(root / "articles.jsonl"))
    with LocalMediaWiki(root / "wiki") as local:
        local.import_dump(write_dump(root / "articles.xml", pages,
                                     log_items=creation_log(pages)), link_updates=False)
        yield local.api_url, created


def builder_reply(request: dict) -> dict:
    """The builder role's provider: every article mostly after the cutoff, a question naming its
    article, and for an information need a question on it, the passage's opening as its answer
    (BLANK for about one passage in three)."""
    user = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
    name = forced_tool_name(request)
    if name == "report_recency":
        return {"tool_call": {"name": name, "arguments": '{"mostly_after_cutoff": true}'}}
    if name == "submit_question":
        blank = int(hashlib.sha256(user.encode()).hexdigest(), 16) % 3 == 0
        need = request["messages"][0]["content"].split("information need: ")[1].split("\n")[0]
        arguments = {"question": "BLANK", "answer": ""} if blank else {
            "question": f"{need} (asked of: {user[:40]})", "answer": user[:80]}
        return {"tool_call": {"name": name, "arguments": json.dumps(arguments)}}
    title = user.splitlines()[0].removeprefix("Title: ")
    return {"content": f"What is said about {title}?"}


class User:
    """A working directory whose freshrag.toml names the wiki, the builder's provider in the
    environment; each example run as the shell splits it, what it printed kept."""

    def __init__(self, root: Path, server: FakeOpenAIServer):
        self.root, self.server = root, server
        self.printed: dict[str, str] = {}

    def run(self, line: str) -> int:
        printed = io.StringIO()
        with contextlib.redirect_stderr(printed), contextlib.redirect_stdout(printed):
            status = main(shlex.split(line)[1:])
        self.printed[line] = printed.getvalue()
        return status

    def ran(self, line: str) -> str:
        """What `line` printed; it must exit 0."""
        assert self.run(line) == 0, (line, self.printed[line][-3000:])
        return self.printed[line]


@pytest.fixture(scope="module")
def user(wiki, tmp_path_factory) -> Iterator[User]:
    root = tmp_path_factory.mktemp("user")
    (root / "freshrag.toml").write_text(f'[build]\nwiki_api = "{wiki[0]}"\n', encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch, FakeOpenAIServer(reply=builder_reply) as server:
        clean_environment(patch)
        patch.chdir(root)
        for variable, value in {"BASE_URL": server.base_url, "API_KEY": "sk-example",
                                "MODEL": "gpt-4o-mini"}.items():
            patch.setenv(f"FRESHRAG_{variable}", value)
        yield User(root, server)


def clean_environment(patch: pytest.MonkeyPatch) -> None:
    for name in [name for name in os.environ if name.startswith("FRESHRAG_")]:
        patch.delenv(name)


def titles(directory: Path, stage: str) -> list[str]:
    return (directory / f"{stage}.txt").read_text(encoding="utf-8").splitlines()


def test_a_recent_set_is_estimated_then_built(user, wiki):
    """The dry run counts the calls once A_r and A_d, which make none, are built (as it says to
    do); the build then finishes: its questions are on the sampled articles created after the
    cutoff, as the wiki dates them."""
    api_url, created = wiki
    out = user.root / "datasets" / "recent"
    for stage in ("A_r", "A_d"):
        user.ran(f"{RECENT} --stage {stage}")
    a_r, a_d = titles(out, "A_r"), titles(out, "A_d")
    # a verdict per A_d article, and a question too where the verdict lets it through
    estimate = user.ran(DRY_RUN)
    assert f"| builder | gpt-4o-mini | {len(a_d)}–{2 * len(a_d)} |" in estimate
    assert not user.server.requests  # counted, never asked
    user.ran(RECENT)
    assert len(user.server.requests) == 2 * len(a_d)  # every article judged fresh: the most
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["source"] == api_url
    assert len(a_r) == 200 == len(set(a_r))
    assert set(a_d) == {t for t in a_r if t in created and created[t] >= END_OF_CUTOFF}
    assert 0 < len(a_d) < len(a_r)
    questions = list(read_jsonl(out / "questions.jsonl"))
    assert sorted(q["title"] for q in questions) == sorted(a_d)  # every A_d article judged fresh
    assert all(q["question"] == f"What is said about {q['title']}?" for q in questions)


def test_a_monthly_set_then_its_next_version(user, wiki):
    """20 articles a month, each created in its month; then the next version takes, month by
    month up to now, up to 20 of the articles created after the first version's newest one, and
    every one there is where fewer remain."""
    _, created = wiki
    user.ran(MONTHLY)
    monthly = user.root / "datasets" / "monthly"
    articles = list(read_jsonl(monthly / "articles.jsonl"))
    assert Counter(row["month"] for row in articles) == {month: 20 for month in MONTHS}
    assert all(f"{created[row['title']]:%Y-%m}" == row["month"] for row in articles)
    assert {q["title"] for q in read_jsonl(monthly / "questions.jsonl")} == \
        {row["title"] for row in articles}
    version = json.loads((monthly / "manifest.json").read_text(encoding="utf-8"))["version"]
    newest = moment(version["created"]["last"])

    printed = user.ran(SINCE)
    second = user.root / "datasets" / "monthly-v2"
    assert f"dataset written to {second}" in printed
    manifest = json.loads((second / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["version"]["number"] == 2
    assert manifest["version"]["parent"]["id"] == version["id"]
    kept = Counter(row["month"] for row in read_jsonl(second / "articles.jsonl"))
    examined = Counter(row["month"] for row in read_jsonl(second / "sample.jsonl"))
    newer = Counter(f"{when:%Y-%m}" for when in created.values() if when > newest)
    assert sum(kept.values()) > 0 and set(kept) <= set(newer)
    for month, count in newer.items():  # 20, or every article of a month that has fewer
        assert kept[month] == 20 or examined[month] == count, month
    assert any(count < 20 for count in newer.values())  # the wiki runs out before now
    assert all(created[row["title"]] > newest for row in read_jsonl(second / "articles.jsonl"))


def test_a_set_for_information_needs(user, wiki):
    """needs.txt as `freshrag needs` writes it (one description a line); each question is on a
    need and an article created after the cutoff, and a BLANK passage gives none."""
    _, created = wiki
    (user.root / "needs.txt").write_text(NEEDS_FILE, encoding="utf-8")
    user.ran(NEEDS)
    out = user.root / "datasets" / "needs"
    needs = NEEDS_FILE.splitlines()
    questions = list(read_jsonl(out / "questions.jsonl"))
    asked = list(read_jsonl(out / "needs.jsonl"))
    assert len(titles(out, "A_r")) == 50
    assert questions and len(questions) == sum(row["outcome"] == "question" for row in asked)
    assert any(row["outcome"] == "blank" for row in asked)
    assert {q["information_need"] for q in questions} == set(needs)
    assert all(created[q["title"]] >= END_OF_CUTOFF for q in questions)


def command(line: str) -> list[str]:
    """A command line as the shell runs it: `freshrag` is the installed script beside this
    Python."""
    argv = shlex.split(line)
    script = Path(sys.executable).with_name(argv[0])
    found = str(script) if script.is_file() else shutil.which(argv[0])
    assert found, f"no {argv[0]} script installed beside {sys.executable} or on PATH"
    return [found, *argv[1:]]


def port_8080_is_free() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", 8080))
        except OSError as err:
            pytest.fail(f"port 8080 is taken on this machine ({err}): the example `{SERVE}` "
                        f"needs it free")


def wait_for_models(process: subprocess.Popen, log: Path, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, f"{SERVE} exited with {process.returncode}: " \
            f"{log.read_text(errors='replace')[-2000:]}"
        try:
            with urllib.request.urlopen(f"{SERVED}/models", timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    pytest.fail(f"{SERVED}/models did not answer within {timeout_s} s")


def test_the_served_model_answers_a_run_and_ctrl_c_stops_it(tmp_path, monkeypatch):
    """`freshrag serve --port 8080`, then the run example on it in a fresh environment, then
    Ctrl-C: the run wrote every default system's answer to three questions, every role on the
    served model but the embeddings; the server exits as Ctrl-C ends a program (130)."""
    port_8080_is_free()
    clean_environment(monkeypatch)
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "serve.log"
    with log.open("wb") as errors, serving(command(SERVE), stderr=errors) as process:
        wait_for_models(process, log)
        assert f"serving SmolLM2-135M-Instruct at {SERVED}" in process.stdout.readline()
        printed = io.StringIO()
        with contextlib.redirect_stderr(printed), contextlib.redirect_stdout(printed):
            status = main(shlex.split(SERVED_RUN)[1:])
        assert status == 0, printed.getvalue()[-3000:]
    rows = list(read_jsonl(tmp_path / "results" / "served" / "samples.jsonl"))
    answered = Counter(row["system"] for row in rows)
    assert len(answered) == 4 and set(answered.values()) == {3}, answered
    roles = json.loads((tmp_path / "results" / "served" / "manifest.json")
                       .read_text(encoding="utf-8"))["llm"]["roles"]
    assert {role: roles[role]["base_url"] for role in roles} == {
        **{role: SERVED for role in roles}, "embeddings": "local"}
    with pytest.raises((urllib.error.URLError, OSError)):
        urllib.request.urlopen(f"{SERVED}/models", timeout=3)
