"""Retrieval metrics over gold sets, per answer, by trec_eval's own code (pytrec_eval-terrier),
never by hand (docs/reports.md#retrieval-quality; why this library:
docs/design.md#retrieval-metrics).

A question's gold set is its `gold_titles` (a multi-article question, in hop order), else its
one `gold_title`; a general query has none and is not measured. The metrics are at the article
level: a chunk's title is its article, and a later chunk of an article already ranked earns
nothing but keeps its place, so an article counts once, at its best rank, and `k` still counts
the chunks the answer saw. On a one-article set this gives exactly the chunk-rank hit@1, hit@k
and MRR the report has always shown.

Per answer: `hit@1` (a gold article first), `hit@k` (any gold article among the first k: the
recall of any), `recall_all@k` (every gold article among them), `ndcg@k` (binary gains),
`mrr` (the reciprocal rank of the first gold article), over the chunks the answer saw
(`details.retrieved`); and `recall_any_traj` / `recall_all_traj` over its whole trajectory
(every search step's chunks, in order; an answer without search steps: the chunks it saw).
"""

from __future__ import annotations

from typing import Any, Sequence

from freshrag.core.summary import AnswerSummary

METRICS = ("hit@1", "hit@k", "recall_all@k", "ndcg@k", "mrr", "recall_any_traj",
           "recall_all_traj")
Metrics = dict[str, float]  # one answer's METRICS


def gold_set(answer: AnswerSummary) -> list[str]:
    """The question's gold articles in hop order: its `gold_titles`, else its one `gold_title`,
    else none (a general query)."""
    return list(answer.gold_titles or ([answer.gold_title] if answer.gold_title else []))


def retrieved_titles(answer: AnswerSummary) -> list[str] | None:
    """Titles of the chunks the answer saw, in rank order; None if the answer did not retrieve
    (or did not say what it retrieved)."""
    if not answer.retrievals or answer.retrieved is None:
        return None
    return [chunk.title for chunk in answer.retrieved]


def searches(answer: AnswerSummary) -> list[list[str]]:
    """The titles each search step found, one list per search, in the order searched."""
    return [titles for _, titles in answer.steps.searched()] if answer.steps else []


def trajectory_titles(answer: AnswerSummary) -> list[str]:
    """Every search step's titles, in order; an answer without search steps (a row written
    before steps, an import): the chunks it saw."""
    found = answer.steps.titles() if answer.steps else None
    return (retrieved_titles(answer) or []) if found is None else found


def article_run(titles: Sequence[str]) -> list[str | None]:
    """The ranking at the article level: each article at the place of its first chunk, a later
    chunk of it None (a place that earns nothing)."""
    seen: set[str] = set()
    ranked: list[str | None] = []
    for title in titles:
        ranked.append(None if title in seen else title)
        seen.add(title)
    return ranked


def answer_metrics(answers: Sequence[tuple[list[str], list[str], list[str]]]
                   ) -> list[dict[str, float]]:
    """Per answer, given as (gold set, titles it saw, trajectory titles), the METRICS above;
    `k` is the most chunks any of them saw, the trajectories' cutoff their longest. Binary gains
    at the article level make every metric a function of the ranking's `pattern` alone: each
    distinct pattern is evaluated once (a run of 100,000 answers has a few hundred), and answers
    of the same patterns share one dict of values, which readers must not change."""
    if not answers:
        return []
    k = max([1, *(len(seen) for _, seen, _ in answers)])
    n = max([1, *(len(path) for _, _, path in answers)])
    at_k = [pattern(gold, seen) for gold, seen, _ in answers]
    # what the answer saw is its trajectory when it searched once: not evaluated again
    over_path = [None if path == seen else pattern(gold, path) for gold, seen, path in answers]
    values_at_k = _evaluated(set(at_k), {f"success.1,{k}", f"recall.{k}", f"ndcg_cut.{k}",
                                         "recip_rank"})
    values_over_path = _evaluated({p for p in over_path if p is not None},
                                  {f"success.{n}", f"recall.{n}"})
    made: dict[tuple[Any, ...], dict[str, float]] = {}
    found = []
    for mine, path in zip(at_k, over_path):
        if (values := made.get((mine, path))) is None:
            kept = values_at_k[mine]
            trail = (kept[f"success_{k}"], kept[f"recall_{k}"]) if path is None else (
                values_over_path[path][f"success_{n}"], values_over_path[path][f"recall_{n}"])
            values = made[(mine, path)] = {
                "hit@1": kept["success_1"], "hit@k": kept[f"success_{k}"],
                "recall_all@k": float(kept[f"recall_{k}"] == 1.0), "ndcg@k": kept[f"ndcg_cut_{k}"],
                "mrr": kept["recip_rank"], "recall_any_traj": trail[0],
                "recall_all_traj": float(trail[1] == 1.0)}
        found.append(values)
    return found


Pattern = tuple[int, int, tuple[int, ...]]


def pattern(gold: Sequence[str], titles: Sequence[str]) -> Pattern:
    """What trec_eval reads of a ranking with binary gains at the article level: how many
    distinct gold articles there are, how long the ranking is, and the rank (from 0) at which
    each gold article it holds first appears (a later chunk of it earns nothing, as in
    `article_run`)."""
    distinct = set(gold)
    return len(distinct), len(titles), tuple(sorted(
        titles.index(title) for title in distinct if title in titles))


BATCH = 1_000


def _evaluated(patterns: set[Pattern], measures: set[str]) -> dict[Pattern, dict[str, float]]:
    """trec_eval's `measures` of each pattern, on a ranking made of it (gold articles `g0`,
    `g1`, ... where it marks one, another article elsewhere), BATCH patterns at a time."""
    ordered = list(patterns)
    found: dict[Pattern, dict[str, float]] = {}
    for start in range(0, len(ordered), BATCH):
        batch = ordered[start:start + BATCH]
        made = [([f"g{n}" for n in range(count)],
                 [f"g{firsts.index(rank)}" if rank in firsts else f"r{rank}"
                  for rank in range(length)]) for count, length, firsts in batch]
        found.update(zip(batch, _evaluate(made, measures)))
    return found


def row_metrics(answers: list[AnswerSummary]) -> list[Metrics | None]:
    """Per answer, the METRICS of `answer_metrics`, evaluated together; None where it has no
    gold set (a general query) or says nothing of what it retrieved (no search step, no chunks
    it saw: at k, a row of search steps alone saw none). A report's retrieval table and
    trajectories read one evaluation per identity through their `Answers`
    (harness/reporting/answers.py)."""
    measured = [i for i, answer in enumerate(answers) if gold_set(answer)
                and (answer.steps or retrieved_titles(answer) is not None)]
    values = answer_metrics([(gold_set(answers[i]), retrieved_titles(answers[i]) or [],
                              trajectory_titles(answers[i])) for i in measured])
    found: list[Metrics | None] = [None] * len(answers)
    for i, metrics in zip(measured, values):
        found[i] = metrics
    return found


def _evaluate(answers: Sequence[tuple[list[str], list[str]]],
              measures: set[str]) -> list[dict[str, float]]:
    """trec_eval's `measures` per answer (gold set, ranked titles), each named as trec_eval
    names it (`success_1`, `recall_5`, ...), 0.0 where the answer ranked nothing. Documents are
    named by number, so no title can clash with a place that earns nothing."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for query, (gold, titles) in enumerate(answers):
        names = {title: f"a{n}" for n, title in enumerate(dict.fromkeys([*gold, *titles]))}
        qrels[str(query)] = {names[title]: 1 for title in gold}
        ranked = article_run(titles)
        if ranked:  # descending scores: trec_eval ranks by score, and no two are equal
            run[str(query)] = {names[title] if title else f"r{rank}": float(len(ranked) - rank)
                               for rank, title in enumerate(ranked)}
    import pytrec_eval  # numpy beneath it: loaded when a table is made, not by `--help`

    found = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run) if run else {}
    empty = dict.fromkeys(_names(measures), 0.0)
    return [found.get(str(query), empty) for query in range(len(answers))]


def _names(measures: set[str]) -> list[str]:
    """trec_eval's name of each value of `measures`: `success.1,5` gives success_1, success_5."""
    return [f"{name}_{cut}" if cuts else name for measure in measures
            for name, _, cuts in [measure.partition(".")] for cut in cuts.split(",")]
