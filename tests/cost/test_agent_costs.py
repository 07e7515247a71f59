"""An agent's cost before it runs (issue 38): the dry run bounds `react` by its step budget,
from an answer at once to `--max-steps` calls, and a live run of a scripted agent of known length
spends inside that range, on the fake server."""

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from freshrag.llm.tokens import count_messages
from tests.support.agent_script import searches_then_answers
from tests.support.costs import PRICE, long_article, table
from tests.support.datasets import write_dataset

MAX_STEPS = 5
QUESTIONS = 4
# The scripted agents: searches before answering, and the model calls that makes (the 5-step
# agent searches until only its closing answer is left)
AGENTS = {1: 0, 3: 2, 5: 4}


def run(data, out, *extra):
    return main(["run", "--dataset", str(data), "--systems", "react", "--out", str(out),
                 "--config", str(data / "freshrag.toml"), "--no-probe", "--concurrency", "1",
                 "--max-steps", str(MAX_STEPS), *extra])


def dollars(cell: str) -> list[float]:
    """`$0.0158` as [0.0158, 0.0158]; a range `$0.0079–$0.0080` as its two ends."""
    ends = [float(end.strip().strip("$")) for end in cell.split("–")]
    return ends * 2 if len(ends) == 1 else ends


def spent(requests, rows) -> float:
    """What a run spent at the test's prices, the judge included: its requests' input tokens as
    the dry run counts them (tiktoken, as for any model but the embedded one; the fake server's
    own count is a rough one) and the output tokens the fake server reported."""
    assert len(rows) == QUESTIONS and all(row["status"] == "ok" for row in rows)
    sent = sum(count_messages(r["messages"], r["model"], r.get("tools")) for r in requests)
    output = sum(usage["output"] for row in rows for usage in row["usage"].values())
    return (sent * PRICE[0] + output * PRICE[1]) / 1e6


def test_the_dry_run_range_holds_agents_of_every_length(tmp_path, fake, capsys):
    data = tmp_path / "data"
    write_dataset(data, QUESTIONS, content=long_article, prices=PRICE)
    # a run before, at another seed, leaves replies in the cache whose lengths the estimate
    # takes (its calls are not the ones estimated: the seed is part of a request)
    fake.reply = searches_then_answers(2)
    assert run(data, tmp_path / "estimate" / "before", "--seed", "1") == 0
    capsys.readouterr()
    assert run(data, tmp_path / "estimate" / "run", "--dry-run") == 0
    estimate = table(capsys.readouterr().out)
    low, high = dollars(estimate["**total**"][6])
    assert estimate["answer"][1] == f"{QUESTIONS}–{QUESTIONS * MAX_STEPS}"  # calls
    live = {}
    for steps, searches in AGENTS.items():
        fake.reply = searches_then_answers(searches)
        run_dir = tmp_path / f"live-{steps}" / "run"  # a cache of its own: every call is made
        made = len(fake.requests)
        assert run(data, run_dir) == 0
        rows = read_samples(run_dir / "samples.jsonl")
        assert {sum(step["calls"] for step in row["steps"]) for row in rows} == {steps}
        assert len(fake.requests) - made == QUESTIONS * (steps + 1)  # the judge's grade too
        live[steps] = spent(fake.requests[made:], rows)
    # every agent spends inside the range (within what the made-up chunks and reply lengths
    # miss); the 1-step agent at its low end, the 5-step agent at its high end
    for steps, cost in live.items():
        assert low * 0.9 <= cost <= high * 1.1, (steps, cost, low, high)
    assert live[1] == pytest.approx(low, rel=0.1) and live[5] == pytest.approx(high, rel=0.1)
    assert live[1] < live[3] < live[5]
    # over agents whose lengths spread over the range, its midpoint is their mean
    midpoint = (low + high) / 2
    mean = sum(live.values()) / len(live)
    assert midpoint == pytest.approx(mean, rel=0.25), (midpoint, live)
