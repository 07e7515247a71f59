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

from freshrag.core.samples import answer_tokens
from freshrag.core.stats import (
    BOOTSTRAP_SAMPLES,
    CONFIDENCE,
    bootstrap_interval,
    mean,
    min_detectable_difference,
    with_holm,
)
from freshrag.core.summary import AnswerSummary
from freshrag.reporting.answers import Answers
from freshrag.reporting.identity import Identity, comparable, labels
from freshrag.reporting.outcomes import (
    CORRECT_AT,
    answered_well,
    by_question,
    decides,
    hops,
    multi_step,
    references,
    shared_questions,
    total_score,
    untested,
)
from freshrag.reporting.prices import row_cost

KINDS = ("fresh", "control", "general")
CURVE_SHARES = [round(i / 10, 1) for i in range(11)]
TABLE_SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)
ROUTER = "oracle-router (need)"
REFERENCES = {"naive": "always retrieve", "baseline": "never retrieve", ROUTER: "oracle router"}
THREE_WAY = "oracle router, 3 options"  # the reference of a three-way router's rows
Prices = dict[str, tuple[float, float]]


@dataclass
class KindStats:
    """One identity's answers to one kind: means and their bootstrap resamples."""

    score: float | None
    tokens: float
    cost: float | None
    score_samples: list[float]
    token_samples: list[float]


def kind_stats(rows: list[AnswerSummary], prices: dict[str, tuple[float, float]],
               seed: int) -> KindStats | None:
    answered = [row for row in rows if row.status == "ok"]
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


def router_groups(groups: dict[Identity, list[AnswerSummary]]) -> dict[Identity, list[AnswerSummary]]:
    """Per dataset, the oracle router by construction over a comparable baseline and naive run:
    naive's row where the question needs retrieval, baseline's where it does not."""
    routers: dict[Identity, list[AnswerSummary]] = {}
    for key in [k for k in groups if k.system == "baseline"]:
        refs = references(groups, key)
        if refs is None or any(k.system == ROUTER and k.dataset == key.dataset for k in routers):
            continue
        base, rag = refs
        rag_models = next(k for k in groups if k.system == "naive" and comparable(k, key)).models
        chosen = [rag[q] if base[q].need else base[q] for q in base.keys() & rag.keys()
                  if isinstance(base[q].need, bool) and base[q].kind]
        if chosen:
            models = tuple(sorted(dict(key.models + rag_models).items()))
            routers[Identity(key.dataset, ROUTER, models)] = chosen
    return routers


def analyse(answers: Answers, prices: dict[str, tuple[float, float]] | None = None,
            mixes: list[dict[str, float]] | None = None, seed: int = 0,
            correct_at: int = CORRECT_AT) -> dict[str, Any]:
    """`savings` (a table at a few fresh shares), `savings_curve` (every identity at every
    tenth, for the figure), `mixes` (the chosen compositions) and notes; the oracle router by
    need and, where there are three options, the three-way routers among the identities."""
    groups = {k: [r for r in g if r.kind] for k, g in answers.groups().items()}
    groups = {k: g for k, g in groups.items() if g}
    routers = {**router_groups(groups), **{key: chosen for key, (chosen, _) in
                                           three_way_routers(groups, prices or {},
                                                             correct_at).items()}}
    groups.update(routers)
    names = {**labels([k for k in groups if k not in routers]),
             **{k: k.system for k in routers}}
    stats = {key: {kind: s for kind in KINDS if (s := kind_stats(
                       [r for r in g if r.kind == kind], prices or {}, seed)) is not None}
             for key, g in groups.items()}
    table, curves, mix_rows, notes = [], [], [], []
    for dataset in dict.fromkeys(key.dataset for key in groups):
        keys = [k for k in groups if k.dataset == dataset]
        counts = {kind: len({r.question_id for k in keys for r in groups[k]
                             if r.kind == kind}) for kind in KINDS}
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
    return {**key.fields(), "system": names[key], "reference": _reference(key)}


def _reference(key: Identity) -> str | None:
    three = key.system.startswith(ROUTER3) and not key.run and not key.mixed
    return REFERENCES.get(key.system) or (THREE_WAY if three else None)


def mix_label(weights: dict[str, float]) -> str:
    return ", ".join(f"{kind} {weights.get(kind, 0):g}" for kind in KINDS)


def _held(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in counts.items() if n) or "none"


# --------------------------------------------------------------------------- three options


ROUTER3 = "oracle-router: "  # + the options' names: `oracle-router: baseline | naive | react`
ROUTER_COLUMNS = ("questions", "chosen", "cheapest_by", "score", "correct",
                  "tokens_per_question", "cost_per_question", "router_saving", "score_vs_router",
                  "interval", "p_value")


def three_way_options(groups: dict[Identity, list[AnswerSummary]]
                      ) -> list[tuple[Identity, Identity, Identity]]:
    """(no retrieval, one retrieval, the multi-step agent) per agent of a dataset, the three
    comparable (docs/reports.md#the-three-way-router): `baseline`; `naive`, else the first system
    that decides nothing and retrieved exactly once in every answer; each system that
    outcomes.multi_step finds an agent, with the first baseline it is comparable with."""
    found: list[tuple[Identity, Identity, Identity]] = []
    for base in [k for k in groups if k.system == "baseline"]:
        rivals = [k for k in groups if k != base and comparable(k, base)]
        one = next((k for k in rivals if k.system == "naive"), None) or next(
            (k for k in rivals if _single_search(groups[k])), None)
        for agent in [k for k in rivals if one and comparable(k, one) and multi_step(groups[k])]:
            if one is not None and all(agent != options[2] for options in found):
                found.append((base, one, agent))
    return found


def _single_search(group: list[AnswerSummary]) -> bool:
    answered = [row for row in group if row.status == "ok"]
    return (bool(answered) and group[0].system != "oracle" and not decides(group)
            and all(row.retrievals == 1 for row in answered))


def three_way_routers(groups: dict[Identity, list[AnswerSummary]], prices: Prices,
                      correct_at: int = CORRECT_AT) -> dict[Identity, tuple[list[AnswerSummary],
                                                                            dict[str, Any]]]:
    """Per three options, the oracle router: on each question all three answered, the cheapest
    of the options that answered well (truthfulness >= `correct_at`; of the answered ones when
    none did, a tie to the earlier option), by dollars when every answer of the three is priced,
    else by tokens. Its rows, and what it chose (`chosen`, `cheapest_by`)."""
    names = labels(groups)
    routers: dict[Identity, tuple[list[AnswerSummary], dict[str, Any]]] = {}
    for options in three_way_options(groups):
        answers = [by_question(groups[key]) for key in options]
        questions = [q for q in shared_questions(answers[0], answers[1])
                     if q in answers[2] and answers[2][q].question == answers[0][q].question]
        rows = [[answered[q] for answered in answers] for q in questions]
        priced = bool(rows) and all(row_cost(row, prices) is not None for r in rows for row in r)

        def cost(row: AnswerSummary) -> float:
            return cast(float, row_cost(row, prices)) if priced else sum(answer_tokens(row))

        chosen = [_cheapest(three, cost, correct_at) for three in rows]
        shown = [names[key] for key in options]
        models = tuple(sorted(dict(sum((key.models for key in options), ())).items()))
        key = Identity(options[0].dataset, ROUTER3 + " | ".join(shown), models)
        routers[key] = ([three[i] for three, (i, _) in zip(rows, chosen)],
                        {"options": shown, "keys": options, "picks": chosen,
                         "cheapest_by": "cost_usd" if priced else "tokens"})
    return routers


def _cheapest(three: list[AnswerSummary], cost: Any, correct_at: int) -> tuple[int, bool]:
    """The index of the option to take, and whether it answered well."""
    good = [i for i, row in enumerate(three) if answered_well(row, correct_at)]
    pool = good or [i for i, row in enumerate(three) if row.status == "ok"] or [0, 1, 2]
    return min(pool, key=lambda i: (cost(three[i]), i)), bool(good)


def chosen_label(options: list[str], picks: list[tuple[int, bool]]) -> str:
    """`baseline 3, naive 2, react 1; none good 2`: how often each option was taken."""
    counts = [sum(i == n for i, _ in picks) for n in range(len(options))]
    shown = ", ".join(f"{name} {count}" for name, count in zip(options, counts))
    return f"{shown}; none good {sum(not good for _, good in picks)}"


def router_tables(answers: Answers, prices: Prices | None = None,
                  correct_at: int = CORRECT_AT, seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """`router3`: every three-way oracle router and each comparable system of its dataset over
    the router's questions; `savings_by_hops`: the same per number of gold articles, when the
    questions have more than one. Each row: score and tokens per question with 95% bootstrap
    intervals, dollars, the share correct, the router's saving against it (1 - the router's
    tokens per question / its own) and its score minus the router's, paired by question (95%
    paired-bootstrap interval, p-value, Holm's over the table and the minimum detectable
    difference as in the paired comparisons)."""
    groups = answers.groups()
    names = labels(groups)
    tables: dict[str, list[dict[str, Any]]] = {"router3": [], "savings_by_hops": []}
    for key, (chosen, info) in three_way_routers(groups, prices or {}, correct_at).items():
        router = {row.question_id: row for row in chosen}
        rivals = [k for k in groups if all(comparable(k, option) for option in info["keys"])]
        held = sorted({hops(row) for row in chosen})
        for table, parts in (("router3", [None]), ("savings_by_hops", held if len(held) > 1
                                                     else [])):
            for part in parts:
                mine = {q: row for q, row in router.items() if part in (None, hops(row))}
                picks = [pick for pick, row in zip(info["picks"], chosen)
                         if row.question_id in mine]
                top = {**key.fields(), "reference": THREE_WAY,
                       **({} if part is None else {"hops": part}),
                       "chosen": chosen_label(info["options"], picks),
                       "cheapest_by": info["cheapest_by"]}
                tables[table].append({**top, **_against(mine, mine, prices, correct_at, seed)})
                for rival in rivals:
                    of_rival = by_question(groups[rival])
                    theirs = {q: of_rival[q] for q in mine if q in of_rival}
                    tables[table].append({**rival.fields(), "system": names[rival],
                                          "reference": _reference(rival),
                                          **({} if part is None else {"hops": part}),
                                          **_against(theirs, mine, prices, correct_at, seed)})
    return {name: with_holm(table) for name, table in tables.items()}  # p_holm per table


def _against(mine: dict[str, AnswerSummary], router: dict[str, AnswerSummary], prices: Prices | None,
             correct_at: int, seed: int) -> dict[str, Any]:
    """One row of the router tables: these answers' figures, and against the router's."""
    stats = kind_stats(list(mine.values()), prices or {}, seed)
    point = estimate({"all": stats}, {"all": 1.0}) if stats else None
    ours = kind_stats(list(router.values()), prices or {}, seed)
    scored = [row for row in mine.values() if total_score(row) is not None]
    diffs = sorted(cast(float, total_score(mine[q])) - cast(float, total_score(router[q]))
                   for q in mine if total_score(mine[q]) is not None
                   and total_score(router[q]) is not None)
    tokens = cast("float | None", point and point["tokens_per_question"]
                  and point["tokens_per_question"][0])
    return {"questions": len(mine), **(point or {"score": None, "tokens_per_question": None,
                                                 "cost_per_question": None}),
            "correct": round(sum(answered_well(row, correct_at) for row in scored)
                             / len(scored), 4) if scored else None,
            **(dict.fromkeys(("router_saving", "score_vs_router", "interval", "p_value", "mdd"))
               if mine is router else _paired(diffs, ours, tokens, seed))}


def _paired(diffs: list[float], router: KindStats | None, tokens: float | None,
            seed: int) -> dict[str, Any]:
    return {"router_saving": round(1 - router.tokens / tokens, 4) if router and tokens else None,
            "score_vs_router": mean(diffs, places=4), **paired_test(diffs, seed)}


def paired_test(diffs: list[float], seed: int) -> dict[str, Any]:
    """The 95% paired-bootstrap interval of the differences' mean, its p-value
    (`paired_p_value`) and the minimum detectable difference; where outcomes.untested says they
    support no test, none of them (None) and `untested`, why not, which their cells print."""
    why = untested(diffs)
    if why is not None:
        return {"interval": None, "p_value": None, "mdd": None, "untested": why}
    return {"interval": list(bootstrap_interval(diffs, mean, seed=seed)),
            "p_value": paired_p_value(diffs, seed), "mdd": min_detectable_difference(diffs)}


def paired_p_value(diffs: list[float], seed: int, samples: int = BOOTSTRAP_SAMPLES) -> float:
    """Bootstrap under the null (differences centred on zero): share of resampled means at least
    as far from zero as the observed one (the paired comparisons' and the router tables')."""
    observed = cast(float, mean(diffs))  # there are diffs: never None
    centred = [d - observed for d in diffs]
    rng = random.Random(seed)
    n = len(diffs)
    extreme = sum(abs(cast(float, mean(rng.choices(centred, k=n)))) >= abs(observed)
                  for _ in range(samples))
    return round((extreme + 1) / (samples + 1), 4)
