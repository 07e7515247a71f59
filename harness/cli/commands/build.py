"""`freshrag build`: a dataset of post-cutoff Wikipedia articles and questions (docs/building.md).

It parses its options and calls the build service (harness/workflows/build.py, which
`freshrag.build` is too). Like every command module, this one imports at its top only what its
options need, and the rest when the command runs, so that `--help` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from freshrag.cli.options import (
    UsageError,
    add_command,
    add_concurrency,
    add_dry_run,
    add_models,
    add_no_cache,
    add_seed,
)
from freshrag.cli.values import choices, header, name, out_dir, pattern, url, whole
from freshrag.run.options import MAX_QUESTIONS

DEFAULTS: dict[str, object] = {}  # each option's default, to tell what --since was given
NAME = "build"
HELP = "build questions on Wikipedia articles newer than a cutoff"


DESCRIPTION = ("Samples articles from a wiki (or a MediaWiki XML dump): A_r, the random sample; "
               "A_d, those created after the knowledge cutoff; A_f, those the builder role "
               "judges mostly about events after it. Then the builder writes questions about "
               "them. The dataset directory (articles.jsonl, questions.jsonl, manifest.json) "
               "can be given to `freshrag run --dataset`; building into it again resumes.")
EXAMPLES = ("freshrag build --n 200 --cutoff 2024-06-30 --out datasets/recent",
            "freshrag build --dump enwiki-pages-meta-history1.xml.bz2 --cutoff-model gpt-4-0613 "
            "--out datasets/gpt4",
            "freshrag build --n 200 --cutoff 2024-06-30 --out datasets/recent --dry-run",
            "freshrag build --created 2024-01:2025-06 --per-month 20 --out datasets/monthly",
            "freshrag build --since datasets/monthly")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    _sample_options(p.add_argument_group("articles"))
    _question_options(p.add_argument_group("questions"))
    _traffic_options(p.add_argument_group("traffic (control and general questions)"))
    add_models(p)
    control = p.add_argument_group("run control")
    add_concurrency(control, "pages fetched, and LLM calls made, at once")
    add_seed(control, "of the dump's random sample and of every LLM request")
    add_no_cache(control)
    add_dry_run(control, "the builder calls, tokens and dollars stages A_f and questions would "
                "spend")
    output = p.add_argument_group("output")
    output.add_argument("--out", type=out_dir, metavar="DIR",
                        help="dataset directory; building into it again resumes (required but "
                             "with --since)")
    output.add_argument("--since", type=Path, metavar="DIR", help="build the next version of the "
                        "dated set DIR: only articles created after its newest one, up to now "
                        "(or --created's end), with DIR's settings; --out defaults to DIR's "
                        "sibling named for the new version (wiki -> wiki-v2, wiki-v2 -> wiki-v3)")
    p.set_defaults(handler=handle)
    DEFAULTS.update((action.dest, action.default) for action in p._actions)


def _sample_options(p: argparse._ArgumentGroup) -> None:
    from freshrag.builders.sources.mediawiki import WIKIPEDIA_API

    p.add_argument("--n", type=whole(1, 100_000_000), help="articles in the random sample A_r "
                   "(required for a wiki; with --dump, a seeded random sample of the dump, else "
                   "all of it)")
    p.add_argument("--created", metavar="START:END", help="a set dated by month: sample "
                   "--per-month articles created in each month from START to END (YYYY-MM:YYYY-MM, "
                   "inclusive), in place of --n; the cutoff defaults to the day before START")
    p.add_argument("--per-month", type=whole(1, 1_000_000), metavar="N", help="with --created: "
                   "articles sampled per creation month")
    p.add_argument("--cutoff", help="knowledge cutoff YYYY-MM-DD, from 1990-01-01 to yesterday "
                   "(UTC): A_d holds articles created after it")
    p.add_argument("--cutoff-model", type=name, metavar="MODEL", help="instead of --cutoff, the "
                   "cutoff of this model in the table (built-in, extended by [cutoffs] in "
                   "freshrag.toml), e.g. gpt-4-0613")
    p.add_argument("--wiki-api", type=url,
                   help=f"MediaWiki api.php to sample (default: [build] wiki_api in "
                        f"freshrag.toml, else {WIKIPEDIA_API})")
    p.add_argument("--dump", nargs="+", type=pattern, metavar="FILE", help="MediaWiki XML dump (.xml, .xml.bz2, "
                   ".xml.gz) instead of a wiki: one file, several (the split files of a dump), "
                   "or a quoted glob; a history dump gives creation dates")
    p.add_argument("--stub-dump", nargs="+", type=pattern, metavar="FILE", help="stub-meta-history dump files "
                   "(or a quoted glob) whose first revisions give the creation dates of a "
                   "pages-articles --dump")
    p.add_argument("--dump-processes", type=whole(1, 256), default=2, help="processes reading "
                   "the dump files at once (default: %(default)s)")
    p.add_argument("--user-agent", type=header, help="User-Agent naming you and a contact, as "
                   "Wikimedia asks (default: [build] user_agent in freshrag.toml, else a generic "
                   "freshrag one)")
    p.add_argument("--max-lag", type=whole(1, 3600), default=5,
                   help="maxlag sent to the wiki, in seconds (default: %(default)s)")


def _question_options(p: argparse._ArgumentGroup) -> None:
    from freshrag.builders.stages import ARTICLE_STAGES, STAGES
    from freshrag.builders.styles import DEFAULT_STYLE, STYLES, Choices
    from freshrag.builders.styles.critiques import parse_thresholds
    from freshrag.builders.styles.grounded import CRITERIA
    from freshrag.builders.styles.multihop_plan import KINDS as MULTIHOP_KINDS
    from freshrag.builders.styles.statements import parse_label_spec

    p.add_argument("--stage", choices=STAGES, help="run only this stage (the earlier ones must "
                   "have finished); default: every stage not finished yet")
    p.add_argument("--questions-per-article", type=whole(1, 100), default=1,
                   help="questions written per article (default: %(default)s)")
    styles = [f"{name} ({style.description})" for name, style in STYLES.items()]
    p.add_argument("--style", choices=Choices(), default=DEFAULT_STYLE, help="question prompt: "
                   f"{', '.join(styles[:-1])} or {styles[-1]}; or an installed package's "
                   "(docs/building.md#question-styles)")
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
    p.add_argument("--multihop", type=choices(MULTIHOP_KINDS), default=MULTIHOP_KINDS,
                   help="--style multihop: the kinds of two-article question, bridge (A links "
                        "to B; B's fact asked through A) and comparison (two articles of one "
                        f"infobox type; default: {','.join(MULTIHOP_KINDS)})")
    p.add_argument("--distractors", type=whole(0, 100), default=0, metavar="K",
                   help="--style multihop: per question, K articles close to its gold ones "
                        "(linked, same infobox type, same month) added to the corpus "
                        "(default: %(default)s)")
    _changed_options(p)
    p.add_argument("--questions-from", choices=ARTICLE_STAGES, default="A_f",
                   help="the stage whose articles get questions (default: %(default)s)")
    p.add_argument("--needs", type=Path, metavar="FILE", help="generate the questions for these "
                   "information needs (UTF-8, one description a line; see freshrag needs): for "
                   "each chunk and need, a question or BLANK")
    p.add_argument("--per-need", type=whole(1, MAX_QUESTIONS), metavar="N", help="with --needs: "
                   "ask at most N chunks per need, a seeded sample (default: every chunk)")


def _changed_options(p: argparse._ArgumentGroup) -> None:
    p.add_argument("--history-dump", type=Path, metavar="FILE", help="--style changed: a "
                   "pages-meta-history dump (.xml, .xml.bz2, .xml.gz) whose revisions are "
                   "compared (default: the wiki's, through its API)")
    p.add_argument("--history-days", type=whole(1, 36_500), default=730, metavar="DAYS",
                   help="--style changed: how far before the cutoff a field's changes are "
                        "counted for its fast/slow tag (default: %(default)s)")
    p.add_argument("--revert-days", type=whole(0, 3_650), default=7, metavar="DAYS",
                   help="--style changed: a change undone within this many days is vandalism, "
                        "and a value at the cutoff so undone gives no question (default: "
                        "%(default)s)")
    p.add_argument("--fast-per-year", type=whole(1, 365), default=1, metavar="N",
                   help="--style changed: a field that changed at least N times a year is "
                        "tagged fast, else slow (default: %(default)s)")
    p.add_argument("--false-premise", action="store_true", help="--style changed: for each "
                   "changed fact, a second question that presumes its old value still holds "
                   "(premise \"false\"; no model call)")
    p.add_argument("--rewrite-sentences", action="store_true", help="--style changed: also "
                   "send the sentences reworded since the cutoff to the builder model, to "
                   "rewrite each as a fact with an old and a new value (field \"sentence\")")


def _traffic_options(p: argparse._ArgumentGroup) -> None:
    from freshrag.builders.traffic.general_queries import GENERAL_QUERIES

    p.add_argument("--control", type=whole(0, MAX_QUESTIONS), default=0, help="control questions "
                   "(need no retrieval) about A_r articles created --control-margin days or more "
                   "before the cutoff, in the traffic stage (default: %(default)s)")
    p.add_argument("--control-margin", type=whole(0, 100_000), default=365, metavar="DAYS",
                   help="how long before the cutoff a control article was created "
                        "(default: %(default)s)")
    p.add_argument("--general", type=whole(0, len(GENERAL_QUERIES)), default=0, help="general "
                   "queries that need no document (greetings, arithmetic, definitions, writing "
                   "requests), drawn from the shipped list in the traffic stage "
                   "(default: %(default)s)")


def build(out: str | Path | None = None, **options: Any) -> dict[str, Any]:
    """`freshrag build` as a library call (docs/api.md): `options` are the command's options by
    name (n=20, cutoff="2024-06-30", wiki_api=URL, style="multihop", no_cache=True, ...), checked
    and defaulted by the command's own parser, so that each is declared once; the dataset's
    manifest (its "funnel" counts what each stage kept). Building into `out` again resumes."""
    from freshrag.workflows.build import prepare_build

    if out is not None:
        options["out"] = out
    return dict(prepare_build(_parsed(options), DEFAULTS).build())


def _parsed(options: dict[str, Any]) -> argparse.Namespace:
    """`options` as the command's parser reads them from a command line."""
    import contextlib
    import io

    parser = argparse.ArgumentParser(prog="freshrag").add_subparsers()
    add_parser(parser)
    command = parser.choices[NAME]
    actions = {action.dest: action for action in command._actions if action.option_strings}
    unknown = sorted(set(options) - set(actions) - {"help"})
    if unknown:
        raise UsageError(f"freshrag.build: unknown option(s) {unknown}; `freshrag build --help` "
                         f"lists them (by name, - as _)")
    argv: list[str] = []
    for dest, value in options.items():
        flag = actions[dest].option_strings[-1]
        if isinstance(actions[dest], argparse._StoreTrueAction):
            argv += [flag] if value else []
        elif value is not None:
            argv += [flag, *map(str, value if isinstance(value, (list, tuple)) else [value])]
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            return command.parse_args(argv)
    except SystemExit:
        said = errors.getvalue().strip().splitlines()
        raise UsageError(said[-1].split("error: ", 1)[-1] if said else "bad options") from None


def handle(args: argparse.Namespace) -> int:
    from freshrag.cli.common import print_roles
    from freshrag.workflows.build import prepare_build

    prepared = prepare_build(args, DEFAULTS)
    if args.dry_run:
        print(prepared.estimate())
        return 0
    manifest = prepared.build(announce=print_roles)  # the roles, once a stage needs a model
    out = prepared.config.out
    print(render_funnel(manifest["funnel"]))
    return _said_done(out, manifest["funnel"].get("questions"))


def _said_done(out: Path, questions: int | None) -> int:
    """The build's last line and exit code: a run suggested only for a dataset with questions;
    a questions stage that wrote none is a failed build (exit 1), its funnel above saying why."""
    if questions is None:
        print(f"stages written to {out}/; its questions stage has not run yet (the same command "
              f"without --stage runs every stage not finished)")
        return 0
    if questions == 0:
        print(f"freshrag build: no question was written to {out}/questions.jsonl: the funnel "
              f"above says what each stage kept and dropped", file=sys.stderr)
        return 1
    print(f"dataset written to {out}/ (articles.jsonl, questions.jsonl, manifest.json); "
          f"run it with: freshrag run --dataset {out}")
    return 0


STAGE_NAMES = {"n_r": "A_r, the random sample", "n_d": "A_d, created after the cutoff",
               "n_f": "A_f, mostly about events after it"}


def render_funnel(funnel: dict) -> str:
    """The build's funnel as lines to read: each stage's articles and what it dropped, then the
    questions and any other counts."""
    lines = ["the build's funnel:"]
    if "sampled" in funnel:
        lines.append(f"  {'pages read':<36}{funnel['sampled']:>8,}")
    for key, value in funnel.items():
        if key == "sampled" or key.startswith("discarded_"):
            continue
        label = STAGE_NAMES.get(key, key.replace("_", " "))
        if key == "months":  # a set dated by month: a line per month
            lines.append("  by creation month:")
            lines += [f"    {month}: " + ", ".join(f"{k.replace('_', ' ')} {_count(v)}"
                                                  for k, v in counts.items())
                      for month, counts in value.items()]
            continue
        if isinstance(value, dict):
            lines.append(f"  {label}: " + ", ".join(f"{k.replace('_', ' ')} {_count(v)}"
                                                   for k, v in value.items()))
            continue
        dropped = funnel.get("discarded_" + key[2:], {}) if key in STAGE_NAMES else {}
        lines.append(f"  {label:<36}{_count(value):>8}" + (
            "   dropped: " + ", ".join(f"{k.replace('_', ' ')} {_count(v)}"
                                       for k, v in dropped.items()) if dropped else ""))
    return "\n".join(lines)


def _count(value: object) -> str:
    """A count with thousands separators; counts by reason as `reason count, ...` in brackets."""
    if isinstance(value, dict):
        return "(" + ", ".join(f"{k.replace('_', ' ')} {_count(v)}" for k, v in value.items()) + ")"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
