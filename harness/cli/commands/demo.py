"""`freshrag demo`: the whole workflow, offline, on the example corpus shipped with freshrag
(docs/cli.md).

The 40 invented example articles (20 about events of 2026, 20 created 2008-2019) are written as
the MediaWiki XML dump a real wiki would export, and then the real commands run one after the
other, each printed before it starts:

1. `freshrag build --dump`: A_r, the date filter (A_d), the recency classifier (A_f), questions;
2. `freshrag run`: every system on every question built, judged (the index is built on the way);
3. `freshrag report --html`: tables, analysis, figures and one self-contained HTML page.

With the embedded defaults (SmolLM2-135M on llama.cpp, MiniLM, embedded Qdrant) it needs no key
and no network. Questions are asked about every A_d article rather than only A_f: the 135M
classifier's verdicts are close to chance, and an empty A_f would leave nothing to run. The dump
holds only as many articles created after the cutoff as the run asks questions (a seeded
sample; every older article stays, as the rest of the corpus), so the build writes exactly the
questions the run asks.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import time
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from freshrag.cli.options import add_command, add_models
from freshrag.cli.values import out_dir, whole
from freshrag.run.options import MAX_QUESTIONS

if TYPE_CHECKING:
    from freshrag.builders.sources.export import DumpPage

NAME = "demo"
HELP = "the whole workflow, offline, on the example corpus"

DEMO_CUTOFF = "2025-12-31"  # after the older example articles, before the invented 2026 events
# The example corpus' present, after its last invented event: dated-boolean states it, and a
# fixed date lets a demo interrupted one day resume the next (a run's date is part of its identity).
DEMO_TODAY = "2026-12-01"
# The demo's size: each step does enough work to show what it shows, and the whole fits in under 5
# minutes on 2 cores (tests/benchmarks/bench_demo_floor.py times it against the time its tokens
# alone need; docs/measurements.md#the-demo): 2 articles created after the cutoff, each classified
# and given a question that goes through every system, among the 20 older ones; the run probes the
# judge on as many questions as it asks. --full writes every example article and runs every
# question they give.
DEMO_QUESTIONS = 2
# What the demo's run saves where a new user sees no difference (docs/running.md#the-demo): the
# agents' steps bounded at 3 (a search, another, the answer: still more than one search) and 3
# chunks a retrieval instead of 5, which halve the answering calls' prompts; --full runs with
# the run's defaults.
DEMO_RUN = ("--max-steps", "3", "--top-k", "3")


DESCRIPTION = ("Writes the 40 example articles shipped with freshrag as a MediaWiki dump, then "
               "runs `freshrag build`, `freshrag run` (every built-in system, judged) and "
               "`freshrag report --html` on it, each printed before it starts. With the "
               "embedded model it needs no key and no network; the models options are handed "
               "to build and run.")
EXAMPLES = ("freshrag demo",
            "freshrag demo --full --out results/demo-full")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    size = p.add_argument_group("size")
    size.add_argument("--limit", type=whole(1, MAX_QUESTIONS), default=None,
                      help=f"questions written and run through every system, one per article "
                           f"created after the cutoff (default: {DEMO_QUESTIONS}, with --full "
                           f"one per such article)")
    size.add_argument("--full", action="store_true",
                      help="every example article and a question on each created after the "
                           "cutoff, not a sample of those (several times as long)")
    add_models(p)
    p.add_argument_group("output").add_argument(
        "--out", type=out_dir, default=Path("results") / "demo",
        help="where the dataset, the run and report.html go (default: %(default)s)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.cli.main import main
    from freshrag.systems import SYSTEMS

    questions = args.limit or (None if args.full else DEMO_QUESTIONS)
    return run_demo(args.out, questions, list(SYSTEMS), main, models=model_arguments(args))


def model_arguments(args: argparse.Namespace) -> tuple[str, ...]:
    """The options of the group "models and endpoints" as given, for build and run."""
    given = [("--model", args.model), ("--base-url", args.base_url),
             ("--config", args.config and str(args.config)),
             *(("--model-role", f"{role}={model}") for role, model in args.model_role or ())]
    return tuple(part for option, value in given if value for part in (option, value))


def example_pages() -> list[DumpPage]:
    """The example articles as wiki pages, one revision each at its `created` time; the articles
    named in `infoboxes.json` start with their infobox, as Wikipedia's do (the facts stage reads
    it; the plain text, which drops templates, is the article's content as before)."""
    from freshrag.builders.sources.export import DumpPage, Revision
    from freshrag.core.dataset import example_dir

    with (example_dir() / "articles.jsonl").open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines if line.strip()]
    infoboxes = json.loads((example_dir() / "infoboxes.json").read_text(encoding="utf-8"))
    return [DumpPage(page_id, row["title"],
                     [Revision(2 * page_id, row["created"].replace("+00:00", "Z"),
                               (infoboxes[row["title"]] + "\n" if row["title"] in infoboxes
                                else "") + row["content"])])
            for page_id, row in enumerate(rows, start=1)]


def demo_pages(questions: int | None) -> list[DumpPage]:
    """The example pages of the demo's dump: `questions` of those created after the cutoff (a
    seeded sample; None: all), so that the build writes only the questions the run asks, and
    every older one, in the examples' order."""
    from freshrag.builders.cutoffs import created_after

    pages = example_pages()
    cutoff = date.fromisoformat(DEMO_CUTOFF)
    newer = [page for page in pages if created_after(page.revisions[0].timestamp, cutoff)]
    asked = newer if questions is None else random.Random(0).sample(
        newer, min(questions, len(newer)))
    return [page for page in pages if page in asked or page not in newer]


def write_example_dump(path: Path, questions: int | None = None) -> Path:
    """The demo's pages (`demo_pages`) as a history dump."""
    from freshrag.builders.sources.export import write_dump

    pages = demo_pages(questions)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_dump(path, pages)


def demo_commands(out: Path, questions: int | None, systems: list[str],
                  models: tuple[str, ...] = ()) -> list[list[str]]:
    """The commands the demo runs; `models` are options of the group "models and endpoints".
    The run asks every question the build wrote (one per article after the cutoff), with
    DEMO_RUN's bounds unless the demo is --full (`questions` None)."""
    dataset, run = out / "example", out / "run"  # the tables name the dataset by its directory
    return [
        ["build", "--dump", str(out / "example-wiki.xml"), "--cutoff", DEMO_CUTOFF,
         "--out", str(dataset), "--questions-from", "A_d", *models],
        ["run", "--dataset", str(dataset), "--systems", ",".join(systems),
         "--knowledge-cutoff", DEMO_CUTOFF, "--today", DEMO_TODAY, "--out", str(run),
         *(DEMO_RUN if questions is not None else ()), *models],
        ["report", str(run), "--html", str(out / "report.html")],
    ]


def run_demo(out: Path, questions: int | None, systems: list[str],
             command: Callable[[list[str]], int], models: tuple[str, ...] = ()) -> int:
    """Write the dump, then run each command through `command` (the CLI's main), stopping at the
    first that fails; returns its exit status."""
    from freshrag.core.files import write_json
    from freshrag.core.manifest import read_manifest
    from freshrag.core.outputs import check_outputs, files_in
    from freshrag.scoring.probes import verdict_lines

    check_outputs(files_in(out, ("example-wiki.xml", TIMINGS_FILE, "report.html"), "--out"), [])
    write_example_dump(out / "example-wiki.xml", questions)
    stages: list[dict] = []
    for argv in demo_commands(out, questions, systems, models):
        print(f"\n$ freshrag {' '.join(argv)}", flush=True)
        with timed_stage(argv[0], stages):
            status = command(argv)
        if status != 0:
            return status
    print(f"\nthe demo's report: {out / 'report.html'}  (tables also in {out / 'run'}/)")
    print("\n".join(verdict_lines((read_manifest(out / "run") or {}).get("judge_probe"))))
    print("\n" + stage_table(stages))
    write_json(out / TIMINGS_FILE, {"stages": stages})
    return 0


TIMINGS_FILE = "timings.json"  # read by tests/benchmarks/bench_demo_floor.py


@contextlib.contextmanager
def timed_stage(name: str, stages: list[dict]) -> Iterator[None]:
    """Appends the stage's wall time and the model calls made in it, per role (calls answered
    from the cache are not counted: they cost no model time)."""
    from freshrag.llm.tally import TALLY

    before, started = TALLY.snapshot(), time.perf_counter()
    try:
        yield
    finally:
        after = TALLY.snapshot()
        roles = {role: dict(zip(("calls", "input", "output"),
                                (a - b for a, b in zip(counts, before.get(role, (0, 0, 0))))))
                 for role, counts in sorted(after.items())}
        stages.append({"stage": name, "seconds": round(time.perf_counter() - started, 2),
                       "roles": {role: c for role, c in roles.items() if c["calls"]}})


def stage_table(stages: list[dict]) -> str:
    """The demo's closing table: each command's time and the model's calls and tokens in it."""
    lines = ["the demo's stages (wall time; live model calls and their tokens):",
             f"  {'stage':<18}{'seconds':>8}{'calls':>7}{'prompt tok':>12}{'output tok':>12}"]
    for stage in stages:
        rows = [(stage["stage"], stage["seconds"], stage["roles"].values())]
        rows += [(f"  {role}", None, [c]) for role, c in stage["roles"].items()]
        for name, seconds, counts in rows:
            counts = list(counts)
            lines.append(f"  {name:<18}{'' if seconds is None else f'{seconds:.1f}':>8}"
                         f"{sum(c['calls'] for c in counts):>7,}"
                         f"{sum(c['input'] for c in counts):>12,}"
                         f"{sum(c['output'] for c in counts):>12,}")
    lines.append(f"  {'total':<18}{sum(s['seconds'] for s in stages):>8.1f}")
    return "\n".join(lines)
