"""Batch prices in reports: a call answered by the Batch API is recorded as such (`batch` in its
call record) and every dollar figure of `freshrag report` prices it at the batch rate.

The same run is made twice on the fake server (tests/support/fake_batches.py), live and with `--batch`,
each with its own response cache; the fake answers a batch line exactly as the same live request,
so the two runs spend the same tokens and the batch run must cost BATCH_DISCOUNT of the other.
"""

import json
from pathlib import Path

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from freshrag.cost.budget import BATCH_DISCOUNT
from freshrag.reporting.prices import row_cost
from tests.support.datasets import write_dataset
from tests.support.fake_batches import FakeBatches
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import use_endpoint
from tests.support.rows import summary

PRICE = (100.0, 300.0)  # USD per million tokens: large, so that rounding to 6 digits is exact


def fresh_or_control(i: int) -> dict:
    """Fresh and control questions, so that the savings table (dollars per question) exists."""
    return {"kind": "fresh" if i % 2 else "control", "need": bool(i % 2)}


def run_and_report(data: Path, out: Path, *extra: str) -> dict:
    """`freshrag run` into `out` (its cache beside it), then `freshrag report` with the HTML page;
    the analysis it wrote."""
    assert main(["run", "--dataset", str(data), "--systems", "baseline,naive,advanced",
                 "--out", str(out), "--no-probe", *extra]) == 0
    assert main(["report", str(out), "--config", str(data / "freshrag.toml"),
                 "--html", str(out / "report.html")]) == 0
    return json.loads((out / "analysis.json").read_text())


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("runs")
    data = tmp_path / "data"
    write_dataset(data, 4, fields=fresh_or_control, prices=PRICE)
    fake = FakeBatches(polls=0)
    with FakeOpenAIServer(batches=fake) as server, pytest.MonkeyPatch.context() as monkeypatch:
        use_endpoint(monkeypatch, server.base_url, "sk-x")
        live = run_and_report(data, tmp_path / "live" / "run")
        calls_live = server.calls
        batch = run_and_report(data, tmp_path / "batch" / "run", "--batch", "--batch-poll", "0.05")
        assert server.calls == calls_live  # the batch run sent no live chat call
    return tmp_path, live, batch


def by_system(table: list[dict], field: str) -> dict[str, object]:
    return {entry["system"]: entry[field] for entry in table if "fresh_share" not in entry
            or entry["fresh_share"] == 0.5}


def test_every_dollar_figure_of_a_batch_run_is_the_batch_rate_of_the_live_run(both_runs):
    tmp_path, live, batch = both_runs
    live_cost, batch_cost = by_system(live["cost"], "cost_usd"), by_system(batch["cost"], "cost_usd")
    assert set(live_cost) == {"baseline", "naive", "advanced"}
    for system, dollars in live_cost.items():
        assert dollars > 0 and batch_cost[system] == pytest.approx(BATCH_DISCOUNT * dollars)
    # the savings table's dollars per question, from the same rows
    live_share, batch_share = (by_system(a["savings"], "cost_per_question") for a in (live, batch))
    assert set(live_share) >= {"baseline", "naive", "advanced"}
    for system, dollars in live_share.items():
        assert batch_share[system] == pytest.approx(BATCH_DISCOUNT * dollars)
    # tokens are tokens: the discount changes dollars only
    assert by_system(batch["cost"], "input_tokens") == by_system(live["cost"], "input_tokens")


def test_the_report_says_how_many_calls_were_priced_at_the_batch_rate(both_runs):
    tmp_path, live, batch = both_runs
    rows = read_samples(tmp_path / "batch" / "run" / "samples.jsonl")
    assert all(call["batch"] for row in rows for call in row["calls"])  # recorded per call
    system_calls = {s: sum(1 for row in rows if row["system"] == s for call in row["calls"]
                           if call["role"] != "judge") for s in ("baseline", "naive", "advanced")}
    assert by_system(batch["cost"], "batch_calls") == system_calls
    assert set(by_system(live["cost"], "batch_calls").values()) == {0}
    assert any("priced at 50% of the list price" in note for note in batch["notes"])
    assert not any("Batch API" in note for note in live["notes"])
    page = (tmp_path / "batch" / "run" / "report.html").read_text()
    assert "batch_<wbr>calls" in page and "priced at 50% of the list price" in page
    # a live run's report has no such column: nothing was priced at the batch rate
    assert "batch_<wbr>calls" not in (tmp_path / "live" / "run" / "report.html").read_text()


def call(role: str, usage: tuple[int, int], batch: bool | None) -> dict:
    record = {"role": role, "model": "m", "usage": {"input": usage[0], "output": usage[1]}}
    return record if batch is None else {**record, "batch": batch}


@pytest.mark.parametrize("calls, expected", [
    pytest.param([call("answer", (1000, 100), None), call("answer", (2000, 0), None)],
                 (1000 + 100 * 2 + 2000) / 1e6, id="row-written-before-the-field-list-price"),
    pytest.param([call("answer", (1000, 100), False), call("answer", (2000, 0), True)],
                 (1000 + 100 * 2 + BATCH_DISCOUNT * 2000) / 1e6, id="one-call-of-two-batched"),
    pytest.param([call("answer", (1000, 100), True), call("judge", (5000, 10), True)],
                 BATCH_DISCOUNT * (1000 + 100 * 2) / 1e6, id="judge-excluded-batched-or-not"),
])
def test_a_row_prices_each_call_at_the_rate_it_was_bought(calls, expected):
    usage: dict[str, dict[str, int]] = {}
    for record in calls:
        total = usage.setdefault(record["role"], {"input": 0, "output": 0})
        total["input"] += record["usage"]["input"]
        total["output"] += record["usage"]["output"]
    row = summary({"usage": usage, "calls": calls})
    assert row_cost(row, {"m": (1.0, 2.0)}) == pytest.approx(expected)
    assert len(row.calls.batched) == sum(1 for c in calls if c.get("batch") and c["role"] != "judge")
