"""What each table of a report needs before it has rows (docs/reports.md#what-a-report-holds):
the printed report and the HTML page name every empty table with it, so that "Nothing to show"
says how to get something to show."""

from __future__ import annotations

import textwrap
from typing import Any, Sequence

TRAFFIC = "freshrag build --control N --general N, or freshrag mix"
DECIDER = "a decider that records a score (confidence, self-check)"

NEEDS = {
    "intervals": "scored answers",
    "retrieval": "a retrieving system's answers to questions with gold articles",
    "attribution": "scored answers to questions with gold articles",
    "decisions": "an adaptive system beside a baseline and a naive run on the same questions",
    "cost": "answered pairs",
    "latency": "answers timed by freshrag or reporting latency_s",
    "paired": "two systems judged by one judge on the same questions",
    "decisions_by_kind": f"an adaptive system on a traffic mix ({TRAFFIC})",
    "thresholds": f"{DECIDER} on a traffic mix ({TRAFFIC})",
    "roc": f"{DECIDER} on a traffic mix ({TRAFFIC})",
    "savings": f"a traffic mix of fresh and control or general questions ({TRAFFIC})",
    "mixes": f"freshrag report --mix F:C:G on a traffic mix ({TRAFFIC})",
    "router3": "no retrieval, one retrieval and a multi-step agent on the same questions",
    "savings_by_hops": "the three-way router's systems on one- and multi-article questions "
                       "(freshrag build --style multihop)",
    "groups": "grounded questions (freshrag build --style grounded)",
    "wording": "grounded questions in several wordings (freshrag build --style grounded)",
    "trajectory": "a system that records its steps (an agent)",
    "scorers": "scorers beyond the judge (freshrag score RUN --scorers NAMES)",
    "scorer_correlations": "two scorers or more on the same answers (freshrag score)",
    "crag": "the abstention scorer (freshrag score RUN --scorers abstention)",
    "judge_spread": "the judge asked again (freshrag score RUN --scorers judge --repeats 3)",
}


def needs(key: str, name: str) -> str:
    """`name` (an empty table's short name) with what the table `key` needs."""
    return f"{name} (needs {NEEDS[key]})" if key in NEEDS else name


def needs_lines(document: dict[str, Any],
                *tables: Sequence[tuple[str, str, tuple[str, ...]]]) -> str:
    """Per table of `tables` that `document` has no row for, what it needs, by the name the
    line of empty tables calls it (sections.py SHORT_NAMES), wrapped to 80 columns."""
    from freshrag.reporting.sections import SHORT_NAMES

    return "\n".join(textwrap.fill(
        f"{SHORT_NAMES.get(key, key.replace('_', ' '))}: needs {NEEDS[key]}", 80,
        initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
        for tables_ in tables for key, _, _ in tables_ if not document.get(key) and key in NEEDS)
