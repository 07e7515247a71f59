"""Retrieval quality over gold sets and failure attribution by gold set and steps
(harness/reporting/retrieval_metrics.py, analysis.py; docs/reports.md#retrieval-quality), on rows
made by hand: the figures are worked out here from the metrics' definitions, never copied from
a run of the code, and on one-article sets they are compared with the formula the report used
before gold sets (the chunk rank of the gold article) on the golden run's rows."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from freshrag.cli.main import main
from freshrag.core.jsonl import JsonlWriter
from freshrag.core.samples import sample_row
from freshrag.core.types import (
    Grade,
    LLMResponse,
    Question,
    RetrievedChunk,
    Step,
    SystemAnswer,
    Usage,
)
from freshrag.reporting import analysis
from freshrag.reporting.answers import Answers
from freshrag.reporting.retrieval_metrics import answer_metrics, gold_set
from tests.support.rows import summaries, summary

GOLDEN_ROWS = Path(__file__).resolve().parents[1] / "data" / "golden" / "run" / "samples.jsonl"


def chunks(titles: list[str]) -> list[dict[str, Any]]:
    return [{"title": t, "index": i, "score": 1.0 - i / 10} for i, t in enumerate(titles)]


def row(question: str, system: str = "naive", gold: list[str] | None = None,
        retrieved: list[str] | None = None, searched: list[list[str]] | None = None,
        score: int | None = 5, stopped: str | None = None,
        scores: dict[str, Any] | None = None) -> dict[str, Any]:
    """A samples.jsonl row. `gold`: its gold set (more than one title: `gold_titles`);
    `retrieved`: the chunks the answer saw (None: it did not retrieve); `searched`: the titles
    of each search step, in order; `score`: truthfulness and relevance each (None: unscored)."""
    gold = ["Gold"] if gold is None else gold
    steps = [{"kind": "search", "query": f"query {n}", "retrieved": chunks(titles)}
             for n, titles in enumerate(searched or [])]
    grade = {"truthfulness": score, "relevance": score, "raw": [],
             "unscored_reason": None if score else "bad"}
    return {"dataset": "A_f", "question_id": question, "question": "?",
            "gold_title": gold[0] if gold else None,
            "gold_titles": gold if len(gold) > 1 else None, "system": system, "status": "ok",
            "answer": "a", "retrievals": len(steps) or (0 if retrieved is None else 1),
            "usage": {"answer": {"input": 100, "output": 10, "estimated": False}},
            "grade": grade, "calls": [],
            "details": {} if retrieved is None else {"retrieved": chunks(retrieved)},
            "steps": steps, "stopped": stopped, **({"scores": scores} if scores else {})}


def ndcg_by_definition(gold: list[str], titles: list[str], k: int) -> float:
    """nDCG@k with binary gains, an article counted at its first chunk only: DCG is the sum of
    1 / log2(rank + 1) over the ranks where a gold article first appears, the ideal DCG the same
    sum with every gold article ranked first."""
    seen: set[str] = set()
    dcg = 0.0
    for rank, title in enumerate(titles[:k], start=1):
        if title in gold and title not in seen:
            dcg += 1 / math.log2(rank + 1)
        seen.add(title)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def metrics(gold: list[str], titles: list[str], path: list[str] | None = None) -> dict[str, float]:
    (values,) = answer_metrics([(gold, titles, titles if path is None else path)])
    return values


# --------------------------------------------------------------------------- gold sets


def test_the_gold_set_is_gold_titles_else_the_one_gold_title_else_none():
    assert gold_set(summary(row("q", gold=["A", "B"]))) == ["A", "B"]
    assert gold_set(summary(row("q", gold=["A"]))) == ["A"]
    assert gold_set(summary(row("q", gold=[]))) == []


def test_one_of_two_gold_articles_retrieved_is_recall_of_any_not_of_all():
    rows = [row("q1", gold=["A", "B"], retrieved=["X", "A", "Y"])]
    (quality,) = analysis.retrieval_quality(Answers(summaries(rows)))
    assert (quality["retrieved"], quality["k"]) == (1, 3)
    assert quality["hit@k"] == 1.0  # the recall of any gold article at k
    assert quality["recall_all@k"] == 0.0
    assert quality["hit@1"] == 0.0 and quality["mrr"] == 0.5
    both = analysis.retrieval_quality(Answers(summaries([row("q1", gold=["A", "B"], retrieved=["B", "X", "A"])])))
    assert both[0]["recall_all@k"] == both[0]["hit@1"] == 1.0


@pytest.mark.parametrize("gold, titles", [
    pytest.param(["A", "B"], ["A", "X", "B"], id="both-gold-at-ranks-1-and-3"),
    pytest.param(["A", "B"], ["X", "B", "B", "A", "Y"], id="a-gold-article-twice"),
    pytest.param(["A", "B"], ["X", "Y", "A", "Z", "W"], id="one-of-two-at-rank-3"),
    pytest.param(["A"], ["X", "X", "A"], id="one-gold-after-a-repeated-article"),
])
def test_ndcg_is_the_definition_at_the_article_level(gold, titles):
    expected = ndcg_by_definition(gold, titles, len(titles))
    assert metrics(gold, titles)["ndcg@k"] == pytest.approx(expected, abs=1e-12)


def test_ndcg_of_gold_at_ranks_one_and_three_by_hand():
    # worked out on paper: (1/log2 2 + 1/log2 4) / (1/log2 2 + 1/log2 3)
    assert metrics(["A", "B"], ["A", "X", "B"])["ndcg@k"] == pytest.approx(
        1.5 / (1 + 1 / math.log2(3)), abs=1e-12)


def test_the_chunks_of_one_article_count_once():
    # three chunks of the one gold article found: all of it, never more than a perfect ranking
    once = metrics(["A"], ["A", "A", "A"])
    assert once["ndcg@k"] == pytest.approx(1.0) and once["recall_all@k"] == 1.0
    # three chunks of one of two gold articles: half the gold set, however many chunks
    half = metrics(["A", "B"], ["A", "A", "A"])
    assert half["recall_all@k"] == 0.0 and half["hit@k"] == 1.0
    assert half["ndcg@k"] == pytest.approx(1 / (1 + 1 / math.log2(3)), abs=1e-12)
    # a repeat keeps its place: the gold article third is at rank 3, not 2
    assert metrics(["A"], ["X", "X", "A"])["mrr"] == pytest.approx(1 / 3)


def test_recall_over_the_trajectory_counts_every_search():
    """An agent's three searches find A, then nothing of gold, then B; the chunks its answer
    saw (details.retrieved) hold only the last search's. Made as the runner makes rows."""
    def found(*titles: str) -> tuple[RetrievedChunk, ...]:
        return tuple(RetrievedChunk(t, 0, f"text of {t}", 0.5) for t in titles)

    steps = [Step("search", query="first", retrieved=found("A", "X")),
             Step("search", query="second", retrieved=found("Y", "X")),
             Step("search", query="third", retrieved=found("B", "Z")),
             Step("answer", text="it")]
    answer = SystemAnswer(text="it", retrievals=3, steps=steps,
                          details={"retrieved": [{"title": "B", "index": 0, "score": 0.5},
                                                 {"title": "Z", "index": 0, "score": 0.4}]})
    judge = LLMResponse(role="judge", model="judge-model", text="", tool_name=None,
                        tool_arguments=None, usage=Usage(9, 1), latency_s=0.1, cache_hit=False,
                        messages=[])
    made = sample_row("A_f", Question("q1", "Which?", "A", gold_titles=("A", "B")), "react",
                      answer, Grade(2, 2), [judge], 1.0)
    (quality,) = analysis.retrieval_quality(Answers(summaries([dict(made)])))
    assert quality["recall_all@k"] == 0.0 and quality["hit@k"] == 1.0  # only B was seen
    assert quality["recall_any_traj"] == quality["recall_all_traj"] == 1.0
    # the same searches without B: the trajectory holds A only
    partial = row("q2", "react", gold=["A", "B"], retrieved=["Y"], searched=[["A"], ["Y"]])
    (values,) = analysis.retrieval_quality(Answers(summaries([partial])))
    assert (values["recall_any_traj"], values["recall_all_traj"]) == (1.0, 0.0)
    assert analysis.attribution(summary(dict(made))) == "generation"  # all gold found, answered wrongly


def test_one_article_sets_give_the_chunk_rank_figures_of_before_on_the_golden_rows():
    """The report's formula before gold sets: the gold title's first chunk rank in the list."""
    rows = [json.loads(line) for line in GOLDEN_ROWS.read_text().splitlines()]
    rows += [row("d1", retrieved=["X", "X", "Gold"]), row("d2", retrieved=["X", "Y", "X", "Z"]),
             row("d3", retrieved=["X", "Gold", "Gold", "Y"])]  # repeats before and of the gold
    answers = [(row_, titles) for row_ in summaries(rows)
               if (titles := analysis.retrieved_titles(row_)) is not None and row_.gold_title]
    assert len(answers) > 12
    values = answer_metrics([(gold_set(r), titles, titles) for r, titles in answers])
    for (r, titles), got in zip(answers, values):
        rank = titles.index(r.gold_title) + 1 if r.gold_title in titles else None
        assert (got["hit@1"], got["hit@k"], got["mrr"]) == (
            float(rank == 1), float(rank is not None), 1 / rank if rank else 0.0)
        assert got["recall_all@k"] == got["hit@k"] == got["recall_any_traj"]


def test_the_breakdown_s_intervals_cover_the_new_metrics():
    rows = [row(f"q{i}", gold=["A", "B"], retrieved=["A", "B"] if i % 2 else ["A", "X"])
            for i in range(20)]
    (quality,) = analysis.retrieval_quality(Answers(summaries(rows)), with_intervals=True)
    value, low, high = quality["recall_all@k"]
    assert value == 0.5 and low < value < high
    assert quality["hit@k"] == [1.0, 1.0, 1.0]


# --------------------------------------------------------------------------- failure attribution

NO_CONTEXT_NEEDED = {"context-relevance": {"status": "scored",
                                           "metrics": {"context_relevance": 0.0}}}


@pytest.mark.parametrize("made, expected", [
    pytest.param(row("q", gold=["A", "B"], retrieved=["X", "Y"], score=2), "retrieval_miss",
                 id="two-articles-none-retrieved"),
    pytest.param(row("q", gold=["A", "B"], retrieved=["A", "Y"], score=2), "partial_retrieval",
                 id="two-articles-one-retrieved"),
    pytest.param(row("q", gold=["A", "B"], retrieved=["B", "A"], score=2), "generation",
                 id="two-articles-both-retrieved"),
    pytest.param(row("q", "react", gold=["A", "B"], retrieved=["A", "B"], score=2,
                     searched=[["A"], ["B"]], stopped="max_steps"), "stopped",
                 id="stopped-at-the-bound-though-all-found"),
    pytest.param(row("q", "react", retrieved=["X"], score=2, searched=[["Gold"], ["X"]]),
                 "generation", id="one-article-found-by-an-earlier-search"),
    pytest.param(row("q", "react", retrieved=["X"], score=2, searched=[["Y"], ["X"]]),
                 "retrieval_miss", id="one-article-no-search-found-it"),
    pytest.param(row("q", "react", retrieved=["Gold"], score=2, searched=[["Gold"]],
                     stopped="budget"), "stopped", id="one-search-stopped-by-budget"),
    pytest.param(row("q", gold=["A", "B"], retrieved=["A", "B"], score=2,
                     scores=NO_CONTEXT_NEEDED), "generation",
                 id="two-articles-the-gold-set-decides-before-scorers"),
    pytest.param(row("q", gold=["A", "B"], retrieved=["X"], score=5), "fine",
                 id="two-articles-answered-well"),
    pytest.param(row("q", "baseline", gold=["A", "B"], score=2), "knowledge_gap",
                 id="two-articles-no-retrieval"),
    pytest.param(row("q", "oracle", gold=["A", "B"], score=2), "generation",
                 id="two-articles-oracle"),
    pytest.param(row("q", gold=["A", "B"], retrieved=["X"], score=None), "unscored",
                 id="two-articles-unscored"),
    # one article, one search: as before gold sets
    pytest.param(row("q", retrieved=["X", "Gold"], score=2), "generation",
                 id="single-gold-retrieved"),
    pytest.param(row("q", retrieved=["X"], score=2), "retrieval_miss", id="single-gold-missed"),
    pytest.param(row("q", retrieved=["Gold"], score=2, scores=NO_CONTEXT_NEEDED),
                 "retrieval_miss", id="single-scorers-decide-first"),
])
def test_attribution_by_gold_set_and_steps(made, expected):
    assert analysis.attribution(summary(made)) == expected


def test_attribution_counts_every_category_per_identity():
    rows = [row("q1", "react", gold=["A", "B"], retrieved=["X"], score=2, searched=[["X"], ["Y"]]),
            row("q2", "react", gold=["A", "B"], retrieved=["A"], score=2, searched=[["A"], ["Y"]]),
            row("q3", "react", gold=["A", "B"], retrieved=["B"], score=2, searched=[["A"], ["B"]]),
            row("q4", "react", gold=["A", "B"], score=2, searched=[["A"], ["B"]],
                retrieved=["B"], stopped="max_steps"),
            row("q5", "react", gold=["A", "B"], retrieved=["A"], score=5, searched=[["A"]]),
            row("q6", "react", gold=["A", "B"], retrieved=["A"], score=None, searched=[["A"]])]
    (counts,) = analysis.attributions(Answers(summaries(rows)))
    assert {name: counts[name] for name in analysis.ATTRIBUTIONS} == {
        "fine": 1, "retrieval_miss": 1, "partial_retrieval": 1, "generation": 1,
        "knowledge_gap": 0, "stopped": 1, "unscored": 1}


# --------------------------------------------------------------------------- where it is shown


def test_the_report_shows_the_metrics_and_categories_in_markdown_json_and_html(tmp_path, capsys):
    writer = JsonlWriter(tmp_path / "samples.jsonl")
    writer.write(row("q1", gold=["A", "B"], retrieved=["A", "X", "B"]))
    writer.write(row("q2", gold=["A", "B"], retrieved=["X", "A"], score=2))
    writer.close()
    page = tmp_path / "report.html"
    assert main(["report", str(tmp_path), "--html", str(page)]) == 0
    printed = capsys.readouterr().out
    (saved,) = json.loads((tmp_path / "analysis.json").read_text())["retrieval"]
    expected_ndcg = (ndcg_by_definition(["A", "B"], ["A", "X", "B"], 3)
                     + ndcg_by_definition(["A", "B"], ["X", "A"], 3)) / 2
    assert saved["ndcg@k"] == round(expected_ndcg, 4)
    assert (saved["recall_all@k"], saved["recall_all_traj"]) == (0.5, 0.5)
    header = ("| dataset | system | retrieved | k | hit@1 | hit@k | recall_all@k | ndcg@k | mrr "
              "| recall_any_traj | recall_all_traj |")
    assert header in printed
    assert "| partial_retrieval | generation | knowledge_gap | stopped |" in printed
    html = page.read_text()
    table = html[html.index('id="analysis-retrieval"'):]
    table = table[:table.index("</table>")]
    for column in ("recall_<wbr>all@k", "ndcg@k", "recall_<wbr>any_<wbr>traj"):
        assert f"<th>{column}</th>" in table
    assert "partial_<wbr>retrieval" in html
