"""`freshrag build`: a dataset of post-cutoff Wikipedia articles and questions (docs/building.md).

The options become a BuildConfig and a Source; builders/build.py decides which stages run and
runs them. Like every command module, this one imports at its top only what its options need,
and the rest when the command runs, so that `--help` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from freshrag.cli.options import (
    MAX_QUESTIONS,
    UsageError,
    add_command,
    add_concurrency,
    add_dry_run,
    add_models,
    add_no_cache,
    add_seed,
    choices,
    header,
    name,
    out_dir,
    pattern,
    url,
    whole,
)

if TYPE_CHECKING:
    from freshrag.builders.stages import BuildConfig

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
    p.add_argument("--questions-from", choices=ARTICLE_STAGES, default="A_f",
                   help="the stage whose articles get questions (default: %(default)s)")
    p.add_argument("--needs", type=Path, metavar="FILE", help="generate the questions for these "
                   "information needs (UTF-8, one description a line; see freshrag needs): for "
                   "each chunk and need, a question or BLANK")
    p.add_argument("--per-need", type=whole(1, MAX_QUESTIONS), metavar="N", help="with --needs: "
                   "ask at most N chunks per need, a seeded sample (default: every chunk)")


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


def handle(args: argparse.Namespace) -> int:
    import contextlib
    import glob

    from freshrag.builders import build as builder
    from freshrag.builders.manifest import check_settings
    from freshrag.builders.stages import BuildConfig
    from freshrag.builders.styles import style_of
    from freshrag.builders.styles.needs import read_needs
    from freshrag.builders.styles.templates import load_templates
    from freshrag.cli.common import (
        CACHE_FILE,
        cache_output,
        default_config,
        llm_client,
        load_settings,
        print_roles,
    )
    from freshrag.core.outputs import check_outputs, files_in

    config_file = args.config or default_config()
    since = _since(args, config_file) if args.since else None
    if args.out is None:
        raise UsageError("--out is required (or --since DIR, which names the next version's "
                         "directory)")
    cache = None if args.no_cache else args.out.parent / CACHE_FILE
    check_outputs(files_in(args.out, builder.WRITES, "--out", "give another --out, or keep the "
                           "input outside the dataset directory") + cache_output(cache),
                  [("--templates", args.templates), ("--needs", args.needs),
                   ("--config", config_file),
                   *(("--dump", Path(p)) for p in args.dump or () if not glob.has_magic(p)),
                   *(("--stub-dump", Path(p)) for p in args.stub_dump or ()
                     if not glob.has_magic(p))])
    months, cutoff, cutoff_source = since or _dates(args, config_file)
    source = builder.Source(tuple(args.dump or ()), tuple(args.stub_dump or ()),
                            args.dump_processes, args.wiki_api, args.user_agent, args.max_lag,
                            args.concurrency, config_file)
    builder.check_options(source, args.needs, args.per_need, args.style,
                          args.questions_per_article)
    if args.distractors and not getattr(style_of(args.style), "takes_distractors", False):
        raise UsageError("--distractors adds articles close to a two-article question's gold "
                         "ones: it goes with --style multihop")
    args.labels = builder.label_spec(args.style, args.labels, args.min_critique)
    config = BuildConfig(
        out=args.out, cutoff=cutoff, n=args.n, questions_per_article=args.questions_per_article,
        style=args.style, questions_from=args.questions_from, concurrency=args.concurrency,
        seed=args.seed, needs=read_needs(args.needs) if args.needs else (),
        per_need=args.per_need, control=args.control, general=args.general,
        control_margin_days=args.control_margin, months=months, per_month=args.per_month,
        parent=args.parent, style_options=_style_options(args))
    check_settings(config)
    if args.templates:
        load_templates(args.templates)  # a bad file is refused before any source or model
    labelled = builder.labelling(args.label, args.style)
    if args.dry_run:
        return _dry_run(args, config, config_file, cache, labelled)
    stages = builder.stages_to_run(config, args.stage, labelled, source)
    settings = load_settings(args)

    def open_llm(roles: tuple[str, ...]) -> contextlib.AbstractContextManager:
        print_roles(settings, roles)  # only once a stage needs a model
        return llm_client(settings, cache, args.seed, roles=roles)

    manifest = builder.build(config, stages, source, cutoff_source, open_llm, labelled)
    print(render_funnel(manifest["funnel"]))
    print(f"dataset written to {args.out}/ (articles.jsonl, questions.jsonl, manifest.json); "
          f"run it with: freshrag run --dataset {args.out}")
    return 0


def _dates(args: argparse.Namespace, config_file: Path | None) -> tuple:
    """(month range or None, cutoff, where the cutoff came from) of a build without --since."""
    from freshrag.builders.cutoffs import resolve_cutoff
    from freshrag.builders.dated import check_cutoff, default_cutoff, parse_months

    args.parent = None
    if args.per_month and not args.created:
        raise UsageError("--per-month goes with --created START:END (the months to sample)")
    if not args.created:
        return (None, *resolve_cutoff(args.cutoff, args.cutoff_model, config_file))
    months = parse_months(args.created)
    if not args.per_month:
        raise UsageError("--created needs --per-month N (articles sampled per month)")
    if args.n is not None:
        raise UsageError("--created with --per-month replaces --n: give one or the other")
    if args.cutoff is None and args.cutoff_model is None:
        return months, default_cutoff(months), f"the day before --created {months.text()}"
    cutoff, source = resolve_cutoff(args.cutoff, args.cutoff_model, config_file)
    check_cutoff(months, cutoff)
    return months, cutoff, source


# The options a --since build takes from its parent's settings, by settings key.
SINCE_OPTIONS = {"seed": "seed", "questions_per_article": "questions_per_article",
                 "style": "style", "questions_from": "questions_from", "control": "control",
                 "general": "general", "control_margin_days": "control_margin",
                 "per_month": "per_month"}


def _style_options(args: argparse.Namespace) -> object:
    """The chosen style's own options, each field from the option of its name."""
    from dataclasses import fields

    from freshrag.builders.styles import style_of

    kind = style_of(args.style).options
    return kind(**{field.name: getattr(args, field.name) for field in fields(kind)})


def _since(args: argparse.Namespace, config_file: Path | None) -> tuple:
    """Fill `args` from the parent's settings (refusing options that contradict them); the
    next version's month range, cutoff and where the cutoff came from."""
    from freshrag.builders.cutoffs import parse_cutoff, resolve_cutoff
    from freshrag.builders.dated import parse_months
    from freshrag.builders.versions import next_out, parent_of, since_range

    settings, parent = parent_of(args.since)
    for key in ("needs", "labels", "templates"):
        if settings.get(key):
            raise UsageError(f"--since {args.since}: built with {key}; --since extends the "
                             f"creative and recent styles only, for now")
    given = [f"--{dest.replace('_', '-')}" for key, dest in SINCE_OPTIONS.items()
             if getattr(args, dest) != DEFAULTS.get(dest) and getattr(args, dest) != settings[key]]
    if args.n is not None:
        given.append("--n")
    cutoff = parse_cutoff(settings["cutoff"], f"{args.since}: settings.cutoff")
    if (args.cutoff or args.cutoff_model) and resolve_cutoff(
            args.cutoff, args.cutoff_model, config_file)[0] != cutoff:
        given.append("--cutoff-model" if args.cutoff_model else "--cutoff")
    if given:
        raise UsageError(f"--since {args.since}: {', '.join(given)} contradict the settings it "
                         f"was built with ({', '.join(f'{k} {settings[k]!r}' for k in SINCE_OPTIONS)}"
                         f"); a new version keeps them")
    for key, dest in SINCE_OPTIONS.items():
        setattr(args, dest, settings[key])
    args.parent = parent
    args.out = args.out or next_out(args.since, parent["number"])
    if not (args.dump or args.wiki_api):
        source = _recorded_source(args.since)
        if source.endswith(".php"):
            args.wiki_api = source
        else:
            raise UsageError(f"--since {args.since}: it was sampled from the dump {source}; give "
                             f"the newer dump with --dump")
    months = since_range(parent, parse_months(args.created) if args.created else None)
    return months, cutoff, f"the cutoff of --since {args.since}"


def _recorded_source(directory: Path) -> str:
    from freshrag.core.manifest import read_manifest

    return str((read_manifest(directory) or {}).get("source") or "")


def _dry_run(args: argparse.Namespace, config: BuildConfig, config_file: Path | None,
             cache: Path | None, labelled: bool) -> int:
    """A build dry run counts every stage (harness/cost/build_estimate.py) but the control
    questions of a --needs build; it refuses what it would leave out rather than under-count."""

    from freshrag.cli.common import load_settings
    from freshrag.reporting.prices import price_table
    from freshrag.run import dry_run

    if args.control and args.needs:
        raise UsageError("--dry-run cannot count the control questions of a --needs build yet: "
                         "leave --control out to estimate the rest")
    print(dry_run.dry_run_build(config, load_settings(args), cache, args.seed,
                                price_table(config_file), labelled))
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
