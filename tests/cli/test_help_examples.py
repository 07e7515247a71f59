"""Every example a command's `--help` prints (the EXAMPLES of each module of
harness/cli/commands/, read here, so a new command's examples are in scope by themselves) runs as
written: in a temporary working directory holding the paths the examples name (the example
dataset copied to datasets/recent and datasets/monthly), in the order a user would run them,
with the fake OpenAI-compatible server standing in for every endpoint (its URL in place of
https://api.openai.com/v1 and of `freshrag serve`'s, and in FRESHRAG_BASE_URL for the commands
that name none; tests/support/workspace.py).

What an example reads and no example before it wrote is made first, as a user would make it
(BEFORE): by a command (two runs to compare, a build from a dump) or in the file's documented
format. The examples share one working directory across the tests of this module; a test runs
every example up to its own first, so any one of them runs alone.

An example that needs what no unit test has is run by tests/integration/test_help_examples_live.py
(LIVE of tests/support/live_examples.py: a wiki to sample, the embedded model in the foreground)
or listed in PENDING with what it needs; the test fails on an example neither run nor listed."""

from __future__ import annotations

import argparse
import contextlib
import csv
import importlib
import io
import json
import pkgutil
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Callable

import pytest

import freshrag.cli.commands as commands
from freshrag.cli.commands.corpus import EXAMPLES as CORPUS_EXAMPLES
from freshrag.cli.commands.seed_server import EXAMPLES as SEED_EXAMPLES
from freshrag.cli.main import parser
from freshrag.core.dataset import example_dir, load_dataset_dir
from freshrag.systems import SYSTEMS
from tests.support import workspace as user
from tests.support.live_examples import LIVE
from tests.support.workspace import PROVIDER, SERVED, Workspace

MIX = ("freshrag mix --dataset datasets/traffic --fresh 0.1 --control 0.6 --general 0.3 --n 100 "
       "--out datasets/traffic-10pc")
EXAMPLE_SET = "freshrag datasets   # the example dataset, and its folder"
GATE = "freshrag gate results/main results/pr --rules gate.toml"
GATE_GITHUB = f"{GATE} --format github --junit gate.xml"
DEMO = "freshrag demo --full --out results/demo-full"
IMPORT_JSONL = ("freshrag import my-answers.jsonl --system mine --dataset datasets/recent "
                "--out results/mine-imported")
IMPORT_CSV = (f"freshrag import ragas.csv --system ragas --dataset datasets/recent --base-url "
              f"{PROVIDER} --model-role judge=gpt-4o --out results/ragas")
INSPECT = "freshrag export results/agents --format inspect --out 2026-01-31T12-00-00_agents.json"
RAGCHECKER = ("freshrag export results/agents --format ragchecker --systems react "
              "--out react-ragchecker.json")
IMPORT_TRACES = ("freshrag import agent-traces.json --system agent --dataset datasets/recent "
                 "--out results/agent-traced")
SHARDED = "freshrag run --limit 6 --systems baseline,oracle"
MERGE = "freshrag merge results/shard-1 results/shard-2 results/shard-3 --out results/sharded"
HAND = (f"freshrag label --dataset datasets/recent --hand-labels my-labels.jsonl --base-url "
        f"{PROVIDER} --model gpt-4o-mini")

# In the order they run: each may use what the ones before it wrote. The value is the exit
# status expected: probe-judge exits 1 when the judge fails its probes, as the fake one does,
# and so does the gate, whose documented rules ask for a judge that passes them.
RUN = {
    "freshrag systems": 0,
    "freshrag datasets datasets/": 0,
    "freshrag datasets datasets/monthly --format json": 0,
    EXAMPLE_SET: 0,
    "freshrag build --dump enwiki-pages-meta-history1.xml.bz2 --cutoff-model gpt-4-0613 "
    "--out datasets/gpt4": 0,
    "freshrag index --articles datasets/recent/articles.jsonl": 0,
    "freshrag label --dataset datasets/recent": 0,
    HAND: 0,
    "freshrag scan-retrieval --dataset datasets/recent --k 5 --weights 0,0.2,1": 0,
    "freshrag needs --queries queries.jsonl --out needs.txt": 0,
    MIX: 0,
    "freshrag run --limit 3 --systems baseline,naive   # the example dataset, no key": 0,
    f"{SHARDED} --shard 2/3 --out results/shard-2   # task 2 of 3; `freshrag merge` joins": 0,
    MERGE: 0,
    f"freshrag run --base-url {SERVED} --model smollm2-135m-instruct --limit 3 "
    "--out results/served": 0,
    f"freshrag run --dataset datasets/recent --base-url {PROVIDER} --model gpt-4o-mini "
    "--model-role judge=gpt-4o --dry-run": 0,
    "freshrag run --dataset datasets/recent --systems baseline --model gpt-4o-mini "
    "--out results/known": 0,
    "freshrag filter results/known --dataset datasets/recent --out datasets/recent-fresh": 0,
    f"freshrag cutoff --dataset datasets/monthly --base-url {PROVIDER} --model gpt-4o-mini "
    "--dry-run": 0,
    f"freshrag cutoff --dataset datasets/monthly --base-url {PROVIDER} --model gpt-4o-mini "
    "--stated-cutoff 2023-10-31": 0,
    "freshrag cutoff --dataset datasets/monthly --model-role judge=gpt-4o "
    "--out results/mini-cutoff --max-cost 5": 0,
    "freshrag probe-judge --dataset datasets/recent": 1,
    f"freshrag probe-judge --dataset datasets/recent --base-url {PROVIDER} "
    "--model-role judge=gpt-4o": 1,
    f"freshrag run --dataset datasets/recent --base-url {PROVIDER} --model gpt-4o-mini": 0,
    "freshrag score results/recent --scorers faithfulness,abstention": 0,
    f"freshrag score results/recent --scorers judge --repeats 3 --base-url {PROVIDER} "
    "--model-role judge=gpt-4o --model-role scorer=gpt-4o": 0,
    "freshrag agreement results/recent results/recent --repeat-a 0 --repeat-b 1": 0,
    "freshrag report results/recent --html report.html": 0,
    "freshrag report results/recent --html label.html --label --label-sample 150": 0,
    "freshrag agreement --human ana.jsonl ben.jsonl results/recent": 0,
    "freshrag agreement results/judge-gpt-4o results/judge-mini": 0,
    "freshrag export results/agents --format ragas --out agents-ragas.jsonl": 0,
    "freshrag export results/agents --format jsonl --out -": 0,
    "freshrag export results/gpt-4o results/mini --format jsonl --systems naive,react "
    "--out answers.jsonl": 0,
    "freshrag export results/agents --format otel --out agents-traces.jsonl": 0,
    INSPECT: 0,
    RAGCHECKER: 0,
    "freshrag report results/gpt-4o results/mini --by label --format csv": 0,
    GATE: 1,
    GATE_GITHUB: 1,
    IMPORT_JSONL: 0,
    IMPORT_CSV: 0,
    IMPORT_TRACES: 0,
    "freshrag import-legacy A_f_naive.pkl --dataset data/A_f --system naive --out results/paper":
        0,
    "freshrag import-legacy A_f_naive.pkl --dataset-name A_f --system naive "
    "--out results/paper": 0,
    DEMO: 0,  # the fake server in FRESHRAG_BASE_URL stands in for the embedded model
}

Step = str | Callable[[], None]  # a command a user runs first, or a file made
RUN_ON = "freshrag run --dataset datasets/recent"
BEFORE: dict[str, tuple[Step, ...]] = {
    "freshrag build --dump enwiki-pages-meta-history1.xml.bz2 --cutoff-model gpt-4-0613 "
    "--out datasets/gpt4": (partial(user.example_dump, "enwiki-pages-meta-history1.xml.bz2"),),
    HAND: (partial(user.hand_labels, "my-labels.jsonl", "datasets/recent"),),
    "freshrag needs --queries queries.jsonl --out needs.txt": (
        partial(user.query_log, "queries.jsonl"),),
    MIX: (partial(user.released_dump, "traffic-wiki.xml.bz2", fresh=12, old=64),
          "freshrag build --dump traffic-wiki.xml.bz2 --cutoff-model gpt-4-0613 --control 60 "
          "--general 30 --out datasets/traffic"),
    "freshrag agreement --human ana.jsonl ben.jsonl results/recent": (
        partial(user.people_labels, "label.html", "ana.jsonl", "ana", first=30),
        partial(user.people_labels, "label.html", "ben.jsonl", "ben", first=20)),
    "freshrag agreement results/judge-gpt-4o results/judge-mini": (
        f"{RUN_ON} --systems baseline --model-role judge=gpt-4o --out results/judge-gpt-4o",
        f"{RUN_ON} --systems baseline --model-role judge=gpt-4o-mini --out results/judge-mini"),
    "freshrag export results/agents --format ragas --out agents-ragas.jsonl": (
        f"{RUN_ON} --systems react --out results/agents",),
    "freshrag export results/agents --format jsonl --out -": (
        f"{RUN_ON} --systems react --out results/agents",),
    "freshrag export results/agents --format otel --out agents-traces.jsonl": (
        f"{RUN_ON} --systems react --out results/agents",),
    INSPECT: (f"{RUN_ON} --systems react --out results/agents",),
    RAGCHECKER: (f"{RUN_ON} --systems react --out results/agents",),
    "freshrag export results/gpt-4o results/mini --format jsonl --systems naive,react "
    "--out answers.jsonl": (f"{RUN_ON} --systems naive,react --model gpt-4o --out results/gpt-4o",
                            f"{RUN_ON} --systems naive,react --out results/mini"),
    # seed 3: the fake judge grades 4 (a correct answer), so tokens per correct answer are known
    GATE: (partial(user.gate_rules, "gate.toml"),
           f"{RUN_ON} --systems naive --seed 3 --out results/main",
           f"{RUN_ON} --systems naive --seed 3 --top-k 3 --out results/pr"),
    MERGE: tuple(f"{SHARDED} --shard {i}/3 --out results/shard-{i}" for i in (1, 3)),
    IMPORT_JSONL: (partial(user.answers_jsonl, "my-answers.jsonl", "datasets/recent"),),
    IMPORT_CSV: (partial(user.ragas_csv, "ragas.csv", "datasets/recent"),),
    IMPORT_TRACES: (f"{RUN_ON} --systems react --out results/agents",
                    "freshrag export results/agents --format otel --out agent-traces.json"),
    "freshrag import-legacy A_f_naive.pkl --dataset data/A_f --system naive --out results/paper":
        (partial(user.paper_set, "data/A_f"), partial(user.paper_run, "A_f_naive.pkl")),
}

PENDING = {
    **dict.fromkeys(CORPUS_EXAMPLES, "a whole Wikipedia's dump files, or a wiki at "
                    "wiki.example.org (tests/builders/corpus runs the same options on generated "
                    "dumps and a scripted wiki)"),
    "freshrag index --articles articles.jsonl --corpus corpora/known":
        "the corpus of a whole Wikipedia that `freshrag corpus` makes (tests/retrieval/"
        "test_corpus_index.py indexes a corpus of a generated dump)",
    "freshrag index --articles articles.jsonl --corpus corpora/known --executor ray "
    "--address ray://head:10001":
        "a Ray cluster at head:10001 (tests/retrieval/test_on_ray.py builds the index on a "
        "two-node cluster on this machine)",
    "freshrag scan-retrieval --dataset datasets/recent --executor ray --address ray://head:10001":
        "a Ray cluster at head:10001 (tests/retrieval/test_on_ray.py scans with the index built "
        "on a two-node cluster on this machine)",
    "freshrag index --articles articles.jsonl --qdrant-url http://localhost:6333":
        "a Qdrant server (no package on PyPI or Debian runs one without docker)",
    **dict.fromkeys(SEED_EXAMPLES, "a Qdrant server (tests/retrieval/test_seed.py seeds "
                    "qdrant-client's local mode through the same client API)"),
    "freshrag demo": "the embedded model (tests/cli/test_demo.py and the clean-room install)",
}
SHELL = {"export FRESHRAG_API_KEY=sk-..."}  # a line for the shell, not a command


def help_examples() -> list[str]:
    """Every line of every command module's EXAMPLES, in module order."""
    found = []
    for module in pkgutil.iter_modules(commands.__path__):
        found += getattr(importlib.import_module(f"{commands.__name__}.{module.name}"),
                         "EXAMPLES", ())
    return found


def test_every_help_example_is_run_or_says_what_it_needs():
    examples = set(help_examples()) - SHELL
    live = set(LIVE)  # run on the local wiki and the embedded model
    assert sorted(examples - set(RUN) - live - set(PENDING)) == []  # a new example: run it here
    assert sorted((set(RUN) | live | set(PENDING)) - examples) == []  # one gone or changed
    assert not (set(RUN) | live) & set(PENDING)
    assert set(BEFORE) <= set(RUN)


def test_the_help_says_which_dataset_is_the_default_and_where_it_is(examples):
    """Each command whose --dataset defaults to the example dataset says how large it is and
    how to find its folder, which `freshrag datasets` then prints."""
    [sub] = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    questions = len(load_dataset_dir(example_dir()).questions)
    said = f"(default: the example dataset shipped with freshrag, {questions} questions on " \
           "invented articles; `freshrag datasets` prints its folder)"
    defaulting = {name for name, command in sub.choices.items()
                  if said in " ".join(command.format_help().split())}
    assert defaulting == {"run", "cutoff", "import", "probe-judge", "scan-retrieval"}
    examples.through(EXAMPLE_SET)
    assert examples.printed[EXAMPLE_SET].startswith(
        f"the example dataset shipped with freshrag: {example_dir()}\n")


class Examples:
    """The examples run in order, each once, in one working directory; what each printed."""

    def __init__(self, work: Workspace):
        self.work, self.done = work, 0
        self.printed: dict[str, str] = {}

    def through(self, last: str) -> Path:
        """Run every example up to `last`, with what each needs first; the working directory."""
        lines = list(RUN)
        for line in lines[self.done:lines.index(last) + 1]:
            for step in BEFORE.get(line, ()):
                if callable(step):
                    step()
                else:
                    assert self.command(step) == 0, (step, self.printed[step][-3000:])
            assert self.command(line) == RUN[line], (line, self.printed[line][-3000:])
            self.done += 1
        return self.work.root

    def command(self, line: str) -> int:
        printed = io.StringIO()
        with contextlib.redirect_stderr(printed), contextlib.redirect_stdout(printed):
            status = self.work.run(line)
        self.printed[line] = printed.getvalue()
        return status


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    root = tmp_path_factory.mktemp("user")
    with user.workspace(root) as work:
        for name in ("recent", "monthly"):
            user.copy_example(f"datasets/{name}")
        yield Examples(work)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_the_datasets_are_built_labelled_and_mixed(examples):
    root = examples.through(MIX)
    built = rows(root / "datasets" / "gpt4" / "questions.jsonl")
    fresh = {row["title"] for row in rows(root / "datasets" / "recent" / "articles.jsonl")
             if row["created"] > "2021-09-30"}  # GPT-4-0613's cutoff
    assert built and {row["title"] for row in built} <= fresh
    assert all(row["label"] for row in rows(root / "datasets" / "recent" / "questions.jsonl"))
    assert "kappa" in examples.printed[HAND]  # the labeller against the hand labels
    assert (root / "needs.txt").read_text(encoding="utf-8").strip()
    mixed = rows(root / "datasets" / "traffic-10pc" / "questions.jsonl")
    assert sorted(row["kind"] for row in mixed) == ["control"] * 60 + ["fresh"] * 10 + \
        ["general"] * 30


def test_the_runs_filter_and_cutoff(examples):
    root = examples.through(f"freshrag probe-judge --dataset datasets/recent --base-url "
                            f"{PROVIDER} --model-role judge=gpt-4o")
    assert len(rows(root / "results" / "served" / "samples.jsonl")) == 4 * 3
    assert sorted((row["question_id"], row["system"]) for row in rows(
        root / "results" / "sharded" / "samples.jsonl")) == sorted(
        (f"q{i:05d}", system) for i in range(1, 7) for system in ("baseline", "oracle"))
    assert (root / "datasets" / "recent-fresh" / "questions.jsonl").is_file()
    assert (root / "results" / "mini-cutoff" / "cutoff.png").is_file()
    assert examples.work.server.requests and examples.work.server.embedding_requests
    # the public API reads what the examples wrote, named as a user types it
    import freshrag

    known = freshrag.load_runs("results/known")
    assert len(known) == 40 and known == freshrag.load_runs([Path("results/known")]) \
        == freshrag.load_runs(["results/known"])


def test_a_run_is_scored_reported_labelled_and_agreed_on(examples):
    root = examples.through("freshrag agreement --human ana.jsonl ben.jsonl results/recent")
    repeats = json.loads((root / "results" / "agreement-recent-vs-recent" / "agreement.json")
                         .read_text(encoding="utf-8"))
    assert repeats["pairs"]["compared"] == 4 * 40
    for page in ("report.html", "label.html"):
        assert (root / page).is_file()
    human = json.loads((root / "results" / "agreement-human-recent" / "agreement.json")
                       .read_text(encoding="utf-8"))
    assert human["labels"] and not human["notes"]  # every label named an answer of the run


def test_runs_are_compared_exported_and_gated(examples):
    root = examples.through(GATE_GITHUB)
    assert (root / "results" / "agreement-judge-gpt-4o-vs-judge-mini" / "agreement.json").is_file()
    samples = rows(root / "agents-ragas.jsonl")  # react searched once, then answered
    assert len(samples) == 40 and all(
        [m["type"] for m in s["user_input"]] == ["human", "ai", "tool", "ai"] for s in samples)
    assert {row["system"] for row in rows(root / "answers.jsonl")} == {"naive", "react"}
    assert len(list(csv.DictReader(io.StringIO(examples.printed[
        "freshrag report results/gpt-4o results/mini --by label --format csv"])))) > 0
    verdicts = [line.rsplit("|", 2)[1].strip() for line in
                examples.printed[GATE_GITHUB].splitlines()
                if line.startswith("| `") and line.endswith(("| pass |", "| **FAIL** |"))]
    # the fake judge fails its probes
    assert verdicts == ["pass", "pass", "pass", "**FAIL**", "pass"]
    assert (root / "gate.xml").is_file()


def test_answers_made_elsewhere_are_imported(examples):
    root = examples.through(IMPORT_CSV)
    mine = rows(root / "results" / "mine-imported" / "samples.jsonl")
    assert len(mine) == 40 and all(row["usage"]["answer"]["input"] == 300 for row in mine)
    ragas = rows(root / "results" / "ragas" / "samples.jsonl")
    assert len(ragas) == 40 and all("faithfulness" in row["details"]["ragas_scores"]
                                    for row in ragas)
    paper = root / "results" / "paper" / "samples.jsonl"
    first, again = [line for line in RUN if line.startswith("freshrag import-legacy")]
    examples.through(first)
    assert [row["question_id"].startswith("A_f/legacy-") for row in rows(paper)] == [False] * 12
    examples.through(again)  # the same file again, by name alone: its rows replaced
    assert [row["question_id"].startswith("A_f/legacy-") for row in rows(paper)] == [True] * 12


def test_the_whole_demo_runs(examples):
    """Every example article through every built-in system (a question on each of the 20 created
    after the demo's cutoff), judged and reported."""
    root = examples.through(DEMO) / "results" / "demo-full"
    answered = Counter(row["system"] for row in rows(root / "run" / "samples.jsonl"))
    assert set(answered) == set(SYSTEMS) and set(answered.values()) == {20}
    assert (root / "report.html").is_file()
