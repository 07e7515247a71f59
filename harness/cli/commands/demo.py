"""`freshrag demo`: the whole workflow, offline, on the example corpus shipped with freshrag
(docs/cli.md).

The 40 invented example articles (20 about events of 2026, 20 created 2008-2019) are written as
the MediaWiki XML dump a real wiki would export, and then the real commands run one after the
other, each printed before it starts:

1. `freshrag build --dump`: A_r, the date filter (A_d), the recency classifier (A_f), questions;
2. `freshrag run`: every system on the first questions, judged (the index is built on the way);
3. `freshrag report --html`: tables, analysis, figures and one self-contained HTML page.

With the embedded defaults (SmolLM2-135M on llama.cpp, MiniLM, embedded Qdrant) it needs no key
and no network. Questions are asked about every A_d article rather than only A_f: the 135M
classifier's verdicts are close to chance, and an empty A_f would leave nothing to run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from freshrag.cli.options import MAX_QUESTIONS, out_dir, whole

if TYPE_CHECKING:
    from freshrag.builders.sources.export import DumpPage

HELP = ("the whole workflow offline on the example corpus: build from a dump, index, every "
        "system, judge, report")

DEMO_CUTOFF = "2025-12-31"  # after the older example articles, before the invented 2026 events
# The example corpus' present, after its last invented event: dated-boolean states it, and a
# fixed date lets a demo interrupted one day resume the next (a run's date is part of its identity).
DEMO_TODAY = "2026-12-01"
# questions run through every system: 6 through 7 systems took 21 min on 2 cores; there are 9
# systems now, so 4 questions keep the demo near that
DEMO_QUESTIONS = 4


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help=HELP)
    p.add_argument("--out", type=out_dir, default=Path("results") / "demo",
                   help="where the dataset, the run and report.html go (default: %(default)s)")
    p.add_argument("--questions", type=whole(1, MAX_QUESTIONS), default=DEMO_QUESTIONS,
                   help="questions run through every system (default: %(default)s)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.cli.main import main
    from freshrag.systems import SYSTEMS

    return run_demo(args.out, args.questions, list(SYSTEMS), main)


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


def write_example_dump(path: Path) -> Path:
    """The example articles as a history dump (`example_pages`)."""
    from freshrag.builders.sources.export import write_dump

    pages = example_pages()
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_dump(path, pages)


def demo_commands(out: Path, questions: int, systems: list[str]) -> list[list[str]]:
    dataset, run = out / "example", out / "run"  # the tables name the dataset by its directory
    return [
        ["build", "--dump", str(out / "example-wiki.xml"), "--cutoff", DEMO_CUTOFF,
         "--out", str(dataset), "--questions-from", "A_d"],
        ["run", "--dataset", str(dataset), "--systems", ",".join(systems), "--limit",
         str(questions), "--knowledge-cutoff", DEMO_CUTOFF, "--today", DEMO_TODAY,
         "--out", str(run)],
        ["report", str(run), "--html", str(out / "report.html")],
    ]


def run_demo(out: Path, questions: int, systems: list[str],
             command: Callable[[list[str]], int]) -> int:
    """Write the dump, then run each command through `command` (the CLI's main), stopping at the
    first that fails; returns its exit status."""
    from freshrag.core.manifest import read_manifest
    from freshrag.scoring.probes import verdict_lines

    write_example_dump(out / "example-wiki.xml")
    for argv in demo_commands(out, questions, systems):
        print(f"\n$ freshrag {' '.join(argv)}", flush=True)
        status = command(argv)
        if status != 0:
            return status
    print(f"\nthe demo's report: {out / 'report.html'}  (tables also in {out / 'run'}/)")
    print("\n".join(verdict_lines(read_manifest(out / "run").get("judge_probe"))))
    return 0
