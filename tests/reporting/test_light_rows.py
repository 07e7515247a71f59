"""A report reads its rows light (`read_samples(light=True)`: of each call only what the tables
read) and prints the same tables as from whole rows, on the golden run directory (five systems,
the judge and three scorers, decisions and retrievals)."""

from __future__ import annotations

import json
from pathlib import Path

from freshrag.core.samples import CALL_SUMMARY, SAMPLES, read_samples
from freshrag.reporting import analysis, summary_table

RUN = Path(__file__).resolve().parents[1] / "data" / "golden" / "run"


def test_light_rows_give_the_same_tables_as_whole_rows():
    whole, light = read_samples(RUN / SAMPLES), read_samples(RUN / SAMPLES, light=True)
    assert len(light) == len(whole) > 0
    assert any("messages" in call for row in whole for call in row["calls"])
    assert all(set(call) <= set(CALL_SUMMARY) for row in light for call in row["calls"])
    assert summary_table.summarise(light) == summary_table.summarise(whole)
    assert json.dumps(analysis.analyse(light)) == json.dumps(analysis.analyse(whole))


def test_grounded_rows_keep_their_calls_whole(tmp_path):
    rows = read_samples(RUN / SAMPLES)
    grounded = {**rows[0], "reference": "the passage", "group": "g1", "question_id": "grounded"}
    (tmp_path / SAMPLES).write_text("".join(json.dumps(r) + "\n" for r in (rows[1], grounded)))
    kept = {row["question_id"]: row for row in read_samples(tmp_path / SAMPLES, light=True)}
    assert kept["grounded"]["calls"] == grounded["calls"]
    assert kept[rows[1]["question_id"]]["calls"] != rows[1]["calls"]


def test_light_rows_leave_out_the_chunks_text(tmp_path):
    row = read_samples(RUN / SAMPLES)[0]
    chunk = {"title": "Velmora", "index": 0, "score": 0.9, "text": "The bridge has nine spans."}
    row = {**row, "details": {**(row.get("details") or {}), "retrieved": [chunk]}}
    (tmp_path / SAMPLES).write_text(json.dumps(row) + "\n")
    [whole] = read_samples(tmp_path / SAMPLES)
    [light] = read_samples(tmp_path / SAMPLES, light=True)
    assert whole["details"]["retrieved"] == [chunk]
    assert light["details"]["retrieved"] == [{"title": "Velmora"}]
