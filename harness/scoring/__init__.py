"""Scoring: everything that grades an answer the systems gave.

One file per scorer, registered in `SCORERS` below as systems/ registers strategies: the judge of
the paper's section III.B (judge.py) and the scorers of docs/scoring.md#scorers
(faithfulness.py, answer_relevance.py, context_relevance.py, claims.py, abstention.py, and
staleness.py for changed facts; what they share in base.py and answer_statements.py).
scorepass.py runs chosen scorers over a run's rows into scores.jsonl (store.py), resumably.
Beside them: the judge's probes (probes.py, checked before a run trusts the judge); the
agreement between two gradings is reported by freshrag.reporting.agreement. A scorer depends only on core types and the LLM client,
as a strategy in systems/ does; the runner asks this package for scorers and never imports
freshrag.reporting.
"""

from typing import Any

from freshrag.core.registry import Registry

ROLES = ("scorer", "judge")  # the roles a score pass calls (base.SCORER_ROLE, the judge's)
NEEDS = ("article", "embeddings")  # what a score pass can hand a scorer


def _problem(factory: Any) -> str | None:
    """What keeps `factory` from making a scorer, or None (the kind's check); its own error
    while making one is raised."""
    if not callable(factory):
        return f"a {type(factory).__name__}, not a class or function making a scorer"
    scorer = factory()
    found = scorer_problem(scorer)
    return f"made a {type(scorer).__name__}, {found}" if found else None


def scorer_problem(scorer: Any) -> str | None:
    """What keeps `scorer` from being one, or None."""
    if not callable(getattr(scorer, "score", None)):
        return "which has no score(llm, item) method"
    role, needs, metrics = (getattr(scorer, key, None) for key in ("role", "needs", "metrics"))
    if role not in ROLES:
        return f"whose role is {role!r}, not one of {', '.join(ROLES)}"
    if not isinstance(needs, (tuple, list)) or set(needs) - set(NEEDS):
        return f"whose needs are {needs!r}, not a tuple of {', '.join(NEEDS)}"
    if (not isinstance(metrics, (tuple, list)) or not metrics
            or not all(isinstance(metric, str) and metric for metric in metrics)):
        return f"whose metrics are {metrics!r}, not a tuple of metric names"
    return None


# name -> factory, each imported only when used; answer-relevance is given the embeddings role's
# function by its caller. A user's scorer: harness/scoring/plugins.py.
SCORERS: Registry[Any] = Registry("scorer", "freshrag.scorers", {
    "judge": "freshrag.scoring.judge:Judge",
    "faithfulness": "freshrag.scoring.faithfulness:Faithfulness",
    "answer-relevance": "freshrag.scoring.answer_relevance:AnswerRelevance",
    "context-relevance": "freshrag.scoring.context_relevance:ContextRelevance",
    "claims": "freshrag.scoring.claims:Claims",
    "abstention": "freshrag.scoring.abstention:Abstention",
    "staleness": "freshrag.scoring.staleness:Staleness",
}, check=_problem)
