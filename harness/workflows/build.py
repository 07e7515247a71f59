"""The build workflow as a library service (docs/api.md, docs/building.md): the options of
`freshrag build` become a BuildConfig and a Source, checked before any page is read or model
called; builders/build.py then decides which stages run and runs them. `freshrag build` parses
its options and calls `prepare_build`; `freshrag.build` takes the same options by name.

The options arrive as the command line's namespace (each option by its dest, e.g. `n`,
`wiki_api`, `no_cache`); `defaults` are the command's own, so that a `--since` build can tell
which options were given. The namespace is copied: a caller's is never changed.
"""

from __future__ import annotations

import contextlib
import glob
from dataclasses import dataclass, fields
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Mapping

from freshrag.builders import build as builder
from freshrag.builders.cutoffs import parse_cutoff, resolve_cutoff
from freshrag.builders.dated import check_cutoff, default_cutoff, parse_months
from freshrag.builders.manifest import check_settings
from freshrag.builders.stages import BuildConfig
from freshrag.builders.styles import style_of
from freshrag.builders.styles.needs import read_needs
from freshrag.builders.styles.templates import load_templates
from freshrag.builders.versions import next_out, parent_of, since_range
from freshrag.core.config import DEFAULT_CONFIG_FILE, CommandLine, LLMSettings
from freshrag.core.manifest import read_manifest
from freshrag.core.outputs import check_outputs, files_in
from freshrag.core.records import Manifest
from freshrag.core.runfiles import CACHE_FILE
from freshrag.cost.prices import price_table
from freshrag.llm.client import LLMClient
from freshrag.run import dry_run
from freshrag.run.inputs import InputError, settings_of
from freshrag.run.service import cache_output, opened

# The options a --since build takes from its parent's settings, by settings key.
SINCE_OPTIONS = {"seed": "seed", "questions_per_article": "questions_per_article",
                 "style": "style", "questions_from": "questions_from", "control": "control",
                 "general": "general", "control_margin_days": "control_margin",
                 "per_month": "per_month"}


@dataclass
class PreparedBuild:
    """A build `prepare_build` checked: its estimate or the build itself. Used once."""

    config: BuildConfig
    source: builder.Source
    cutoff_source: str | None
    labelled: bool
    options: Any  # the command line's options, --since's filled in
    cache: Path | None  # the response cache's file
    config_file: Path | None

    @property
    def settings(self) -> LLMSettings:
        return settings_of(CommandLine(self.options.model, self.options.base_url,
                                       tuple(self.options.model_role or ())), self.options.config)

    def estimate(self) -> str:
        """The builder (and labeller) calls, tokens and dollars the stages would still spend
        (harness/cost/build_estimate.py), all but the control questions of a --needs build,
        which it refuses rather than under-count."""
        if self.options.control and self.options.needs:
            raise InputError("--dry-run cannot count the control questions of a --needs build "
                             "yet: leave --control out to estimate the rest")
        return dry_run.dry_run_build(self.config, self.settings, self.cache, self.options.seed,
                                     price_table(self.config_file), self.labelled)

    def build(self, announce: Callable[[LLMSettings, tuple[str, ...]], None] | None = None
              ) -> Manifest:
        """The stages run; the dataset's manifest. `announce` is told the roles' settings once a
        stage needs a model, before it starts."""
        stages = builder.stages_to_run(self.config, self.options.stage, self.labelled,
                                       self.source)
        settings = self.settings

        def open_llm(roles: tuple[str, ...]) -> contextlib.AbstractContextManager:
            if announce:
                announce(settings, roles)
            return opened(LLMClient(settings, seed=self.options.seed), self.cache, roles)

        return builder.build(self.config, stages, self.source, self.cutoff_source, open_llm,
                             self.labelled)


def prepare_build(options: Any, defaults: Mapping[str, Any]) -> PreparedBuild:
    """A build checked and ready: the outputs (no file it writes is one it reads), the dates,
    the source, the style's options and the settings of a directory built before."""
    args = SimpleNamespace(**vars(options))
    config_file = args.config or (DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.exists() else None)
    since = _since(args, defaults, config_file) if args.since else None
    if args.out is None:
        raise InputError("--out is required (or --since DIR, which names the next version's "
                         "directory)")
    cache = None if args.no_cache else args.out.parent / CACHE_FILE
    check_outputs(files_in(args.out, builder.WRITES, "--out", "give another --out, or keep the "
                           "input outside the dataset directory") + cache_output(cache),
                  [("--templates", args.templates), ("--needs", args.needs),
                   ("--history-dump", args.history_dump),
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
        raise InputError("--distractors adds articles close to a two-article question's gold "
                         "ones: it goes with --style multihop")
    own = {f.name for f in fields(style_of(args.style).options)}
    if args.history_dump and "history_dump" not in own:
        raise InputError("--history-dump gives the revision histories of changed facts: it goes "
                         "with --style changed")
    if given := [f"--{name.replace('_', '-')}" for name in ("false_premise", "rewrite_sentences")
                 if getattr(args, name) and name not in own]:
        raise InputError(f"{' and '.join(given)}: questions about changed facts; they go with "
                         f"--style changed")
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
    return PreparedBuild(config, source, cutoff_source, builder.labelling(args.label, args.style),
                         args, cache, config_file)


def _dates(args: Any, config_file: Path | None) -> tuple:
    """(month range or None, cutoff, where the cutoff came from) of a build without --since."""
    args.parent = None
    if args.per_month and not args.created:
        raise InputError("--per-month goes with --created START:END (the months to sample)")
    if not args.created:
        return (None, *resolve_cutoff(args.cutoff, args.cutoff_model, config_file))
    months = parse_months(args.created)
    if not args.per_month:
        raise InputError("--created needs --per-month N (articles sampled per month)")
    if args.n is not None:
        raise InputError("--created with --per-month replaces --n: give one or the other")
    if args.cutoff is None and args.cutoff_model is None:
        return months, default_cutoff(months), f"the day before --created {months.text()}"
    cutoff, source = resolve_cutoff(args.cutoff, args.cutoff_model, config_file)
    check_cutoff(months, cutoff)
    return months, cutoff, source


def _style_options(args: Any) -> object:
    """The chosen style's own options, each field from the option of its name."""
    kind = style_of(args.style).options
    return kind(**{field.name: getattr(args, field.name) for field in fields(kind)})


def _since(args: Any, defaults: Mapping[str, Any], config_file: Path | None) -> tuple:
    """Fill `args` from the parent's settings (refusing options that contradict them); the
    next version's month range, cutoff and where the cutoff came from."""
    settings, parent = parent_of(args.since)
    for key in ("needs", "labels", "templates"):
        if settings.get(key):
            raise InputError(f"--since {args.since}: built with {key}; --since extends the "
                             f"creative and recent styles only, for now")
    given = [f"--{dest.replace('_', '-')}" for key, dest in SINCE_OPTIONS.items()
             if getattr(args, dest) != defaults.get(dest) and getattr(args, dest) != settings[key]]
    if args.n is not None:
        given.append("--n")
    cutoff = parse_cutoff(settings["cutoff"], f"{args.since}: settings.cutoff")
    if (args.cutoff or args.cutoff_model) and resolve_cutoff(
            args.cutoff, args.cutoff_model, config_file)[0] != cutoff:
        given.append("--cutoff-model" if args.cutoff_model else "--cutoff")
    if given:
        raise InputError(f"--since {args.since}: {', '.join(given)} contradict the settings it "
                         f"was built with ("
                         f"{', '.join(f'{k} {settings[k]!r}' for k in SINCE_OPTIONS)}"
                         f"); a new version keeps them")
    for key, dest in SINCE_OPTIONS.items():
        setattr(args, dest, settings[key])
    args.parent = parent
    args.out = args.out or next_out(args.since, parent["number"])
    if not (args.dump or args.wiki_api):
        source = str((read_manifest(args.since) or {}).get("source") or "")
        if source.endswith(".php"):
            args.wiki_api = source
        else:
            raise InputError(f"--since {args.since}: it was sampled from the dump {source}; give "
                             f"the newer dump with --dump")
    months = since_range(parent, parse_months(args.created) if args.created else None)
    return months, cutoff, f"the cutoff of --since {args.since}"
