"""The options of the `freshrag` command, every one with its help text and its checked type
(harness/options.py); harness/cli.py holds what each subcommand does."""

from __future__ import annotations

import argparse
from datetime import date
from pathlib import Path
from typing import Callable

from builders.mediawiki import WIKIPEDIA_API
from builders.stages import STAGES, STYLES
from harness.scoring import agreement, probes
from harness.demo import DEMO_QUESTIONS
from harness.legacy import PAPER_MODEL
from harness.options import (MAX_SEED, dollars, header, iso_date, name, out_dir, seconds, share,
                             url, whole)
from systems import SYSTEMS
from systems.index import DEFAULT_DIRECTORY, IndexConfig

INDEX_DIR = ".index"  # embedded Qdrant storage beside the run directories, shared by them
PAPER_CUTOFF = "2021-09-30"  # GPT-4-0613's knowledge cutoff, the model of the paper's datasets
# Ranges of the numeric options, stated in their messages.
MAX_CONCURRENCY = 256  # threads; endpoints rate-limit far below this
MAX_QUESTIONS = 1_000_000_000
MAX_CHUNK = 10_000_000  # characters


def _add_dataset_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", type=Path, help="directory with questions.jsonl and articles.jsonl "
                   "(default: the example dataset shipped with freshrag)")
    p.add_argument("--questions", type=Path, help="questions JSON Lines file (title, question)")
    p.add_argument("--articles", type=Path, help="articles JSON Lines file (title, content)")


def _add_probe_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--probe-k", dest="probe_k", type=whole(1, 1_000_000), default=probes.PROBES,
                   help="questions whose probes the judge grades (default: %(default)s)")
    p.add_argument("--probe-seed", type=whole(0, MAX_SEED), default=0,
                   help="seed of the probes' questions (default: %(default)s)")
    p.add_argument("--probe-threshold", dest="probe_threshold", type=share, default=probes.THRESHOLD,
                   help="discrimination below which the judge's scores are reported as not "
                        "informative (default: %(default)s; 0.5 is chance)")


def _add_index_options(p: argparse.ArgumentParser) -> None:
    defaults = IndexConfig()
    p.add_argument("--qdrant-url", type=url, help="Qdrant server URL (default: embedded Qdrant on disk)")
    p.add_argument("--index-dir", type=Path, help="embedded Qdrant's directory "
                   f"(default: {INDEX_DIR} beside the run directories, e.g. {DEFAULT_DIRECTORY})")
    p.add_argument("--chunk-size", type=whole(1, MAX_CHUNK), default=defaults.chunk_size,
                   help="characters per chunk (default: %(default)s)")
    p.add_argument("--chunk-overlap", type=whole(0, MAX_CHUNK - 1), default=defaults.chunk_overlap,
                   help="characters shared by neighbouring chunks (default: %(default)s)")
    p.add_argument("--top-k", type=whole(1, 1000), default=defaults.top_k,
                   help="chunks retrieved per query (default: %(default)s)")


def _add_cost_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="print the calls, tokens and dollars "
                   "per role and model this command would spend, and exit without calling")
    p.add_argument("--max-cost", type=dollars, metavar="USD", help="stop making new calls once "
                   "dollars spent plus the estimate of the calls in flight would pass USD; the "
                   "run ends resumable (exit 3)")
    p.add_argument("--batch", action="store_true", help="send the calls through the OpenAI Batch "
                   "API first (half price, within 24 h), stage by stage; resumes polling if killed")
    p.add_argument("--batch-poll", type=seconds, metavar="S",
                   help="first wait between polls of a batch, growing 1.5x to 60 s "
                        "(default: 5)")


def build_parser(handlers: dict[str, Callable[[argparse.Namespace], int]],
                 description: str) -> argparse.ArgumentParser:
    """Every subcommand and option; `handlers` maps each subcommand to the function it runs."""
    parser = argparse.ArgumentParser(prog="freshrag", description=description)
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    p = sub.add_parser("build", help="build a dataset of post-cutoff Wikipedia articles and "
                       "questions (section III.A)")
    p.add_argument("--out", type=out_dir, required=True,
                   help="dataset directory; building into it again resumes")
    p.add_argument("--n", type=whole(1, 100_000_000), help="articles in the random sample A_r (required for a "
                   "wiki; with --dump, a seeded random sample of the dump, else all of it)")
    p.add_argument("--cutoff", help="knowledge cutoff YYYY-MM-DD: A_d holds articles created after it")
    p.add_argument("--model", type=name, help="take the cutoff of this model from the table (built-in, "
                   "extended by [cutoffs] in freshrag.toml), e.g. gpt-4-0613")
    p.add_argument("--wiki-api", type=url, help=f"MediaWiki api.php to sample (default: {WIKIPEDIA_API})")
    p.add_argument("--dump", nargs="+", metavar="FILE", help="MediaWiki XML dump (.xml, .xml.bz2, "
                   ".xml.gz) instead of a wiki: one file, several (the split files of a dump), "
                   "or a quoted glob; a history dump gives creation dates")
    p.add_argument("--stub-dump", nargs="+", metavar="FILE", help="stub-meta-history dump files "
                   "(or a quoted glob) whose first revisions give the creation dates of a "
                   "pages-articles --dump")
    p.add_argument("--dump-processes", type=whole(1, 256), default=2, help="processes reading "
                   "the dump files at once (default: %(default)s)")
    p.add_argument("--user-agent", type=header, help="User-Agent naming you and a contact, as Wikimedia asks "
                   "(default: [build] user_agent in freshrag.toml, else a generic freshrag one)")
    p.add_argument("--max-lag", type=whole(1, 3600), default=5,
                   help="maxlag sent to the wiki, in seconds (default: %(default)s)")
    p.add_argument("--concurrency", type=whole(1, MAX_CONCURRENCY), default=4,
                   help="pages fetched, and LLM calls made, at once (default: %(default)s)")
    p.add_argument("--stage", choices=STAGES, help="run only this stage (the earlier ones must "
                   "have finished); default: every stage not finished yet")
    p.add_argument("--questions-per-article", type=whole(1, 100), default=1,
                   help="questions written per article (default: %(default)s)")
    p.add_argument("--style", choices=STYLES, default="creative", help="question prompt: "
                   "creative (the paper's) or recent (about facts after the cutoff; harder)")
    p.add_argument("--questions-from", choices=STAGES[:3], default="A_f",
                   help="the stage whose articles get questions (default: %(default)s)")
    p.add_argument("--seed", type=whole(0, MAX_SEED), default=0, help="seed of the dump's random sample and of "
                   "every LLM request (default: %(default)s)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the response cache")
    p.add_argument("--config", type=Path, help="TOML file with role endpoints (default: ./freshrag.toml)")
    p.add_argument("--dry-run", action="store_true", help="print the builder calls, tokens and "
                   "dollars stages A_f and questions would spend, and exit without calling")
    p.set_defaults(handler=handlers["build"])

    p = sub.add_parser("run", help="answer, judge and account every (question, system) pair")
    _add_dataset_options(p)
    p.add_argument("--systems", default="baseline,oracle,naive,advanced",
                   help=f"comma-separated systems, from: {', '.join(SYSTEMS)} (default: %(default)s)")
    p.add_argument("--out", type=out_dir, help="run directory (default: results/DATASET_NAME); "
                   "running again into it resumes")
    p.add_argument("--limit", type=whole(1, MAX_QUESTIONS), help="only the first N questions")
    p.add_argument("--concurrency", type=whole(1, MAX_CONCURRENCY), default=8,
                   help="pairs in flight at once; 1 runs serially (default: %(default)s)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the response cache")
    p.add_argument("--seed", type=whole(0, MAX_SEED), help="seed sent with every LLM request")
    p.add_argument("--config", type=Path, help="TOML file with role endpoints (default: ./freshrag.toml)")
    p.add_argument("--knowledge-cutoff", type=iso_date, default=PAPER_CUTOFF,
                   help="the answering model's knowledge cutoff, stated by dated-boolean "
                        "(default: %(default)s, GPT-4-0613's)")
    p.add_argument("--today", type=iso_date, default=date.today().isoformat(),
                   help="today's date as dated-boolean states it (default: today)")
    p.add_argument("--context-tokens", type=whole(1, 10_000_000), default=8192,
                   help="the answering model's context window; retrieved text is cut to fit "
                        "(default: %(default)s)")
    p.add_argument("--no-probe", action="store_true", help="do not probe the judge before "
                   "grading (the report then says that nothing checked the judge)")
    _add_probe_options(p)
    _add_index_options(p)
    _add_cost_options(p)
    p.set_defaults(handler=handlers["run"])

    p = sub.add_parser("index", help="build the retrieval index ahead of a run (or check it)")
    p.add_argument("--articles", type=Path, required=True,
                   help="articles JSON Lines file (title, content)")
    p.add_argument("--config", type=Path, help="TOML file with role endpoints (default: ./freshrag.toml)")
    _add_index_options(p)
    p.set_defaults(handler=handlers["index"])

    p = sub.add_parser("report", help="tables and figures from one or more run directories")
    p.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR")
    p.add_argument("--format", choices=("markdown", "json", "csv"), default="markdown",
                   help="table format printed (default: %(default)s)")
    p.add_argument("--out", type=out_dir, help="where summary.json and the PNGs go "
                   "(default: the run directory, or results/report for several)")
    p.add_argument("--html", type=Path, metavar="PATH", help="also write the whole report (tables, "
                   "figures, every answer) as one self-contained HTML file")
    p.add_argument("--config", type=Path, help="TOML file whose [prices] table adds or overrides "
                   "model prices for the cost analysis (default: ./freshrag.toml)")
    p.set_defaults(handler=handlers["report"])

    p = sub.add_parser("agreement", help="how alike two judges (or two repeats of one) grade the "
                       "same answers: agreement, weighted kappa, Spearman, confusion matrices")
    p.add_argument("run_a", type=Path, metavar="RUN_A", help="run directory A (rows of the matrix)")
    p.add_argument("run_b", type=Path, metavar="RUN_B", help="run directory B (columns; "
                   "differences are B - A)")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown",
                   help="what is printed (default: %(default)s)")
    p.add_argument("--out", type=Path, help=f"where {agreement.AGREEMENT} goes "
                   "(default: results/agreement-A-vs-B, A and B the directories' names)")
    p.add_argument("--top", type=whole(1, 10_000), default=agreement.TOP,
                   help="pairs that disagree most, listed per field (default: %(default)s)")
    p.set_defaults(handler=handlers["agreement"])

    p = sub.add_parser("import-legacy", help="import a run file released with the paper (a "
                       "pickled list of dicts) into a run directory")
    p.add_argument("pickle", type=Path, metavar="PICKLE")
    p.add_argument("--dataset", type=name, required=True, help="dataset name for the tables, e.g. A_f")
    p.add_argument("--system", type=name, required=True, help="system name for the tables, e.g. naive")
    p.add_argument("--out", type=out_dir, required=True, help="run directory to write (or add to)")
    p.add_argument("--model", type=name, default=PAPER_MODEL, help="the model that answered, for the cost "
                   "analysis (default: %(default)s, the paper's)")
    p.set_defaults(handler=handlers["import-legacy"])

    p = sub.add_parser("demo", help="the whole workflow offline on the example corpus: build "
                       "from a dump, index, every system, judge, report")
    p.add_argument("--out", type=out_dir, default=Path("results") / "demo",
                   help="where the dataset, the run and report.html go (default: %(default)s)")
    p.add_argument("--questions", type=whole(1, MAX_QUESTIONS), default=DEMO_QUESTIONS,
                   help="questions run through every system (default: %(default)s)")
    p.set_defaults(handler=handlers["demo"])

    p = sub.add_parser("probe-judge", help="check that the judge tells right from wrong: grade "
                       "answers made from the dataset (grounded, wrong, abstaining); exit 1 if not")
    _add_dataset_options(p)
    _add_probe_options(p)
    p.add_argument("--concurrency", type=whole(1, MAX_CONCURRENCY), default=4,
                   help="probes graded at once (default: %(default)s)")
    p.add_argument("--seed", type=whole(0, MAX_SEED), help="seed sent with every LLM request")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the response cache")
    p.add_argument("--config", type=Path, help="TOML file with role endpoints (default: ./freshrag.toml)")
    p.set_defaults(handler=handlers["probe-judge"])

    p = sub.add_parser("serve", help="run the embedded llama.cpp server in the foreground")
    p.add_argument("--port", type=whole(1, 65_535), help="port on 127.0.0.1 (default: a free one)")
    p.set_defaults(handler=handlers["serve"])
    return parser
