"""The options of the `freshrag` command (docs/cli.md): the type of every value, checked when it
is parsed, and the options several commands share, each declared once here.

argparse puts the option's name before the message (`argument --limit: expected a whole number
from 1 to 1,000,000,000, got '0'`) and exits with status 2, so that a bad value is refused before
any file is written or any endpoint called. Every numeric option has a range; the message states
it. Rules between options, which argparse checks one at a time, are `check_together`'s.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from pathlib import Path
from typing import Callable, Iterable

from freshrag.core.config import (
    LOCAL_MODEL,
    checked_value,
    header_problem,
    masked_url,
    url_problem,
)
from freshrag.core.dates import DATE_FORM, parse_date
from freshrag.core.errors import UserError
from freshrag.core.runfiles import INDEX_DIR
from freshrag.core.types import ROLES
from freshrag.executors.choice import DEFAULT_EXECUTOR, EXECUTORS
from freshrag.run.options import (
    ADDRESS_HELP,
    CORPUS_HELP,
    DEFAULT_CONCURRENCY,
    DEFAULT_SEED,
    MAX_CONCURRENCY,
    MAX_SEED,
    RUN_OPTIONS,
    RunOption,
)
from freshrag.run.options import (
    MAX_QUESTIONS as MAX_QUESTIONS,
)

# Ranges of the numeric options, stated in their messages (seed and concurrency: the run's own).
MAX_CHUNK = 10_000_000  # characters
NAME_MAX, PATH_MAX = 255, 4096  # bytes of one name and of a whole path (Linux's <limits.h>)
# One default per option for every command. 8 requests in flight suits a remote endpoint (the
# embedded server queues what its slots cannot take); seed 0 makes a rerun send the same requests,
# so that the cache answers them and a seeded endpoint repeats itself.
DATASET_ALIAS = "dataset_argument"  # the positional DATASET, an alias of --dataset
EXAMPLE_DEFAULT = (" (default: the example dataset shipped with freshrag, 40 questions on "
                   "invented articles; `freshrag datasets` prints its folder)")


class UsageError(UserError):
    """Options that do not fit together or name nothing known."""


class HelpFormatter(argparse.HelpFormatter):
    """Paragraphs wrapped to the terminal; lines indented by two spaces (examples) kept as
    written; each command's summary beside its name."""

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction):  # argparse measures the commands'
            self._action_max_length += 2  # names 2 columns less indented than it prints them

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(indent + line if line.startswith("  ") or not line.strip()
                         else super(HelpFormatter, self)._fill_text(line, width, indent)
                         for line in text.splitlines())


def add_command(sub: argparse._SubParsersAction, name: str, summary: str, description: str,
                examples: Iterable[str]) -> argparse.ArgumentParser:
    """A command's parser: its one-line summary (listed by `freshrag --help`), a description of
    what it does and reads and writes, and examples, each a command line. Every option declared
    `type=Path` is parsed by `path` (argparse's registry of types), so that no command takes a
    path the file system or a results file cannot hold."""
    p = sub.add_parser(name, help=summary, description=f"{summary[0].upper()}{summary[1:]}."
                       f"\n\n{description}", formatter_class=HelpFormatter,
                       epilog="examples:\n" + "\n".join(f"  {line}" for line in examples))
    p.register("type", Path, path)
    return p


def whole(low: int, high: int) -> Callable[[str], int]:
    """A whole number from `low` to `high`, written in ASCII digits."""

    def parse(text: str) -> int:
        match = re.fullmatch(r"\s*([+-]?[0-9]{1,40})\s*", text)
        value = int(match.group(1)) if match else None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {low:,} to {high:,}, got {text!r:.80}")
        return value

    parse.low, parse.high = low, high  # type: ignore[attr-defined]  # for the tests' generators
    return parse


def share(text: str) -> float:
    """A number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {text!r:.80}")
    return value


def shares(text: str) -> tuple[float, ...]:
    """Distinct numbers from 0 to 1, comma-separated (the text weights a scan tries)."""
    values = tuple(share(part) for part in text.split(","))
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"expected distinct values, got {text!r:.80}")
    return values


def mix_shares(text: str) -> dict[str, float]:
    """A traffic composition FRESH:CONTROL:GENERAL, three shares from 0 to 1 adding up to 1."""
    parts = text.split(":")
    try:
        values = [float(part) for part in parts] if len(parts) == 3 else []
    except ValueError:
        values = []
    if len(values) != 3 or not all(0 <= v <= 1 for v in values) or abs(sum(values) - 1) > 1e-6:
        raise argparse.ArgumentTypeError(f"expected FRESH:CONTROL:GENERAL, three shares from 0 "
                                         f"to 1 adding up to 1 (e.g. 0.1:0.6:0.3), got {text!r:.80}")
    return dict(zip(("fresh", "control", "general"), values))


def iso_date(text: str) -> str:
    """A calendar date written YYYY-MM-DD (harness/core/dates.py: no week or compact forms)."""
    try:
        return parse_date(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date as {DATE_FORM}, got {text!r:.80}") \
            from None


def url(text: str) -> str:
    """An http(s)://host[:port][/path] URL."""
    problem = url_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{masked_url(text)!r:.200} is not a URL: {problem} "
                                         f"(expected http(s)://host[:port][/path])")
    return text


def header(text: str) -> str:
    """Text sent as an HTTP header (the User-Agent)."""
    problem = header_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def name(text: str) -> str:
    """A name written into results (a dataset, a system, a model): non-empty, printable, without
    surrounding whitespace."""
    if not text.strip() or text != text.strip() or not text.isprintable():
        raise argparse.ArgumentTypeError(f"expected a non-empty printable name without "
                                         f"surrounding whitespace, got {text!r:.200}")
    return text


def path(text: str) -> Path:
    """A path (docs/faults.md#paths-and-names): UTF-8 text, since it is written into manifests
    and reports (a name in another encoding arrives from `os.fsdecode` holding lone surrogates),
    each name at most NAME_MAX bytes and the whole at most PATH_MAX, the limits of Linux's file
    systems, so that the first file written there fails with no traceback."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"{os.fsencode(text)!r:.200} is not UTF-8 text; give "
                                         f"a path whose names are UTF-8") from None
    longest = max(text.split("/"), key=lambda part: len(part.encode("utf-8")))
    if len(longest.encode("utf-8")) > NAME_MAX or size > PATH_MAX:
        what = (f"a name of {len(longest.encode('utf-8')):,} bytes, more than the {NAME_MAX}"
                if size <= PATH_MAX else f"{size:,} bytes, more than the {PATH_MAX:,}")
        shown = f"{text[:60]!r}{'...' if len(text) > 60 else ''}"
        raise argparse.ArgumentTypeError(f"{shown} has {what} a file system allows; give a "
                                         f"shorter path")
    return Path(text)


def pattern(text: str) -> str:
    """A path that may be a glob pattern (`--dump 'dumps/*.xml.bz2'`), checked as `path`."""
    path(text)
    return text


def out_dir(text: str) -> Path:
    """A directory to write into (`path`): it may not exist yet, but must not be a file."""
    given = path(text)
    if not text or (given.exists() and not given.is_dir()):
        raise argparse.ArgumentTypeError(f"{text!r:.200} exists and is not a directory"
                                         if text else "expected a directory, got ''")
    return given


def choices(known: Iterable[str]) -> Callable[[str], tuple[str, ...]]:
    """A comma-separated list of names, each one of `known`, none twice, at least one."""
    allowed = tuple(known)

    def parse(text: str) -> tuple[str, ...]:
        names = tuple(part.strip() for part in text.split(",") if part.strip())
        unknown = [part for part in names if part not in allowed]
        if not names or unknown or len(set(names)) != len(names):
            raise argparse.ArgumentTypeError(
                f"expected names from {', '.join(allowed)}, comma-separated, each once; "
                f"got {text!r:.200}")
        return names

    return parse


def _positive(what: str, high: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and 0 < value <= high):
            raise argparse.ArgumentTypeError(f"expected {what} above 0 and at most {high:,g}, "
                                             f"got {text!r:.80}")
        return value
    return parse


dollars = _positive("US dollars", 1_000_000)  # --max-cost
seconds = _positive("seconds", 3600)          # --batch-poll


# ------------------------------------------------------------------ options several commands share


def role_model(text: str) -> tuple[str, str]:
    """ROLE=MODEL: one role's model (`--model-role judge=gpt-4o`)."""
    role, _, model = text.partition("=")
    if role not in ROLES or not model:
        raise argparse.ArgumentTypeError(f"expected ROLE=MODEL with ROLE one of {', '.join(ROLES)}"
                                         f", got {text!r:.200}")
    try:
        return role, checked_value("model", model, f"--model-role {role}")
    except UserError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


Group = argparse.ArgumentParser | argparse._ArgumentGroup  # where an option is declared


def add_models(p: argparse.ArgumentParser, config: str = "with role endpoints") -> None:
    """The group "models and endpoints": one model for every role, one role's model, the
    endpoint, the config file; each option names the variable it stands for (core/config.py)."""
    group = p.add_argument_group("models and endpoints", "Later wins: defaults, --config, "
                                 "FRESHRAG_* variables, these options. The key is never an "
                                 "option: export FRESHRAG_API_KEY (or FRESHRAG_<ROLE>_API_KEY).")
    group.add_argument("--model", type=name, help="the model of every role but embeddings, on "
                       "the endpoint of --base-url (env FRESHRAG_MODEL; default: the embedded "
                       f"server's {LOCAL_MODEL})")
    group.add_argument("--model-role", type=role_model, action="append", metavar="ROLE=MODEL",
                       help="one role's model, over --model; repeatable, e.g. --model-role "
                            "judge=gpt-4o (env FRESHRAG_<ROLE>_MODEL, e.g. FRESHRAG_JUDGE_MODEL). "
                            "Embeddings stay on the local all-MiniLM-L6-v2 until named: "
                            "--model-role embeddings=text-embedding-3-small (env "
                            f"FRESHRAG_EMBEDDINGS_MODEL); roles: {', '.join(ROLES)}")
    group.add_argument("--base-url", type=url, metavar="URL", help="the OpenAI-compatible "
                       "endpoint of every role, e.g. https://api.openai.com/v1 (env "
                       "FRESHRAG_BASE_URL, one role: FRESHRAG_<ROLE>_BASE_URL; default: the "
                       "embedded llama.cpp server, whose runtime FRESHRAG_LOCAL_RUNTIME picks "
                       "and threads FRESHRAG_LOCAL_THREADS)")
    add_config(group, config)


def add_config(p: Group, what: str = "with role endpoints") -> None:
    p.add_argument("--config", type=Path, help=f"TOML file {what} (default: ./freshrag.toml)")


def add_no_cache(p: Group) -> None:
    p.add_argument("--no-cache", action="store_true",
                   help="do not read or write the response cache")


def add_concurrency(p: Group, what: str) -> None:
    """`what` says what runs at once, e.g. "questions labelled at once"."""
    p.add_argument("--concurrency", type=whole(1, MAX_CONCURRENCY), default=DEFAULT_CONCURRENCY,
                   help=f"{what} (default: %(default)s)")


def add_seed(p: Group, what: str = "sent with every LLM request") -> None:
    p.add_argument("--seed", type=whole(0, MAX_SEED), default=DEFAULT_SEED,
                   help=f"seed {what} (default: %(default)s)")


def add_limit(p: Group) -> None:
    add_run_option(p, RUN_OPTIONS["limit"])


def add_run_option(p: Group, option: RunOption) -> None:
    """The flag of a run option as run/options.py declares it: its range or a date, its default
    (or the value that stands for None), its help with the default said."""
    default = option.unset if option.default is None else option.default
    if option.range is None:
        kind: Callable[[str], object] = date_or_today if option.unset == "today" else iso_date
    else:
        low, high = option.range
        kind = whole(0 if option.unset == 0 else low, high)
    p.add_argument(option.flag, type=kind, default=default, metavar=option.metavar,
                   help=option.help + (" (default: %(default)s)" if default is not None else ""))


def date_or_today(text: str) -> str:
    """A date YYYY-MM-DD, or `today` for today's."""
    from datetime import date

    return date.today().isoformat() if text == "today" else iso_date(text)


def add_dataset(p: Group, detail: str = "", alias: bool = False) -> None:
    """--dataset DIR, the one spelling of a dataset on every command; with `alias`, also the
    positional DATASET the command took before, still accepted (`check_together` merges them)."""
    p.add_argument("--dataset", type=Path, metavar="DIR",
                   help=f"dataset directory (questions.jsonl, articles.jsonl){detail}")
    if alias:
        p.add_argument(DATASET_ALIAS, type=Path, nargs="?", metavar="DATASET",
                       help="the same as --dataset; still accepted as the first argument")


def add_dataset_options(p: Group, detail: str = EXAMPLE_DEFAULT, alias: bool = False) -> None:
    """A dataset directory (--dataset), or its two files."""
    add_dataset(p, detail, alias)
    p.add_argument("--questions", type=Path, metavar="FILE", help="questions JSON Lines file "
                   "(title, question); with --articles, instead of --dataset")
    add_articles(p, " (title, content); with --questions, instead of --dataset")


def add_articles(p: Group, detail: str = " (title, content)", required: bool = False) -> None:
    p.add_argument("--articles", type=Path, required=required, metavar="FILE",
                   help=f"articles JSON Lines file{detail}")


def add_scorers(p: Group, default: str | None = None, detail: str = "") -> None:
    """--scorers, required unless it has a `default`."""
    from freshrag.scoring import SCORERS

    p.add_argument("--scorers", required=default is None, default=default,
                   help=f"comma-separated scorers, from: {', '.join(SCORERS)}, or your own as "
                        f"[NAME=]FILE.py:CLASS, [NAME=]MODULE:CLASS or an installed package's "
                        f"(docs/scoring.md#your-own-scorer){detail}")


def add_probe_options(p: Group) -> None:
    from freshrag.scoring import probes

    p.add_argument("--probe-k", dest="probe_k", type=whole(1, 1_000_000), default=probes.PROBES,
                   help="questions whose probes the judge grades (default: %(default)s)")
    p.add_argument("--probe-seed", type=whole(0, MAX_SEED), default=0,
                   help="seed of the probes' questions (default: %(default)s)")
    p.add_argument("--probe-threshold", dest="probe_threshold", type=share,
                   default=probes.THRESHOLD,
                   help="discrimination below which the judge's scores are reported as not "
                        "informative (default: %(default)s; 0.5 is chance)")
    p.add_argument("--probe-context", dest="probe_context", choices=probes.CONTEXTS,
                   default="passage",
                   help="what the judge grades probes against: the passage of the gold article "
                        "they test (a few of its sentences) or the whole article, as "
                        "a run's answers are graded (default: %(default)s)")


def add_index_options(p: Group, query: bool = True) -> None:
    """Where the index is and how it chunks; with `query`, how a run retrieves from it."""
    from freshrag.retrieval.config import DEFAULT_DIRECTORY, EDGE_ABOVE, ENGINES, IndexConfig

    defaults = IndexConfig()
    p.add_argument("--qdrant-url", type=url,
                   help="Qdrant server URL (default: embedded Qdrant on disk)")
    p.add_argument("--index-dir", type=Path, help="embedded Qdrant's directory "
                   f"(default: {INDEX_DIR} beside the run directories, e.g. {DEFAULT_DIRECTORY})")
    p.add_argument("--engine", choices=ENGINES, default=defaults.engine,
                   help="where the index in --index-dir is kept: qdrant-client's local mode, the "
                        "Qdrant engine in-process (HNSW on disk, for millions of chunks), or auto: "
                        f"local mode up to {EDGE_ABOVE:,} chunks (default: %(default)s)")
    p.add_argument("--corpus", type=Path, metavar="DIR", help=f"{CORPUS_HELP} (default: none)")
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


def add_executor_options(p: Group, executor_help: str) -> None:
    """--executor and --address (docs/running.md#running-on-a-ray-cluster); no Ray is loaded."""
    p.add_argument("--executor", choices=EXECUTORS, default=DEFAULT_EXECUTOR,
                   help=f"{executor_help} (default: %(default)s)")
    p.add_argument("--address", metavar="ADDRESS", help=ADDRESS_HELP)


def add_dry_run(p: Group, what: str = "the calls, tokens and dollars per role and model this "
                "command would spend") -> None:
    p.add_argument("--dry-run", action="store_true",
                   help=f"print {what}, and exit without calling")


def add_cost_options(p: Group) -> None:
    add_dry_run(p)
    p.add_argument("--max-cost", type=dollars, metavar="USD", help="stop making new calls once "
                   "dollars spent plus the estimate of the calls in flight would pass USD; the "
                   "run ends resumable (exit 3)")
    p.add_argument("--batch", action="store_true", help="send the calls through the OpenAI Batch "
                   "API first (half price, within 24 h), stage by stage; resumes polling if killed")
    p.add_argument("--batch-poll", type=seconds, metavar="S",
                   help="first wait between polls of a batch, growing 1.5x to 60 s "
                        "(default: 5)")


def check_together(args: argparse.Namespace) -> None:
    """Rules between options, which argparse checks one at a time; the positional DATASET
    becomes --dataset."""
    alias = getattr(args, DATASET_ALIAS, None)
    if alias is not None:
        if args.dataset is not None and args.dataset != alias:
            raise UsageError(f"give the dataset once: --dataset {args.dataset} and DATASET "
                             f"{alias} differ")
        args.dataset = alias
    size, overlap = getattr(args, "chunk_size", None), getattr(args, "chunk_overlap", None)
    if size is not None and overlap is not None and overlap >= size:
        raise UsageError(f"--chunk-overlap must be less than --chunk-size ({size:,}), "
                         f"got {overlap:,}")
