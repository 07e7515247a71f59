"""The answer summary (harness/core/summary.py, docs/design.md#the-read-side): the light read
and the whole row give equal summaries of the same rows, holding what the tables read."""

import json
from pathlib import Path

from freshrag.core.samples import SAMPLES, read_samples, read_summaries
from freshrag.core.summary import AnswerSummary, Title, summary_of
from tests.support.rows import changed, good

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden" / "run" / SAMPLES


def test_both_reads_give_the_summaries_of_the_whole_rows():
    whole = read_samples(GOLDEN)
    lightly = read_summaries(GOLDEN)
    assert len(lightly) == len(whole) > 0
    assert lightly == read_summaries(GOLDEN, light=False) == [summary_of(row) for row in whole]
    assert all(type(made) is AnswerSummary for made in lightly)
    # the golden run holds what the tables read: decisions, retrievals, several systems
    assert {made.decision for made in lightly} > {None}
    assert any(made.retrieved for made in lightly)
    assert len({made.system for made in lightly}) > 1 and all(made.models for made in lightly)


def test_a_summary_holds_what_the_tables_read(tmp_path):
    row = good()
    row["calls"][1]["batch"] = True
    (tmp_path / SAMPLES).write_text(json.dumps(row) + "\n")
    [made] = read_summaries(tmp_path / SAMPLES)
    assert (made.dataset, made.question_id, made.system, made.epoch, made.status) == (
        "A", "q1", "react", 1, "ok")
    assert (made.grade.truthfulness, made.grade.relevance, made.grade.unscored_reason) == (5, 4, None)
    assert "raw" not in made.grade
    assert made.usage["answer"].input == 70 and made.usage["judge"].output == 9
    assert made.models == {"answer": "m", "judge": "j"}
    assert [call.usage for call in made.calls.batched] == [row["calls"][1]["usage"]]
    assert made.retrieved == (Title("Velmora"),) and made.retrievals == 1
    assert made.steps.searched() == [(1, ["Velmora"])] and made.steps.line == 1
    assert made.gold_title == "Velmora" and made.gold_titles is None and made.context is None
    assert made == summary_of(row)


def test_a_grounded_summary_holds_the_answer_context(tmp_path):
    row = changed("reference", "Nine spans.")
    row["calls"][1]["messages"] = [{"role": "system", "content": "Velmora has nine spans."},
                                   {"role": "user", "content": "Which bridge?"}]
    (tmp_path / SAMPLES).write_text(json.dumps(row) + "\n")
    [made] = read_summaries(tmp_path / SAMPLES)
    assert made.reference == "Nine spans." and made.context == "Velmora has nine spans."
    assert made == summary_of(row)
