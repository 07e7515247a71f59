"""`freshrag run --dry-run` and `--max-cost` against the fake OpenAI-compatible server."""

import json

import pytest

from freshrag.cli.main import main
from freshrag.core.config import load_settings
from freshrag.core.samples import read_samples
from freshrag.cost.budget import Budget, BudgetExceeded
from freshrag.llm.tokens import count_messages
from tests import WIKIRAG
from tests.support.builds import DUMP_ARTICLES, build
from tests.support.costs import PRICE, long_article, table
from tests.support.datasets import write_dataset
from tests.support.markdown import table_rows
from tests.support.wikidump import article_pages, write_dump

CAP = 0.006  # room for a few pairs: each call reserves its max_tokens, about $0.004 an answer


def run(tmp_path, systems, *extra, out="run"):
    data = tmp_path / "data"
    write_dataset(data, content=long_article, prices=PRICE)
    return main(["run", "--dataset", str(data), "--systems", systems, "--out",
                 str(tmp_path / out), "--config", str(data / "freshrag.toml"), *extra])


def test_dry_run_makes_no_call_and_writes_nothing(tmp_path, fake, capsys):
    assert run(tmp_path, "baseline,oracle,naive,boolean,advanced,hyde", "--dry-run") == 0
    assert fake.calls == 0 and fake.embedding_calls == 0
    assert not (tmp_path / "run").exists()
    rows = table(capsys.readouterr().out)
    assert set(rows) >= {"answer", "decision", "judge", "**total**"}


def test_dry_run_counts_the_requests_the_run_then_sends(tmp_path, fake, capsys):
    """Input tokens of the answer role: exactly tiktoken's count of the requests sent."""
    assert run(tmp_path, "baseline,oracle", "--dry-run", "--no-probe") == 0
    estimated = table(capsys.readouterr().out)["answer"]
    assert run(tmp_path, "baseline,oracle", "--no-probe") == 0
    sent = [r for r in fake.requests if "submit_grade" not in json.dumps(r.get("tools"))]
    assert estimated[1] == "6"  # calls
    assert int(estimated[4].replace(",", "")) == sum(
        count_messages(r["messages"], r["model"], r.get("tools")) for r in sent)
    tokens = int(estimated[4].replace(",", "")), int(estimated[5].replace(",", ""))
    assert estimated[6] == f"${(tokens[0] * PRICE[0] + tokens[1] * PRICE[1]) / 1e6:,.4f}"


def test_a_request_made_twice_is_counted_twice_only_when_the_run_keeps_no_cache(tmp_path, fake,
                                                                               capsys):
    # two questions of the same text about the same article: the same requests, made twice
    same = {"title": "Town 0", "question": "How many bridges does Town 0 have?"}
    data = tmp_path / "data"
    write_dataset(data, questions=[same, same])
    args = ["run", "--dataset", str(data), "--systems", "baseline", "--no-probe", "--out",
            str(tmp_path / "run")]
    assert main([*args, "--dry-run"]) == 0
    cached_out = capsys.readouterr().out
    cached = table(cached_out)
    assert main([*args, "--dry-run", "--no-cache"]) == 0
    uncached = table(capsys.readouterr().out)
    assert main([*args, "--no-cache"]) == 0  # sends each
    assert fake.calls == 4
    # with a cache the second of each is a repeat, sent once, then read from the cache the run
    # fills (not "from cache": the cache holds nothing yet); without one, sent again
    assert [cached[role][1:4] for role in ("answer", "judge")] == [["1", "0", "1"]] * 2
    assert [uncached[role][1:4] for role in ("answer", "judge")] == [["2", "0", "0"]] * 2
    # per system: baseline's answer and grade of the first question, repeated by the second
    assert table(cached_out, 1)["baseline"][:3] == ["2", "0", "2"]


def test_the_dry_run_breaks_calls_and_dollars_down_by_system(tmp_path, fake, capsys):
    assert run(tmp_path, "baseline,oracle", "--dry-run") == 0
    out = capsys.readouterr().out
    roles, systems = table(out), table(out, 1)
    assert list(systems) == ["judge probes", "baseline", "oracle"]
    assert sum(int(row[0]) for row in systems.values()) == sum(
        int(roles[role][1]) for role in ("answer", "judge"))
    assert sum(dollars(row[5])[0] for row in systems.values()) == pytest.approx(
        dollars(roles["**total**"][6])[0], abs=2e-4)  # each rounded to 4 places
    assert run(tmp_path, "baseline,advanced", "--dry-run", "--no-probe") == 0
    systems = table(capsys.readouterr().out, 1)
    # advanced's first answer is baseline's request: a call where baseline's pair makes it
    # first, a repeat for advanced (3 questions)
    assert systems["baseline"][:3] == ["6", "0", "0"]
    assert systems["advanced"][2].startswith("3")


def test_a_system_that_decides_gets_a_range_and_batch_prices_are_halved(tmp_path, fake, capsys):
    assert run(tmp_path, "advanced", "--dry-run", "--no-probe") == 0
    live = table(capsys.readouterr().out)
    assert live["answer"][1] == "0–3"  # answers again with chunks only if it decides to
    assert live["decision"][1] == "6"  # first answer and the forced decision, always
    assert run(tmp_path, "advanced", "--dry-run", "--no-probe", "--batch") == 0
    batch = table(capsys.readouterr().out)
    for role in ("decision", "judge"):  # each end of a range (the judge's reason is optional)
        halved, full = dollars(batch[role][6]), dollars(live[role][6])
        assert halved == pytest.approx([end / 2 for end in full], abs=1e-4)


def dollars(cell: str) -> list[float]:
    """`$0.0158` as [0.0158, 0.0158]; a range `$0.0079–$0.0080` as its two ends."""
    ends = [float(end.strip().strip("$")) for end in cell.split("–")]
    return ends * 2 if len(ends) == 1 else ends


def test_dry_run_after_a_run_counts_its_calls_as_cached(tmp_path, fake, capsys):
    assert run(tmp_path, "baseline", "--no-probe") == 0
    capsys.readouterr()
    assert run(tmp_path, "baseline", "--dry-run", "--no-probe", out="again") == 0
    rows = table(capsys.readouterr().out)
    assert rows["answer"][1:4] == ["0", "3", "0"]  # calls, from cache, repeats
    assert rows["**total**"][6] == "$0.0000"


def test_max_cost_stops_the_run_resumably_and_says_so(tmp_path, fake, capsys):
    assert run(tmp_path, "baseline,oracle", "--no-probe", "--concurrency", "1",
               "--max-cost", str(CAP)) == 3
    out = capsys.readouterr().out
    assert "CAPPED" in out
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["capped"]["capped"] and manifest["capped"]["spent"] <= CAP
    done = read_samples(tmp_path / "run" / "samples.jsonl")
    assert 0 < len(done) < 6
    calls_before = fake.calls
    assert main(["report", str(tmp_path / "run")]) == 0
    assert f"CAPPED by --max-cost ${CAP:,.4f}" in capsys.readouterr().out
    # serial: two pairs in flight at once may send one identical judge request both (the echo
    # answers of baseline and oracle are the same text) before either reply is cached
    assert run(tmp_path, "baseline,oracle", "--no-probe", "--concurrency", "1") == 0
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert len(rows) == 6 and all(r["status"] == "ok" for r in rows)
    # no request sent twice: neither a finished pair's nor one a capped pair made (cached)
    assert fake.calls > calls_before
    assert fake.calls == len({json.dumps(r, sort_keys=True) for r in fake.requests})
    assert "capped" not in json.loads((tmp_path / "run" / "manifest.json").read_text())


def test_max_cost_needs_a_price_for_every_role(tmp_path, fake, capsys):
    data = tmp_path / "data"
    write_dataset(data, content=long_article, prices=PRICE)
    assert main(["run", "--dataset", str(data), "--out", str(tmp_path / "run"),
                 "--max-cost", "1"]) == 2
    assert "--max-cost needs the price of the answer role's model 'fake-model'" in \
        capsys.readouterr().err
    assert fake.calls == 0


REQUEST = {"model": "fake-model", "messages": [{"role": "user", "content": "hi " * 100}],
           "max_tokens": 100}


@pytest.mark.parametrize("cap, spent, in_flight, refused", [
    pytest.param(1.0, 0.0, 0.0, False, id="room"),
    pytest.param(1.0, 0.9995, 0.0, True, id="spent-leaves-no-room"),
    pytest.param(1.0, 0.5, 0.4996, True, id="in-flight-counts"),
    pytest.param(1.0, 0.5, 0.498, False, id="just-fits"),
])
def test_budget_refuses_a_call_that_would_pass_the_cap(monkeypatch, cap, spent, in_flight,
                                                       refused):
    monkeypatch.setenv("FRESHRAG_MODEL", "fake-model")
    budget = Budget(cap, {"fake-model": PRICE}, load_settings(None), ("answer",))
    # the call's estimate: its input tokens and max_tokens at the price, here $0.000_x
    estimate = budget.estimate("answer", REQUEST)
    assert estimate == pytest.approx(
        (count_messages(REQUEST["messages"], "fake-model") * 2.0 + 100 * 8.0) / 1e6)
    budget.spent, budget.in_flight = spent, in_flight
    if refused:
        with pytest.raises(BudgetExceeded):
            budget.reserve("answer", REQUEST)
        assert budget.in_flight == in_flight
    else:
        ticket = budget.reserve("answer", REQUEST)
        budget.settle(ticket, {"usage": {"input": 1000, "output": 10}})
        assert budget.in_flight == pytest.approx(in_flight)
        assert budget.spent == pytest.approx(spent + (1000 * 2.0 + 10 * 8.0) / 1e6)


def test_build_dry_run_counts_the_builder_calls_and_makes_none(tmp_path, fake, capsys):
    wiki = write_dump(tmp_path / "wiki.xml.bz2",
                      list(article_pages(WIKIRAG / "articles.jsonl", DUMP_ARTICLES)))
    assert build(tmp_path, wiki, "--dry-run") == 2  # A_d not built: nothing to count yet
    assert "build --stage A_r and --stage A_d first" in capsys.readouterr().err
    assert build(tmp_path, wiki, "--stage", "A_r") == 0 and build(tmp_path, wiki, "--stage", "A_d") == 0
    n_d = len((tmp_path / "dataset" / "A_d.txt").read_text().splitlines())
    capsys.readouterr()
    assert build(tmp_path, wiki, "--dry-run") == 0
    builder = table(capsys.readouterr().out)["builder"]
    # every A_d article classified; a question for none of them (all "before") or all of them
    assert builder[1] == f"{n_d}–{2 * n_d}"
    assert fake.calls == 0
    assert build(tmp_path, wiki) == 0  # the fake says "after the cutoff" to every article
    assert fake.calls == 2 * n_d
    capsys.readouterr()
    assert build(tmp_path, wiki, "--dry-run") == 0  # the build is done: no table of nothing
    out = capsys.readouterr().out
    assert "none left to call a model for: the work is done" in out and "| role" not in out
    assert fake.calls == 2 * n_d


@pytest.mark.parametrize("extra", [
    pytest.param(["--control", "2", "--needs", "needs.txt"], id="control-with-needs"),
])
def test_build_dry_run_refuses_the_stages_it_cannot_count(tmp_path, fake, capsys, extra):
    wiki = write_dump(tmp_path / "wiki.xml.bz2",
                      list(article_pages(WIKIRAG / "articles.jsonl", DUMP_ARTICLES)))
    (tmp_path / "needs.txt").write_text("Results of local elections\n")
    extra = [str(tmp_path / word) if word == "needs.txt" else word for word in extra]
    assert build(tmp_path, wiki, "--dry-run", *extra) == 2
    err = capsys.readouterr().err
    assert "cannot count the control questions of a --needs build" in err and extra[0] in err
    assert fake.calls == 0 and not (tmp_path / "dataset").exists()


def test_the_estimate_table_escapes_a_model_s_name():
    from freshrag.cost.estimate import render

    pair = [1, 1]
    result = {"jobs": 1, "batch": False, "rows": [
        {"role": "answer", "model": "my|<model>", "calls": pair, "cached_calls": [0, 0], "repeated_calls": [0, 0],
         "input_tokens": pair, "output_tokens": pair, "usd": [0.5, 0.5], "tokenizer": None}]}
    header, row, total = table_rows(render(result))
    assert row[:2] == ["answer", "my|<model>"] and len(row) == len(header) == len(total) == 9
    assert total[0] == "**total**" and total[7] == "$0.5000"
    assert "<model>" not in render(result)
