"""`freshrag gate`: a candidate run held against a baseline run by rules, for CI (docs/ci.md):
exit 0 when every rule holds, 1 when one fails; the rules are harness/reporting/gate_rules.py's,
the verdicts harness/reporting/gate.py's, the summary and JUnit file gate_report.py's, the pull
request's comment gate_github.py's."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from freshrag.cli.options import add_command, add_config
from freshrag.cli.values import whole

if TYPE_CHECKING:
    from freshrag.reporting.gate import GateResult

NAME = "gate"
FORMATS = ("text", "github")
HELP = "pass or fail a candidate run against a baseline (CI)"


DESCRIPTION = ("Pairs the answers of two run directories by question and system and checks the "
               "rules of --rules (or of the [gate] table of freshrag.toml): the paired "
               "difference's 95% interval, the share of failed pairs, the judge's probes, tokens "
               "or dollars per correct answer. Refuses runs of other question sets, of other "
               "judge models or not ended. Prints a summary (with --format github, a pull "
               "request's comment body in markdown, the refusal's reason too when it refuses); "
               "exits 0 when every rule holds, 1 when one fails, 2 on a usage error. No model "
               "is called.")
EXAMPLES = ("freshrag gate results/main results/pr --rules gate.toml",
            "freshrag gate results/main results/pr --rules gate.toml --format github "
            "--junit gate.xml")


def add_parser(sub: argparse._SubParsersAction) -> None:
    from freshrag.reporting.outcomes import CORRECT_AT

    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    inputs.add_argument("baseline", type=Path, metavar="BASELINE_RUN",
                        help="the run directory of the baseline (the main branch's)")
    inputs.add_argument("candidate", type=Path, metavar="CANDIDATE_RUN",
                        help="the run directory of the candidate (the change's)")
    inputs.add_argument("--rules", type=Path, metavar="FILE",
                        help="TOML file of [[gate.rule]] tables (default: the [gate] table of "
                             "--config's file or ./freshrag.toml)")
    add_config(inputs, "whose [prices] table prices dollars per correct answer, and whose [gate] "
                       "table holds the rules when --rules is not given")
    inputs.add_argument("--correct-at", type=whole(1, 5), default=CORRECT_AT, metavar="N",
                        help="truthfulness at which an answer counts as correct, for the rules "
                             "per correct answer (default: %(default)s)")
    inputs.add_argument("--allow-other-judge", action="store_true",
                        help="hold runs graded by different judge models against each other "
                             "(refused by default: their grades are not on one scale)")
    inputs.add_argument("--allow-unfinished", action="store_true",
                        help="hold a run still being written, or stopped before its end "
                             "(refused by default)")
    output = p.add_argument_group("output")
    output.add_argument("--format", choices=FORMATS, default="text",
                        help="what stdout holds: text, the summary for a terminal; github, a "
                             "pull request's comment body (markdown: each rule's metric, "
                             "baseline, candidate, difference with its interval and verdict; "
                             "the reason when the gate refuses the runs) (default: %(default)s)")
    output.add_argument("--junit", type=Path, metavar="FILE",
                        help="write a JUnit XML file here, one test case per rule")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    import sys

    from freshrag.core.errors import UserError
    from freshrag.reporting import gate_github, gate_report
    from freshrag.reporting.epochs import first_epoch_note

    try:
        result = _gate(args)
    except UserError as error:  # the comment says why the gate refused; stderr says it too
        if args.format == "github":
            print(gate_github.refused(args.baseline, args.candidate, str(error)), end="")
        raise
    print(gate_github.comment(result) if args.format == "github" else gate_report.text(result),
          end="")
    if note := first_epoch_note([args.baseline, args.candidate], "the gate pairs the answers of"):
        print(note, file=sys.stderr)  # stdout is the summary alone
    for path in gate_report.write(result, args.junit):
        print(f"{path} written", file=sys.stderr)  # stdout is the summary alone
    return 0 if result.passed else 1


def _gate(args: argparse.Namespace) -> GateResult:
    """The rules read and the runs held against each other, as the options ask."""
    from freshrag.cli.common import default_config
    from freshrag.cli.options import UsageError
    from freshrag.reporting import gate, gate_report
    from freshrag.reporting.gate_rules import read_rules
    from freshrag.reporting.prices import price_table

    config = args.config or default_config()
    source = args.rules or config
    if source is None:
        raise UsageError("no rules: give --rules FILE, or write [[gate.rule]] tables in "
                         "./freshrag.toml (docs/ci.md)")
    rules = read_rules(source, from_config=args.rules is None)
    gate_report.check_outputs_of({"--junit": args.junit}, [args.baseline, args.candidate],
                                 [("--rules", args.rules), ("--config", config)])
    return gate.gate(args.baseline, args.candidate, rules, price_table(config),
                     correct_at=args.correct_at, allow_other_judge=args.allow_other_judge,
                     allow_unfinished=args.allow_unfinished)
