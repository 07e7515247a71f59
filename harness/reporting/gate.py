"""A candidate run held against a baseline run by rules, for CI (docs/ci.md): each rule gives
its figure and a pass or a fail, so that CI can refuse a change that makes answers worse.

Rows of the two run directories are paired by (dataset, question_id, system) as the judge
agreement pairs them (harness/reporting/agreement.py), over questions of the same text as the
report pairs them (outcomes.shared_questions), the system's name on each side being the rule's
(`system`, or `baseline_system` and `candidate_system`; a `failed` rule about every system
follows the renames the other rules declare). Two runs are held against each other only when
they answered one question set (their manifests' questions hash), were graded by one judge model
and have ended (docs/ci.md#what-the-gate-refuses); the last two can be waived. The figures are
the report's:
the paired difference's 95% percentile-bootstrap interval (harness/core/stats.py, its diffs
sorted as analysis.paired_comparisons sorts them, so that the seed alone fixes it), the run
manifest's judge probe verdict, and tokens and dollars per correct answer
(harness/reporting/trajectory.py `per_correct`) over the questions both runs answered.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from freshrag.core.rundir import holder
from freshrag.core.samples import judge_scores
from freshrag.core.stats import bootstrap_interval, mean
from freshrag.core.summary import AnswerSummary
from freshrag.core.wording import counted
from freshrag.reporting.gate_rules import GateRulesError, Rule
from freshrag.reporting.loading import read_runs, summaries_of
from freshrag.reporting.outcomes import CORRECT_AT
from freshrag.reporting.trajectory import per_correct

Prices = dict[str, tuple[float, float]]
Key = tuple[Any, Any]  # (dataset, question_id) of a row of one system


@dataclass(frozen=True)
class Side:
    """One run directory as the gate reads it: its rows (light) and its manifest."""

    run_dir: Path
    rows: list[AnswerSummary]
    manifest: dict[str, Any]

    def of(self, system: str) -> dict[Key, AnswerSummary]:
        return {(row.dataset, row.question_id): row
                for row in self.rows if row.system == system}

    @property
    def systems(self) -> list[str]:
        return list(dict.fromkeys(row.system for row in self.rows))


@dataclass(frozen=True)
class Verdict:
    """A rule's outcome: what it says, the figure measured, whether it holds, and why."""

    rule: Rule
    says: str
    figure: str
    passed: bool
    why: str = ""
    values: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {"rule": self.says, "kind": self.rule.kind, "where": self.rule.where,
                "figure": self.figure, "passed": self.passed, "why": self.why, **self.values}


@dataclass(frozen=True)
class GateResult:
    baseline: Path
    candidate: Path
    verdicts: list[Verdict]

    @property
    def passed(self) -> bool:
        return all(verdict.passed for verdict in self.verdicts)

    @property
    def failed(self) -> list[Verdict]:
        return [verdict for verdict in self.verdicts if not verdict.passed]

    def record(self) -> dict[str, Any]:
        return {"baseline": str(self.baseline), "candidate": str(self.candidate),
                "passed": self.passed, "rules": [v.record() for v in self.verdicts]}


class GateError(GateRulesError):
    """Runs the gate cannot hold against each other (one directory twice, other question sets,
    other judges, a run not ended, a rule's system in neither run): a usage error, exit 2."""


@dataclass(frozen=True)
class Context:
    """What every rule is measured with besides the two runs."""

    prices: Prices = field(default_factory=dict)
    seed: int = 0
    correct_at: int = CORRECT_AT
    renames: dict[str, str] = field(default_factory=dict)  # baseline's name -> candidate's


def read_side(run_dir: Path) -> Side:
    """A run directory's rows (read lightly: no call's messages) and manifest."""
    [run] = read_runs([run_dir])  # its manifest read once, for the rows and the gate
    return Side(run_dir, summaries_of([run]), dict(run.manifest))


def gate(baseline: Path, candidate: Path, rules: list[Rule], prices: Prices | None = None,
         seed: int = 0, correct_at: int = CORRECT_AT, allow_other_judge: bool = False,
         allow_unfinished: bool = False) -> GateResult:
    """Every rule's verdict on `candidate` against `baseline` (run directories).
    `allow_other_judge`, `allow_unfinished`: hold runs graded by two judge models, or a run
    still being written or stopped before its end, instead of refusing them."""
    if Path(baseline).resolve() == Path(candidate).resolve():
        raise GateError(f"{baseline} and {candidate} are one directory: give the baseline's "
                        f"run and the candidate's")
    sides = read_side(Path(baseline)), read_side(Path(candidate))
    for side in sides if not allow_unfinished else ():
        _check_ended(side)
    _check_questions(*sides)
    if not allow_other_judge:
        _check_judges(*sides)
    for rule in rules:
        _check_systems(rule, *sides)
    renames = {rule.baseline_system: rule.candidate_system for rule in rules
               if rule.baseline_system and rule.candidate_system
               and rule.baseline_system != rule.candidate_system}
    context = Context(prices or {}, seed, correct_at, renames)
    verdicts = [CHECKS[rule.kind](rule, *sides, context) for rule in rules]
    return GateResult(Path(baseline), Path(candidate),
                      [replace(v, says=v.rule.name) if v.rule.name else v for v in verdicts])


def _check_ended(side: Side) -> None:
    """A run still being written (its lock held) or stopped before its end (no `finished_at`,
    and not capped by --max-cost, whose missing pairs the `failed` rule counts) is refused."""
    if (pid := holder(side.run_dir)) is not None:
        raise GateError(f"{side.run_dir}: still being written (by pid {pid}); gate it once the "
                        f"run has ended, or give --allow-unfinished")
    manifest = side.manifest
    if manifest.get("kind") == "run" and not manifest.get("finished_at") and \
            not manifest.get("capped"):
        raise GateError(f"{side.run_dir}: the run has not finished (no finished_at in its "
                        f"manifest: stopped, or still running); run it again to resume it, or "
                        f"give --allow-unfinished")


def questions_hash(side: Side) -> str | None:
    """The SHA-256 of the questions file the run answered, as its manifest records it."""
    dataset = side.manifest.get("dataset")
    hashes = dataset.get("sha256") if isinstance(dataset, dict) else None
    found = hashes.get("questions") if isinstance(hashes, dict) else None
    return found if isinstance(found, str) else None


def _check_questions(base: Side, cand: Side) -> None:
    """Two question sets have no pairs: the same ids may name other questions."""
    first, second = questions_hash(base), questions_hash(cand)
    if first and second and first != second:
        raise GateError(f"{base.run_dir} and {cand.run_dir} answered other question sets "
                        f"(questions sha256 {first[:12]}… and {second[:12]}…): the gate, as "
                        f"`freshrag report`, pairs answers to one question set; run both on it")


def judges(side: Side) -> list[str]:
    """The judge models that graded the run's answers."""
    return sorted({str(model) for row in side.rows
                   if (model := row.models.get("judge")) is not None})


def _check_judges(base: Side, cand: Side) -> None:
    """Grades of two judge models are not on one scale (the report compares them not either)."""
    first, second = judges(base), judges(cand)
    if first and second and first != second:
        raise GateError(f"{base.run_dir} was graded by {', '.join(first)} and {cand.run_dir} by "
                        f"{', '.join(second)}: grades of two judges are not on one scale; run both "
                        f"with one judge (--model-role judge=MODEL), or give --allow-other-judge")


def _check_systems(rule: Rule, base: Side, cand: Side) -> None:
    """A system that neither run answered with is a mistake in the rules, not a failure."""
    names = [name for name in (rule.baseline_system, rule.candidate_system) if name]
    if names and not any(name in base.systems + cand.systems for name in names):
        known = ", ".join(dict.fromkeys(base.systems + cand.systems)) or "none"
        raise GateError(f"{rule.where}: {rule.kind} rule: no answers of {rule.systems} in "
                        f"{base.run_dir} or {cand.run_dir}; their systems: {known}")


def _pairs(rule: Rule, base: Side, cand: Side, renames: dict[str, str]) -> list[tuple[str, str]]:
    """The (baseline, candidate) system names a rule is about: its own, or every system the
    two runs answered with (`failed` without a system), under the names the rules give it."""
    if rule.baseline_system and rule.candidate_system:
        return [(rule.baseline_system, rule.candidate_system)]
    pairs = {name: renames.get(name, name) for name in base.systems}
    pairs.update({name: name for name in cand.systems
                  if name not in pairs and name not in pairs.values()})
    return list(pairs.items())


def shared(first: dict[Key, AnswerSummary], second: dict[Key, AnswerSummary],
           answered: bool = False) -> list[Key]:
    """The questions both sides have, of the same text (imports number their questions by
    position); `answered`: only those both answered (neither failed)."""
    return [key for key in first if key in second
            and first[key].question == second[key].question
            and (not answered or first[key].status == second[key].status == "ok")]


def _missing(rule: Rule, base: Side, cand: Side) -> str | None:
    """Why a rule about one system cannot be measured: a run without its answers."""
    for side, name, what in ((base, rule.baseline_system, "baseline"),
                             (cand, rule.candidate_system, "candidate")):
        if name and name not in side.systems:
            return f"the {what} run ({side.run_dir}) has no answers of {name}"
    return None


# ------------------------------------------------------------------ the kinds of rule


def difference(rule: Rule, base: Side, cand: Side, context: Context) -> Verdict:
    """Candidate minus baseline in the rule's metric over the questions both scored: holds when
    the 95% interval's lower end is above `lower_above`."""
    says = (f"{rule.systems}: {rule.metric}, candidate - baseline: the 95% interval's lower end "
            f"is above {rule.threshold:g}")
    if why := _missing(rule, base, cand):
        return Verdict(rule, says, "–", False, why)
    assert rule.baseline_system and rule.candidate_system  # a difference rule names them
    first, second = base.of(rule.baseline_system), cand.of(rule.candidate_system)
    keys = shared(first, second)
    both = [(metric(first[key], rule.metric), metric(second[key], rule.metric)) for key in keys]
    diffs = sorted(c - b for b, c in both if b is not None and c is not None)
    unscored = len(keys) - len(diffs)
    left = f" ({unscored} of {len(keys)} not scored in both, left out)" if unscored else ""
    if len(diffs) < 2:
        return Verdict(rule, says, counted(len(diffs), "question"), False,
                       f"fewer than 2 questions scored in both runs{left}", {"questions": 0})
    value = mean(diffs, places=4)
    low, high = bootstrap_interval(diffs, mean, seed=context.seed)
    assert value is not None and rule.threshold is not None
    passed = low > rule.threshold
    figure = f"{value:+.2f} [{low:+.2f}, {high:+.2f}] over {counted(len(diffs), 'question')}{left}"
    why = "" if passed else (f"the interval's lower end {low:+.2f} is not above "
                             f"{rule.threshold:g}")
    paired = [(b, c) for b, c in both if b is not None and c is not None]
    return Verdict(rule, says, figure, passed, why, {
        "mean_difference": value, "interval": [low, high], "questions": len(diffs),
        "unscored": unscored, "baseline": mean([b for b, _ in paired], places=4),
        "candidate": mean([c for _, c in paired], places=4)})


def metric(row: AnswerSummary, name: str) -> float | None:
    """A row's truthfulness, relevance or score (their sum); None when it was not scored."""
    scores = judge_scores(row)
    if scores is None:
        return None
    return scores["truthfulness"] + scores["relevance"] if name == "score" else scores[name]


def failed(rule: Rule, base: Side, cand: Side, context: Context) -> Verdict:
    """The share of the candidate's pairs that failed, or that the baseline has and the
    candidate lacks (a run stopped by --max-cost, or cut short): at most `at_most`."""
    assert rule.threshold is not None
    says = f"{rule.systems}: failed pairs at most {rule.threshold:.1%}"
    failures = missing = total = 0
    for base_name, cand_name in _pairs(rule, base, cand, context.renames):
        first, second = base.of(base_name), cand.of(cand_name)
        failures += sum(row.status == "failed" for row in second.values())
        missing += sum(key not in second for key in first)
        total += len(first.keys() | second.keys())
    if not total:
        return Verdict(rule, says, "no pairs", False, "neither run has a pair to count")
    share = (failures + missing) / total
    passed = share <= rule.threshold
    figure = f"{share:.1%} ({failures} failed, {missing} missing, of {total})"
    why = "" if passed else (f"{failures + missing} of {counted(total, 'pair')} without an answer "
                             "in the candidate")
    return Verdict(rule, says, figure, passed, why, {
        "share": round(share, 6), "failed": failures, "missing": missing, "pairs": total})


def judge_probes(rule: Rule, base: Side, cand: Side, context: Context) -> Verdict:
    """The judge probes recorded in the manifest of the candidate run (of both, `runs = "both"`)
    found the judge informative: its grades tell right from wrong."""
    sides = [cand] if rule.runs == "candidate" else [base, cand]
    says = f"the judge passes its probes ({' and '.join(_side_name(s, base) for s in sides)})"
    figures, problems, shown_by = [], [], {}
    for side in sides:
        shown, problem = _probe(side.manifest.get("judge_probe"))
        shown_by[_side_name(side, base)] = shown
        figures.append(f"{_side_name(side, base)}: {shown}")
        if problem:
            problems.append(f"{_side_name(side, base)} ({side.run_dir}): {problem}")
    return Verdict(rule, says, "; ".join(figures), not problems, "; ".join(problems), shown_by)


def _side_name(side: Side, base: Side) -> str:
    return "baseline" if side is base else "candidate"


def _probe(probe: dict[str, Any] | None) -> tuple[str, str | None]:
    """The probe verdict's figure, and what is wrong with it (None: informative)."""
    if probe is None:
        return "not probed", "no judge probes recorded (an import, or a run before probes)"
    if probe.get("skipped"):
        return "probes off", "the judge probes were off (--no-probe): nothing checked the judge"
    if probe.get("unavailable"):
        return "not probed", f"the judge could not be probed: {probe['unavailable']}"
    shares = ", ".join(f"{name} {_share(field['discrimination'])}"
                       for name, field in probe["fields"].items())
    shown = f"discrimination {shares} (threshold {probe['threshold']})"
    return shown, None if probe["informative"] else ("discrimination below the threshold: its "
                                                     "grades are not informative")


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def per_correct_rule(figure: str) -> Callable[..., Verdict]:
    """The rule on `tokens_per_correct` or `cost_per_correct`: the candidate's at most
    `at_most_increase` (0.1: 10%) above the baseline's, over the questions both answered."""
    what = "tokens" if figure == "tokens_per_correct" else "dollars"

    def check(rule: Rule, base: Side, cand: Side, context: Context) -> Verdict:
        assert rule.threshold is not None
        bound = (f"at most {rule.threshold:.0%} above" if rule.threshold >= 0
                 else f"at least {-rule.threshold:.0%} below")
        says = f"{rule.systems}: {what} per correct answer {bound} the baseline's"
        if why := _missing(rule, base, cand):
            return Verdict(rule, says, "–", False, why)
        assert rule.baseline_system and rule.candidate_system
        first, second = base.of(rule.baseline_system), cand.of(rule.candidate_system)
        keys = shared(first, second, answered=True)
        was = per_correct([first[key] for key in keys], context.prices,
                          context.correct_at)[figure]
        now = per_correct([second[key] for key in keys], context.prices,
                          context.correct_at)[figure]
        if was is None or now is None:
            side = "baseline" if was is None else "candidate"
            return Verdict(rule, says, "–", False, f"the {side}'s {what} per correct answer is "
                           f"unknown (no correct answer, tokens not reported, or a model "
                           f"without a price)")
        shown = (lambda v: f"{v:,.1f}") if what == "tokens" else (lambda v: f"${v:.6f}")
        text = f"{shown(now)} vs {shown(was)} over the {counted(len(keys), 'question')} both answered"
        if not was:  # a free baseline (a local model's dollars): any spending is more
            return Verdict(rule, says, text, not now, "the baseline spent nothing" if now
                           else "", {"candidate": now, "baseline": was, "change": None})
        change = round(now / was - 1, 6)  # so that 121 against 110 is 10%, as written
        passed = change <= rule.threshold
        why = "" if passed else f"the change {change:+.1%} is more than {rule.threshold:+.0%}"
        return Verdict(rule, says, f"{text} ({change:+.1%})", passed, why, {
            "candidate": now, "baseline": was, "change": change})
    return check


CHECKS: dict[str, Callable[..., Verdict]] = {
    "difference": difference, "failed": failed, "judge_probes": judge_probes,
    "tokens_per_correct": per_correct_rule("tokens_per_correct"),
    "cost_per_correct": per_correct_rule("cost_per_correct"),
}
