"""The savings curve (docs/methods.md#retrieval-need-and-deciders; the paper's suggestion that the
boolean agent saves more when many queries need no retrieval): the quality (mean truthfulness +
relevance) and the tokens and dollars per question of every system as the share of fresh
questions goes from 0 to 1, beside always-retrieve (`naive`), never-retrieve (`baseline`) and the
oracle router (retrieve exactly when `need` says so: naive's row where needed, baseline's
elsewhere). It answers "at my traffic, which strategy, and how much do I save".

Nothing is asked again: a run over questions of every kind is recombined. At fresh share p the
estimate is p x (the mean over fresh questions) + (1 - p) x (the mean over the others, control
and general in the proportion the dataset holds them). `--mix F:C:G` in `freshrag report` gives
the same for chosen compositions (fresh, control, general weighted as given). Intervals: the
stratified percentile bootstrap (each kind resampled on its own, the means combined with the
weights), 95%. Tokens are input + output of every role but the judge, of answered pairs; dollars
from the price table (harness/reporting/prices.py; batch calls at the batch rate), missing when
a model has no price.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Sequence, cast

from freshrag.core.records import SampleRow
from freshrag.core.samples import answer_tokens
from freshrag.core.stats import BOOTSTRAP_SAMPLES, CONFIDENCE, mean
from freshrag.reporting.identity import Identity, comparable, group_rows, labels
from freshrag.reporting.outcomes import references, total_score
from freshrag.reporting.prices import row_cost

KINDS = ("fresh", "control", "general")
CURVE_SHARES = [round(i / 10, 1) for i in range(11)]
TABLE_SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)
ROUTER = "oracle-router (need)"
REFERENCES = {"naive": "always retrieve", "baseline": "never retrieve", ROUTER: "oracle router"}


@dataclass
class KindStats:
    """One identity's answers to one kind: means and their bootstrap resamples."""

    score: float | None
    tokens: float
    cost: float | None
    score_samples: list[float]
    token_samples: list[float]


def kind_stats(rows: list[SampleRow], prices: dict[str, tuple[float, float]],
               seed: int) -> KindStats | None:
    answered = [row for row in rows if row["status"] == "ok"]
    if not answered:
        return None
    rng = random.Random(seed)
    scores = [score for row in answered if (score := total_score(row)) is not None]
    tokens = [sum(answer_tokens(row)) for row in answered]
    costs = [row_cost(row, prices) for row in answered]
    priced = [cost for cost in costs if cost is not None]
    return KindStats(mean(scores), _mean(tokens),
                     mean(priced) if len(priced) == len(costs) else None,
                     [_mean(rng.choices(scores, k=len(scores))) for _ in range(BOOTSTRAP_SAMPLES)]
                     if scores else [],
                     [_mean(rng.choices(tokens, k=len(tokens))) for _ in range(BOOTSTRAP_SAMPLES)])


def _mean(values: Sequence[float]) -> float:
    """core/stats.py's mean of values there are some of: never None."""
    return cast(float, mean(values))


def estimate(stats: dict[str, KindStats], weights: dict[str, float]) -> dict[str, Any] | None:
    """Score, tokens and dollars per question at these kind weights, with intervals; None when
    a kind that weighs is missing."""
    used = {kind: w for kind, w in weights.items() if w > 0}
    if any(kind not in stats for kind in used):
        return None
    entry: dict[str, Any] = {}
    for name, mean_of, samples_of in (("score", "score", "score_samples"),
                                      ("tokens_per_question", "tokens", "token_samples")):
        if any(getattr(stats[k], mean_of) is None for k in used):
            entry[name] = None
            continue
        value = sum(w * getattr(stats[k], mean_of) for k, w in used.items())
        combined = sorted(sum(w * getattr(stats[k], samples_of)[i] for k, w in used.items())
                          for i in range(BOOTSTRAP_SAMPLES))
        tail = int((1 - CONFIDENCE) / 2 * BOOTSTRAP_SAMPLES)
        entry[name] = [round(value, 4), round(combined[tail], 4),
                       round(combined[BOOTSTRAP_SAMPLES - 1 - tail], 4)]
    costs = [w * cost for k, w in used.items() if (cost := stats[k].cost) is not None]
    entry["cost_per_question"] = round(sum(costs), 8) if len(costs) == len(used) else None
    return entry


def curve_weights(share: float, counts: dict[str, int]) -> dict[str, float]:
    """Fresh at `share`; control and general share the rest as the dataset holds them."""
    rest = counts.get("control", 0) + counts.get("general", 0)
    return {"fresh": share, **{kind: (1 - share) * counts.get(kind, 0) / rest
                               for kind in ("control", "general")}}


def router_groups(groups: dict[Identity, list[SampleRow]]) -> dict[Identity, list[SampleRow]]:
    """Per dataset, the oracle router by construction over a comparable baseline and naive run:
    naive's row where the question needs retrieval, baseline's where it does not."""
    routers: dict[Identity, list[SampleRow]] = {}
    for key in [k for k in groups if k.system == "baseline"]:
        refs = references(groups, key)
        if refs is None or any(k.system == ROUTER and k.dataset == key.dataset for k in routers):
            continue
        base, rag = refs
        rag_models = next(k for k in groups if k.system == "naive" and comparable(k, key)).models
        chosen = [rag[q] if base[q].get("need") else base[q] for q in base.keys() & rag.keys()
                  if isinstance(base[q].get("need"), bool) and base[q].get("kind")]
        if chosen:
            models = tuple(sorted(dict(key.models + rag_models).items()))
            routers[Identity(key.dataset, ROUTER, models)] = chosen
    return routers


def analyse(rows: list[SampleRow], prices: dict[str, tuple[float, float]] | None = None,
            mixes: list[dict[str, float]] | None = None, seed: int = 0) -> dict[str, Any]:
    """`savings` (a table at a few fresh shares), `savings_curve` (every identity at every
    tenth, for the figure), `mixes` (the chosen compositions) and notes."""
    groups = {k: [r for r in g if r.get("kind")] for k, g in group_rows(rows).items()}
    groups = {k: g for k, g in groups.items() if g}
    groups.update(router_groups(groups))
    names = {**labels([k for k in groups if k.system != ROUTER]),
             **{k: ROUTER for k in groups if k.system == ROUTER}}
    stats = {key: {kind: s for kind in KINDS if (s := kind_stats(
                       [r for r in g if r["kind"] == kind], prices or {}, seed)) is not None}
             for key, g in groups.items()}
    table, curves, mix_rows, notes = [], [], [], []
    for dataset in dict.fromkeys(key.dataset for key in groups):
        keys = [k for k in groups if k.dataset == dataset]
        counts = {kind: len({r["question_id"] for k in keys for r in groups[k]
                             if r["kind"] == kind}) for kind in KINDS}
        if counts["fresh"] and counts["control"] + counts["general"]:
            for key in keys:
                curve = [estimate(stats[key], curve_weights(s, counts)) for s in CURVE_SHARES]
                curves.append({**_fields(key, names), "shares": CURVE_SHARES, "points": curve})
                table += _rows(key, keys, stats, names, counts)
        else:
            notes.append(f"{dataset}: no savings curve: it needs fresh questions and control or "
                         f"general ones (kinds held: {_held(counts)})")
        for weights in mixes or []:
            mix_rows += [{**_fields(key, names), "mix": mix_label(weights),
                          **(estimate(stats[key], weights) or {}),
                          "saving_vs_naive": _saving(key, keys, stats, weights)} for key in keys]
    return {"savings": table, "savings_curve": curves, "mixes": mix_rows, "savings_notes": notes}


def _rows(key: Identity, keys: list[Identity], stats: dict[Identity, dict[str, KindStats]],
          names: dict[Identity, str], counts: dict[str, int]) -> list[dict[str, Any]]:
    out = []
    for share in TABLE_SHARES:
        weights = curve_weights(share, counts)
        point = estimate(stats[key], weights)
        if point is not None:
            out.append({**_fields(key, names), "fresh_share": share, **point,
                        "saving_vs_naive": _saving(key, keys, stats, weights)})
    return out


def _saving(key: Identity, keys: list[Identity], stats: dict[Identity, dict[str, KindStats]],
            weights: dict[str, float]) -> float | None:
    """1 - tokens per question / naive's, for a naive run comparable with this one."""
    naive = next((k for k in keys if k.system == "naive" and (k == key or comparable(k, key))),
                 None)
    mine, theirs = estimate(stats[key], weights), naive and estimate(stats[naive], weights)
    if not (mine and theirs and mine["tokens_per_question"] and theirs["tokens_per_question"]):
        return None
    return round(1 - mine["tokens_per_question"][0] / theirs["tokens_per_question"][0], 4)


def _fields(key: Identity, names: dict[Identity, str]) -> dict[str, Any]:
    return {**key.fields(), "system": names[key], "reference": REFERENCES.get(key.system)}


def mix_label(weights: dict[str, float]) -> str:
    return ", ".join(f"{kind} {weights.get(kind, 0):g}" for kind in KINDS)


def _held(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in counts.items() if n) or "none"
