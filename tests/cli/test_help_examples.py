"""Every example a command's `--help` prints (the EXAMPLES of each module of
harness/cli/commands/, read here, so a new command's examples are in scope by themselves) runs as
written: in a temporary working directory holding the paths the examples name (the example
dataset copied to datasets/recent and datasets/monthly), in the order a user would run them,
with the fake OpenAI-compatible server standing in for the provider (its URL in place of
https://api.openai.com/v1, and in FRESHRAG_BASE_URL for the commands that name none).

An example that needs what no unit test has (a wiki to sample, a Qdrant server, the embedded
model in the foreground, files a user brings) is listed in PENDING with what it needs; the test
fails on an example neither run nor listed."""

from __future__ import annotations

import importlib
import os
import pkgutil
import shlex
import shutil
from pathlib import Path

import freshrag.cli.commands as commands
from freshrag.cli.main import main
from freshrag.core.dataset import example_dir
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import scorers_reply

PROVIDER = "https://api.openai.com/v1"

# In the order they run: each may use what the ones before it wrote. The value is the exit
# status expected: probe-judge exits 1 when the judge fails its probes, as the fake one does.
RUN = {
    "freshrag systems": 0,
    "freshrag datasets datasets/": 0,
    "freshrag datasets datasets/monthly --format json": 0,
    "freshrag index --articles datasets/recent/articles.jsonl": 0,
    "freshrag label --dataset datasets/recent": 0,
    "freshrag scan-retrieval --dataset datasets/recent --k 5 --weights 0,0.2,1": 0,
    "freshrag run --limit 3 --systems baseline,naive   # the example dataset, no key": 0,
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
}

WIKI = "a wiki's api.php to sample (en.wikipedia.org is out of reach of a unit test)"
PENDING = {
    "freshrag build --n 200 --cutoff 2024-06-30 --out datasets/recent": WIKI,
    "freshrag build --n 200 --cutoff 2024-06-30 --out datasets/recent --dry-run": WIKI,
    "freshrag build --created 2024-01:2025-06 --per-month 20 --out datasets/monthly": WIKI,
    "freshrag build --since datasets/monthly": WIKI,
    "freshrag build --needs needs.txt --cutoff 2024-06-30 --n 50 --out datasets/needs": WIKI,
    "freshrag build --dump enwiki-pages-meta-history1.xml.bz2 --cutoff-model gpt-4-0613 "
    "--out datasets/gpt4": "a dump file of that name",
    "freshrag index --articles articles.jsonl --qdrant-url http://localhost:6333":
        "a Qdrant server",
    "freshrag serve --port 8080": "the embedded model, in the foreground until stopped",
    "freshrag run --base-url http://127.0.0.1:8080/v1 --model smollm2-135m-instruct":
        "freshrag serve running",
    "freshrag demo": "its own run directory, results/demo (tests/cli/test_demo.py)",
    "freshrag demo --full --out results/demo-full": "the whole example corpus",
    "freshrag agreement results/judge-gpt-4o results/judge-mini": "two runs of those names",
    "freshrag agreement results/recent results/recent --repeat-a 0 --repeat-b 1":
        "a run with repeats",
    "freshrag agreement --human ana.jsonl ben.jsonl results/recent": "two labels files",
    "freshrag export results/agents --format ragas --out agents-ragas.jsonl": "an agents run",
    "freshrag export results/gpt-4o results/mini --format jsonl --systems naive,react "
    "--out answers.jsonl": "two runs of those names",
    "freshrag gate results/main results/pr --rules gate.toml": "two runs and a rules file",
    "freshrag gate results/main results/pr --rules gate.toml --markdown gate.md "
    "--junit gate.xml": "two runs and a rules file",
    "freshrag import my-answers.jsonl --system mine --dataset datasets/recent":
        "an answers file",
    f"freshrag import ragas.csv --system ragas --dataset datasets/recent --base-url {PROVIDER} "
    "--model-role judge=gpt-4o": "an answers file",
    "freshrag import-legacy A_f_naive.pkl --dataset data/A_f --system naive --out results/paper":
        "the paper's pickle",
    "freshrag import-legacy A_f_naive.pkl --dataset-name A_f --system naive "
    "--out results/paper": "the paper's pickle",
    f"freshrag label --dataset datasets/recent --hand-labels my-labels.jsonl --base-url "
    f"{PROVIDER} --model gpt-4o-mini": "a hand labels file",
    "freshrag mix --dataset datasets/traffic --fresh 0.1 --control 0.6 --general 0.3 --n 100 "
    "--out datasets/traffic-10pc": "a dataset built with traffic",
    "freshrag needs --queries queries.jsonl --out needs.txt": "a log of queries",
    "freshrag report results/recent --html report.html": "a run in results/recent",
    "freshrag report results/gpt-4o results/mini --by label --format csv":
        "two runs of those names",
    "freshrag report results/recent --html label.html --label --label-sample 150":
        "a run in results/recent",
    f"freshrag run --dataset datasets/recent --base-url {PROVIDER} --model gpt-4o-mini":
        "the whole dataset answered (a minute on the fake server)",
    "freshrag score results/recent --scorers faithfulness,abstention": "a run in results/recent",
    f"freshrag score results/recent --scorers judge --repeats 3 --base-url {PROVIDER} "
    "--model-role judge=gpt-4o --model-role scorer=gpt-4o": "a run in results/recent",
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
    assert sorted(examples - set(RUN) - set(PENDING)) == []  # a new example: run it here
    assert sorted((set(RUN) | set(PENDING)) - examples) == []  # an example gone or changed
    assert not set(RUN) & set(PENDING)


def test_the_help_examples_run_as_written(tmp_path, monkeypatch, capsys):
    for name in [name for name in os.environ if name.startswith("FRESHRAG_")]:
        monkeypatch.delenv(name)
    for name in ("recent", "monthly"):
        shutil.copytree(example_dir(), tmp_path / "datasets" / name)
    monkeypatch.chdir(tmp_path)
    with FakeOpenAIServer(reply=scorers_reply) as server:
        for variable, value in (("BASE_URL", server.base_url), ("API_KEY", "sk-example"),
                                ("MODEL", "gpt-4o-mini"), ("EMBEDDINGS_MODEL", "fake-embed")):
            monkeypatch.setenv(f"FRESHRAG_{variable}", value)
        for line, status in RUN.items():
            argv = shlex.split(line.replace(PROVIDER, server.base_url), comments=True)
            assert argv[0] == "freshrag"
            assert main(argv[1:]) == status, (line, capsys.readouterr().err[-2000:])
    assert (tmp_path / "datasets" / "recent-fresh" / "questions.jsonl").is_file()
    assert (tmp_path / "results" / "mini-cutoff" / "cutoff.png").is_file()
    assert server.requests and server.embedding_requests
    # the public API reads what the examples wrote, named as a user types it
    import freshrag

    rows = freshrag.load_runs("results/known")
    assert len(rows) == 40 and rows == freshrag.load_runs([Path("results/known")]) \
        == freshrag.load_runs(["results/known"])
