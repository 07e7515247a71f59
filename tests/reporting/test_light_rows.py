"""A report reads its answers' summaries by the light read (`read_summaries`: of each call only
what the tables read) and prints the same tables as from the summaries of whole rows, on the
golden run directory (five systems, the judge and three scorers, decisions and retrievals)."""

from __future__ import annotations

import json
from pathlib import Path

from freshrag.core.samples import SAMPLES, read_samples, read_summaries
from freshrag.core.summary import Title, summary_of
from freshrag.reporting import analysis, summary_table

RUN = Path(__file__).resolve().parents[1] / "data" / "golden" / "run"


def test_light_summaries_give_the_same_tables_as_whole_rows():
    whole, light = read_samples(RUN / SAMPLES), read_summaries(RUN / SAMPLES)
    assert len(light) == len(whole) > 0
    assert any("messages" in call for row in whole for call in row["calls"])
    made = [summary_of(row) for row in whole]
    assert summary_table.summarise(light) == summary_table.summarise(made)
    assert json.dumps(analysis.analyse(light)) == json.dumps(analysis.analyse(made))


def test_a_grounded_summary_is_the_whole_rows(tmp_path):
    rows = read_samples(RUN / SAMPLES)
    grounded = {**rows[0], "reference": "the passage", "group": "g1", "question_id": "grounded"}
    (tmp_path / SAMPLES).write_text("".join(json.dumps(r) + "\n" for r in (rows[1], grounded)))
    kept = {made.question_id: made for made in read_summaries(tmp_path / SAMPLES)}
    assert kept["grounded"] == summary_of(grounded)
    assert kept["grounded"].context == summary_of(grounded).context


def test_light_summaries_leave_out_the_chunks_text(tmp_path):
    row = read_samples(RUN / SAMPLES)[0]
    chunk = {"title": "Velmora", "index": 0, "score": 0.9, "text": "The bridge has nine spans."}
    row = {**row, "details": {**(row.get("details") or {}), "retrieved": [chunk]}}
    (tmp_path / SAMPLES).write_text(json.dumps(row) + "\n")
    [whole] = read_samples(tmp_path / SAMPLES)
    [light] = read_summaries(tmp_path / SAMPLES)
    assert whole["details"]["retrieved"] == [chunk]
    assert light.retrieved == (Title("Velmora"),)
