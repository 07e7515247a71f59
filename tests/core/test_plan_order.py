"""The order of a run's plan as a sort key (harness/core/plan_order.py,
docs/reports.md#what-a-report-holds): epoch, the question's place in the dataset, the system's
place in --systems; what the dataset or --systems does not list after the rest, by id and
name; the questions by id where the manifest records no questions file that is the run's."""

from __future__ import annotations

import random

from freshrag.core.dataset import sha256_file
from freshrag.core.plan_order import PlanOrder, plan_order
from tests.support.datasets import write_dataset


def test_pairs_sort_as_the_plan_walks_them_whatever_order_they_come_in():
    order = PlanOrder({"naive": 0, "baseline": 1}, {"q9": 0, "q1": 1})
    planned = [(1, "q9", "naive"), (1, "q9", "baseline"), (1, "q9", "mine"),
               (1, "q1", "naive"), (1, "q1", "baseline"), (1, "q0", "naive"),
               (1, "q5", "naive"), (2, "q9", "naive")]
    came = random.Random(1).sample(planned, len(planned))
    assert sorted(came, key=lambda pair: order.key(*pair)) == planned


def test_the_questions_places_come_from_the_recorded_file_only_while_it_is_the_runs(tmp_path):
    questions, articles = write_dataset(tmp_path, fields=lambda i: {"id": f"q{9 - i}"})
    record = {"files": {"questions": str(questions), "articles": str(articles)},
              "sha256": {"questions": sha256_file(questions)}}
    manifest = {"systems": ["naive", "baseline"], "dataset": record}
    read = plan_order(manifest)
    assert read == PlanOrder({"naive": 0, "baseline": 1}, {"q9": 0, "q8": 1, "q7": 2})
    questions.write_text(questions.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert plan_order(manifest).questions == {}  # changed
    questions.unlink()
    assert plan_order(manifest).questions == {}  # moved
    assert plan_order({"dataset": {"name": "A_f"}}) == PlanOrder({})  # an import's
