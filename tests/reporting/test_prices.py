"""Quality against cost: the price table, what an answer cost, and the Pareto front."""

import pytest

from freshrag.cli.main import main
from freshrag.core.config import ConfigError
from freshrag.core.jsonl import JsonlWriter
from freshrag.reporting.analysis import quality_and_cost
from freshrag.reporting.answers import Answers
from freshrag.reporting.prices import KNOWN_PRICES, price_table, row_cost
from tests.support.rows import summaries, summary


def row(question, system, score, usage, models, dataset="A_f"):
    """A samples row whose calls name the model of each role."""
    truth = score // 2
    return {"dataset": dataset, "question_id": question, "question": "?", "gold_title": "G",
            "system": system, "status": "ok", "answer": "a", "retrievals": 0,
            "usage": {role: {"input": i, "output": o, "estimated": False}
                      for role, (i, o) in usage.items()},
            "grade": {"truthfulness": truth, "relevance": score - truth, "unscored_reason": None,
                      "raw": []},
            "calls": [{"role": role, "model": model} for role, model in models.items()],
            "details": {"decision": None}}


def test_the_config_adds_and_overrides_prices(tmp_path):
    config = tmp_path / "freshrag.toml"
    config.write_text('[prices]\n"mine" = { input = 1, output = 2.5 }\n'
                      '"gpt-4o" = { input = 0, output = 0 }\n')
    table = price_table(config)
    assert table["mine"] == (1.0, 2.5) and table["gpt-4o"] == (0.0, 0.0)
    assert table["gpt-4-0613"] == KNOWN_PRICES["gpt-4-0613"]


@pytest.mark.parametrize("entry, message", [
    ('"m" = 3', "expected { input"),
    ('"m" = { input = 1 }', "expected { input"),
    ('"m" = { input = -1, output = 2 }', "numbers >= 0"),
    ('"m" = { input = "cheap", output = 2 }', "numbers >= 0"),
])
def test_a_bad_price_names_the_file_and_model(tmp_path, entry, message):
    config = tmp_path / "freshrag.toml"
    config.write_text(f"[prices]\n{entry}\n")
    with pytest.raises(ConfigError) as raised:
        price_table(config)
    assert str(config) in str(raised.value) and "'m'" in str(raised.value)
    assert message in str(raised.value)


def test_an_answer_costs_every_role_but_the_judge():
    prices = {"big": (10.0, 30.0), "small": (0.5, 1.0)}
    answer = row("q", "advanced", 8,
                 {"decision": (1000, 200), "answer": (3000, 100), "judge": (5000, 50)},
                 {"decision": "small", "answer": "big", "judge": "unpriced-judge"})
    expected = (1000 * 0.5 + 200 * 1.0 + 3000 * 10.0 + 100 * 30.0) / 1e6
    assert row_cost(summary(answer), prices) == pytest.approx(expected)
    answer["calls"][1]["model"] = "unknown-model"
    assert row_cost(summary(answer), prices) is None  # unpriced, never free


def test_the_pareto_front_keeps_only_systems_nothing_beats():
    prices = {"m": (1.0, 1.0)}
    rows = [row("q1", "cheap", 6, {"answer": (100, 0)}, {"answer": "m"}),
            row("q1", "good", 9, {"answer": (1000, 0)}, {"answer": "m"}),
            row("q1", "worse", 7, {"answer": (2000, 0)}, {"answer": "m"}),   # good beats it
            row("q1", "free", 5, {"answer": (50, 0)}, {"answer": "elsewhere"})]  # unpriced
    table = {e["system"]: e for e in quality_and_cost(Answers(summaries(rows)), prices)}
    assert [table[s]["pareto_input_tokens"] for s in ("cheap", "good", "worse", "free")] == [
        True, True, False, True]
    assert [table[s]["pareto_cost_usd"] for s in ("cheap", "good", "worse", "free")] == [
        True, True, False, None]
    assert table["free"]["cost_usd"] is None and table["free"]["unpriced_models"] == ["elsewhere"]
    assert table["good"]["cost_usd"] == pytest.approx(1000 / 1e6)


def test_report_draws_the_pareto_plot_with_prices_from_the_config(tmp_path, capsys):
    writer = JsonlWriter(tmp_path / "samples.jsonl")
    for q in range(3):
        writer.write(row(f"q{q}", "baseline", 5, {"answer": (100, 10)}, {"answer": "local-x"}))
        writer.write(row(f"q{q}", "naive", 9, {"answer": (900, 10)}, {"answer": "local-x"}))
    writer.close()
    config = tmp_path / "prices.toml"
    config.write_text('[prices]\n"local-x" = { input = 2, output = 4 }\n')
    assert main(["report", str(tmp_path), "--config", str(config)]) == 0
    assert (tmp_path / "pareto.png").read_bytes()[:4] == b"\x89PNG"
    printed = capsys.readouterr().out
    assert "| A_f | naive | 9.00 | 2,700 | 0.00552 | yes | yes | – |" in printed
