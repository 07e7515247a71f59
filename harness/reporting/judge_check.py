"""What every report says about its judge: can its grades be trusted?

Two checks, both from what the run directories hold:

- the judge probes each run recorded in its manifest (harness/scoring/probes.py): the discrimination per
  field, a warning below the threshold, and a warning when the probes were off (`--no-probe`);
- degenerate grades: a field is degenerate when one value is given to at least 90% of the scored
  answers of every row of the report, so that no comparison between rows can carry information.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

from freshrag.core.records import GRADE_FIELDS
from freshrag.core.summary import AnswerSummary
from freshrag.reporting.identity import group_rows
from freshrag.scoring.probes import JUDGE_HINT, verdict_lines

DEGENERATE_SHARE = 0.9
NOT_PROBED = "no judge probes recorded (an import, or a run made before freshrag probed its judge)"


def judge_checks(manifests: Mapping[str, Mapping[str, Any]],
                 rows: list[AnswerSummary]) -> dict[str, Any]:
    """Per run directory (`manifests`: each one's manifest by its name, as the report read it:
    loading.read_runs) its probe verdict, the degenerate fields, and the lines to show (the
    warnings first)."""
    runs: list[dict[str, Any]] = []
    warnings: list[str] = []
    notes: list[str] = []
    for run_dir, manifest in manifests.items():
        probe = manifest.get("judge_probe")
        judge = ((manifest.get("llm") or {}).get("roles") or {}).get("judge", {}).get("model")
        runs.append({"run": str(run_dir), "judge": judge, "probe": probe})
        said = [line for line in (verdict_lines(probe) if probe is not None else [NOT_PROBED])
                if line != JUDGE_HINT]
        warned = probe is not None and (probe.get("skipped") or not probe["informative"])
        (warnings if warned else notes).extend([f"{run_dir}: {said[0]}"] + said[1:])
    degenerate = degenerate_fields(rows)
    warnings += [f"WARNING: degenerate {field} grades: one value for at least {share:.0%} of "
                 f"the scored answers of every row, so {field} cannot tell the rows apart."
                 for field, share in degenerate.items()]
    return {"runs": runs, "degenerate": degenerate, "informative": not warnings,
            "lines": warnings + ([JUDGE_HINT] if warnings else []) + notes}


def degenerate_fields(rows: list[AnswerSummary],
                      share: float = DEGENERATE_SHARE) -> dict[str, float]:
    """Field -> share, for the fields where one and the same value was given to at least `share`
    of the scored answers of every row (the smallest of those rows' shares). A judge that gives
    every baseline answer 2 and every naive answer 5 still tells the rows apart: not degenerate."""
    found: dict[str, float] = {}
    groups = list(group_rows(rows).values())
    for field in GRADE_FIELDS:
        counts = []
        for group in groups:
            values = [value for row in group if row.status == "ok" and (grade := row.grade)
                      and (value := getattr(grade, field)) is not None]
            if values:
                counts.append((Counter(values), len(values)))
        common = set.intersection(*(set(c) for c, _ in counts)) if counts else set()
        best = max((min(c[v] / n for c, n in counts) for v in common), default=0.0)
        if best >= share:
            found[field] = round(best, 4)
    return found
