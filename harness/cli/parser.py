"""The options of the `freshrag` command, every one with its help text and its checked type
(harness/cli/options.py); harness/cli/main.py holds what each subcommand does."""

from __future__ import annotations

import argparse
from datetime import date
from pathlib import Path
from typing import Callable

from freshrag.builders.sources.mediawiki import WIKIPEDIA_API
from freshrag.builders.stages import ARTICLE_STAGES, STAGES, STYLES
from freshrag.builders.styles.critiques import parse_thresholds
from freshrag.builders.styles.grounded import CRITERIA
from freshrag.builders.styles.statements import parse_label_spec
from freshrag.builders.traffic.general_queries import GENERAL_QUERIES
from freshrag.builders.traffic.query_log import NeedLogConfig
from freshrag.cli.demo import DEMO_QUESTIONS
from freshrag.cli.options import (
    MAX_SEED,
    choices,
    dollars,
    header,
    iso_date,
    mix_shares,
    name,
    out_dir,
    seconds,
    share,
    shares,
    url,
    whole,
)
from freshrag.core.fields import FIELDS
from freshrag.reporting import agreement
from freshrag.reporting.scorers import CORRECT_AT
from freshrag.run.legacy import PAPER_MODEL
from freshrag.scoring import SCORERS, probes
from freshrag.systems import SYSTEMS
from freshrag.systems.retrieval.index import DEFAULT_DIRECTORY, IndexConfig

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


def _add_index_options(p: argparse.ArgumentParser, query: bool = True) -> None:
    """Where the index is and how it chunks; with `query`, how a run retrieves from it."""
    defaults = IndexConfig()
    p.add_argument("--qdrant-url", type=url, help="Qdrant server URL (default: embedded Qdrant on disk)")
    p.add_argument("--index-dir", type=Path, help="embedded Qdrant's directory "
                   f"(default: {INDEX_DIR} beside the run directories, e.g. {DEFAULT_DIRECTORY})")
    p.add_argument("--chunk-size", type=whole(1, MAX_CHUNK), default=defaults.chunk_size,
                   help="characters per chunk (default: %(default)s)")
    p.add_argument("--chunk-overlap", type=whole(0, MAX_CHUNK - 1), default=defaults.chunk_overlap,
                   help="characters shared by neighbouring chunks (default: %(default)s)")
    if not query:
        return
    p.add_argument("--top-k", type=whole(1, 1000), default=defaults.top_k,
                   help="chunks retrieved per query (default: %(default)s)")
    p.add_argument("--text-weight", type=share, default=defaults.text_weight,
                   help="weight of the lexical (BM25) side in retrieval: 0 dense only, 1 lexical "
                        "only, between: both fused (default: %(default)s)")


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
                   "creative (the paper's), recent (about facts after the cutoff; harder) or "
                   "statements (label-targeted from extracted statements, critiqued, labelled) or "
                   "grounded (text forms of SQL queries over the articles' infobox facts)")
    p.add_argument("--labels", type=parse_label_spec, help="statements style: questions per "
                   "label over the set, as counts (fact_single=4,summary=4,reasoning=4,"
                   "unanswerable=2) or shares (fact_single=0.5,summary=0.5) of --questions-per-"
                   "article x articles (default: equal shares of the four labels)")
    p.add_argument("--min-critique", type=parse_thresholds, default=(), help="statements style: "
                   "drop questions rated below N (1-5) on any critique criterion, or per "
                   "criterion: stand_alone=4,specificity=3,question_grounding=3,answer_grounding=3")
    p.add_argument("--label", action="store_true", help="label every question with the labeller "
                   "role (always done for the statements style)")
    p.add_argument("--templates", type=Path, help="--style grounded: a TOML or JSON file of "
                   "more SQL query templates (see builders/styles/templates.py)")
    p.add_argument("--criteria", type=choices(CRITERIA), default=tuple(CRITERIA),
                   help="--style grounded: the wording criteria, one text form each per group "
                        f"(default: {','.join(CRITERIA)})")
    p.add_argument("--groups", type=whole(1, MAX_QUESTIONS), help="--style grounded: semantic "
                   "groups at most, a seeded sample (default: every answerable query)")
    p.add_argument("--questions-from", choices=ARTICLE_STAGES, default="A_f",
                   help="the stage whose articles get questions (default: %(default)s)")
    p.add_argument("--needs", type=Path, metavar="FILE", help="generate the questions for these "
                   "information needs (UTF-8, one description a line; see freshrag needs): for each "
                   "chunk and need, a question or BLANK")
    p.add_argument("--per-need", type=whole(1, MAX_QUESTIONS), metavar="N", help="with --needs: "
                   "ask at most N chunks per need, a seeded sample (default: every chunk)")
    p.add_argument("--seed", type=whole(0, MAX_SEED), default=0, help="seed of the dump's random sample and of "
                   "every LLM request (default: %(default)s)")
    p.add_argument("--control", type=whole(0, MAX_QUESTIONS), default=0, help="control questions "
                   "(need no retrieval) about A_r articles created --control-margin days or more "
                   "before the cutoff, in the traffic stage (default: %(default)s)")
    p.add_argument("--control-margin", type=whole(0, 100_000), default=365, metavar="DAYS",
                   help="how long before the cutoff a control article was created "
                        "(default: %(default)s)")
    p.add_argument("--general", type=whole(0, len(GENERAL_QUERIES)), default=0, help="general queries "
                   "that need no document (greetings, arithmetic, definitions, writing requests), "
                   "drawn from the shipped list in the traffic stage (default: %(default)s)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the response cache")
    p.add_argument("--config", type=Path, help="TOML file with role endpoints (default: ./freshrag.toml)")
    p.add_argument("--dry-run", action="store_true", help="print the builder calls, tokens and "
                   "dollars stages A_f and questions would spend, and exit without calling")
    p.set_defaults(handler=handlers["build"])

    p = sub.add_parser("label", help="label a dataset's questions fact_single, summary, reasoning "
                       "or unanswerable (the labeller role); composition table and chart, and "
                       "agreement with hand labels")
    p.add_argument("dataset", type=Path, metavar="DATASET",
                   help="dataset directory (questions.jsonl, articles.jsonl); labels are written "
                        "into its questions.jsonl, their records into labels.jsonl")
    p.add_argument("--hand-labels", type=Path, metavar="FILE", help="JSON Lines of {id, label}: "
                   "report Cohen's kappa and the confusion matrix of the labeller against them")
    p.add_argument("--concurrency", type=whole(1, MAX_CONCURRENCY), default=4,
                   help="questions labelled at once (default: %(default)s)")
    p.add_argument("--seed", type=whole(0, MAX_SEED), help="seed sent with every LLM request")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the response cache")
    p.add_argument("--config", type=Path, help="TOML file with role endpoints (default: ./freshrag.toml)")
    p.set_defaults(handler=handlers["label"])
    p = sub.add_parser("mix", help="a question set of a chosen traffic composition (fresh, "
                       "control, general) drawn from a dataset whose questions carry a kind")
    p.add_argument("dataset", type=Path, metavar="DATASET",
                   help="dataset directory (questions.jsonl with kinds, articles.jsonl)")
    for kind in ("fresh", "control", "general"):
        p.add_argument(f"--{kind}", type=share, default=0.0,
                       help=f"share of {kind} questions, 0 to 1 (default: %(default)s); "
                            f"the three shares add up to 1")
    p.add_argument("--n", type=whole(1, MAX_QUESTIONS), required=True, help="questions in the mix")
    p.add_argument("--seed", type=whole(0, MAX_SEED), default=0,
                   help="seed of the draw; mixes of one seed are nested (default: %(default)s)")
    p.add_argument("--out", type=out_dir, required=True, help="new directory for the mix")
    p.set_defaults(handler=handlers["mix"])

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
    p.add_argument("--scorers", default="judge", help="comma-separated scorers, from: "
                   f"{', '.join(SCORERS)}; the judge grades every pair, the others score the "
                   "answers into scores.jsonl after the pairs (default: %(default)s)")
    _add_probe_options(p)
    _add_index_options(p)
    _add_cost_options(p)
    p.set_defaults(handler=handlers["run"])

    p = sub.add_parser("score", help="add scorers to a finished (or imported) run without "
                       "answering again; resumable")
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    p.add_argument("--scorers", required=True,
                   help=f"comma-separated scorers, from: {', '.join(SCORERS)}")
    p.add_argument("--repeats", type=whole(1, 100), default=1, help="ask each scorer this many "
                   "times per answer, each repeat with its own seeds and cache entries (the "
                   "judge's spread; default: %(default)s)")
    _add_dataset_options(p)
    p.add_argument("--concurrency", type=whole(1, MAX_CONCURRENCY), default=8,
                   help="scores asked at once; 1 runs serially (default: %(default)s)")
    p.add_argument("--seed", type=whole(0, MAX_SEED), default=0, help="seed sent with every "
                   "request; repeat k of the judge sends seed + 2k (default: %(default)s)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the response cache")
    p.add_argument("--config", type=Path, help="TOML file with role endpoints (default: ./freshrag.toml)")
    _add_cost_options(p)
    p.set_defaults(handler=handlers["score"])

    p = sub.add_parser("index", help="build the retrieval index ahead of a run (or check it)")
    p.add_argument("--articles", type=Path, required=True,
                   help="articles JSON Lines file (title, content)")
    p.add_argument("--config", type=Path, help="TOML file with role endpoints (default: ./freshrag.toml)")
    _add_index_options(p)
    p.set_defaults(handler=handlers["index"])

    p = sub.add_parser("scan-retrieval", help="recall@k of the index per question label and "
                       "overall for several text weights, and the best weight of each; no LLM "
                       "calls")
    p.add_argument("dataset", type=Path, nargs="?", metavar="DATASET",
                   help="directory with questions.jsonl and articles.jsonl")
    p.add_argument("--questions", type=Path, help="questions JSON Lines file, instead of DATASET")
    p.add_argument("--articles", type=Path, help="articles JSON Lines file, instead of DATASET")
    p.add_argument("--weights", type=shares, default=(0.0, 0.05, 0.1, 0.2, 0.5, 1.0),
                   help="text weights to try, comma-separated, 0 dense only to 1 lexical only "
                        "(default: 0,0.05,0.1,0.2,0.5,1)")
    p.add_argument("--k", type=whole(1, 1000), default=5,
                   help="chunks retrieved per question (default: %(default)s)")
    p.add_argument("--by", choices=FIELDS, default="label",
                   help="question field whose groups get a row each (default: %(default)s)")
    p.add_argument("--limit", type=whole(1, MAX_QUESTIONS), help="only the first N questions")
    p.add_argument("--out", type=out_dir, help="where scan-retrieval.json goes "
                   "(default: results/scan-retrieval-DATASET_NAME)")
    p.add_argument("--config", type=Path, help="TOML file with role endpoints; the embeddings "
                   "role embeds the questions (default: ./freshrag.toml)")
    _add_index_options(p, query=False)
    p.set_defaults(handler=handlers["scan-retrieval"])

    p = sub.add_parser("report", help="tables and figures from one or more run directories")
    p.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR")
    p.add_argument("--format", choices=("markdown", "json", "csv"), default="markdown",
                   help="table format printed (default: %(default)s)")
    p.add_argument("--out", type=out_dir, help="where summary.json and the PNGs go "
                   "(default: the run directory, or results/report for several)")
    p.add_argument("--html", type=Path, metavar="PATH", help="also write the whole report (tables, "
                   "figures, every answer) as one self-contained HTML file")
    p.add_argument("--by", action="append", choices=FIELDS, metavar="FIELD",
                   help="also break every table down by this question field (one of: "
                        f"{', '.join(FIELDS)}); may be given more than once")
    p.add_argument("--config", type=Path, help="TOML file whose [prices] table adds or overrides "
                   "model prices for the cost analysis (default: ./freshrag.toml)")
    p.add_argument("--correct-at", type=whole(1, 5), default=CORRECT_AT, help="CRAG outcome: an "
                   "answer that did not abstain is correct when the judge's truthfulness is at "
                   "least this, else incorrect (default: %(default)s)")
    p.add_argument("--mix", type=mix_shares, action="append", metavar="F:C:G",
                   help="also estimate every system at this traffic composition (shares of "
                        "fresh, control and general questions), recombined from the runs' rows "
                        "without a call; repeatable")
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
    for side in ("a", "b"):
        p.add_argument(f"--repeat-{side}", type=whole(0, 99), metavar="K", help=f"compare the "
                       f"grades of `freshrag score --scorers judge` repeat K in RUN_{side.upper()}'s "
                       "scores.jsonl instead of its run's own grades")
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

    _add_needs_parser(sub, handlers["needs"])

    p = sub.add_parser("serve", help="run the embedded llama.cpp server in the foreground")
    p.add_argument("--port", type=whole(1, 65_535), help="port on 127.0.0.1 (default: a free one)")
    p.set_defaults(handler=handlers["serve"])
    return parser


def _add_needs_parser(sub: argparse._SubParsersAction, handler: Callable) -> None:
    defaults = NeedLogConfig()
    p = sub.add_parser("needs", help="derive information needs from a log of user queries: "
                       "embed, cluster, describe each cluster in one sentence")
    p.add_argument("--queries", type=Path, required=True, metavar="LOG",
                   help="JSON Lines log of user queries, a 'query' field a line")
    p.add_argument("--out", type=Path, default=Path("needs.txt"), help="the needs file to write "
                   "(one need a line, for build --needs); its .json and .md go beside it "
                   "(default: %(default)s)")
    p.add_argument("--distance-threshold", type=share, default=defaults.distance_threshold,
                   help="cosine distance beyond which clusters are not merged: lower gives more, "
                        "narrower needs (default: %(default)s)")
    p.add_argument("--min-size", type=whole(1, MAX_QUESTIONS), default=defaults.min_size,
                   help="queries a cluster needs to be a need; smaller ones are counted apart "
                        "(default: %(default)s)")
    p.add_argument("--examples", type=whole(1, 100), default=defaults.examples,
                   help="representative queries per need, shown to the model and in the table "
                        "(default: %(default)s)")
    p.add_argument("--max-queries", type=whole(2, 100_000), default=defaults.max_queries,
                   help="distinct queries clustered; a larger log is sampled (seeded by --seed), "
                        "as clustering holds n² distances (default: %(default)s)")
    p.add_argument("--concurrency", type=whole(1, MAX_CONCURRENCY), default=defaults.concurrency,
                   help="descriptions asked at once (default: %(default)s)")
    p.add_argument("--seed", type=whole(0, MAX_SEED), default=0,
                   help="seed of the sample and of every LLM request (default: %(default)s)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the response cache")
    p.add_argument("--config", type=Path, help="TOML file with role endpoints (default: ./freshrag.toml)")
    p.set_defaults(handler=handler)
