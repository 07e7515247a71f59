"""`freshrag cutoff` end to end on the fake server: a model that knows only the articles created
before a month, over a synthetic dataset of 24 months, is found to fall at that month; the run
resumes without calls, a dry run makes none, and bad inputs are named in one line."""

from __future__ import annotations

import json

import pytest

from freshrag.cli.main import main
from freshrag.reporting.cutoff import month_range
from tests.support.costs import PRICE
from tests.support.cutoff_model import DONT_KNOW, QUESTION, KnowsBefore, fact_sentence
from tests.support.datasets import write_dataset
from tests.support.fake_batches import FakeBatches

MONTHS = month_range("2022-01", "2023-12")
FALL = "2023-02"  # the first month the model does not know
PER_MONTH = 3


def monthly_dataset(directory, dated=True):
    """Three towns created in each of 24 months, each with its registry code; their codes."""
    articles, questions, codes = [], [], {}
    for m, month in enumerate(MONTHS):
        for k in range(PER_MONTH):
            title, code = f"Town {month} {k}", f"RC-{m * PER_MONTH + k:04d}"
            codes[title] = (month, code)
            articles.append({"title": title, "created": f"{month}-1{k}T08:00:00Z" if dated
                             else None, "content": f"{title} is a town. {fact_sentence(code)}"})
            questions.append({"title": title, "question": QUESTION.format(title=title)})
    write_dataset(directory, articles=articles, questions=questions)
    return codes


@pytest.fixture
def model(fake_server, tmp_path):
    codes = monthly_dataset(tmp_path / "data")
    return fake_server(reply=KnowsBefore({title: code for title, (month, code) in codes.items()
                                          if month < FALL}))


def cutoff(tmp_path, *extra):
    return main(["cutoff", "--dataset", str(tmp_path / "data"), "--out", str(tmp_path / "run"),
                 "--concurrency", "4", "--no-cache", *extra])


def test_the_month_the_model_stops_knowing_is_found(tmp_path, model, capsys):
    assert cutoff(tmp_path, "--stated-cutoff", "2022-10-31") == 0
    said = capsys.readouterr().out
    document = json.loads((tmp_path / "run" / "cutoff.json").read_text())
    assert document["fall"]["found"] and document["fall"]["month"] == FALL
    low, high = document["fall"]["interval"]
    assert low <= FALL <= high
    assert [row["month"] for row in document["months"]] == MONTHS
    for row in document["months"]:
        known = row["month"] < FALL
        assert row["closed_book"]["n"] == row["open_book"]["n"] == PER_MONTH
        assert row["closed_book"]["mean"] == (5 if known else 1)
        assert row["closed_book"]["well_share"] == (1 if known else 0)
        assert row["open_book"]["mean"] == 5
    assert document["stated_cutoff"]["falls_from"] == "2022-11"
    assert f"falls from {FALL}" in said and "the estimate is 3 months later" in said
    assert (tmp_path / "run" / "cutoff.md").read_text() in said
    assert (tmp_path / "run" / "cutoff.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["systems"] == ["baseline", "oracle"]


def test_the_stated_cutoff_defaults_to_the_knowledge_cutoff(tmp_path, model, capsys):
    assert cutoff(tmp_path, "--knowledge-cutoff", "2023-01-31") == 0
    document = json.loads((tmp_path / "run" / "cutoff.json").read_text())
    assert document["stated_cutoff"] == {"date": "2023-01-31", "from": "--knowledge-cutoff",
                                         "falls_from": FALL}
    assert "the month estimated" in capsys.readouterr().out


def test_running_again_resumes_without_a_call(tmp_path, model, capsys):
    assert cutoff(tmp_path) == 0
    calls = model.calls
    assert calls > 0
    first = (tmp_path / "run" / "cutoff.json").read_text()
    assert cutoff(tmp_path) == 0
    assert model.calls == calls
    assert (tmp_path / "run" / "cutoff.json").read_text() == first


def test_a_dry_run_makes_no_call_and_writes_no_estimate(tmp_path, model, capsys):
    assert cutoff(tmp_path, "--dry-run") == 0
    assert model.calls == 0
    assert not (tmp_path / "run" / "cutoff.json").exists()
    answer_calls = 2 * len(MONTHS) * PER_MONTH  # each question closed and open book
    assert f"| answer | fake-model | {answer_calls} | 0 |" in capsys.readouterr().out


def test_a_dataset_without_dates_is_named_before_any_call(tmp_path, fake, capsys):
    monthly_dataset(tmp_path / "data", dated=False)
    assert cutoff(tmp_path) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'data' / 'articles.jsonl'}: no article has a `created` date" in err
    assert len(err.strip().splitlines()) == 1 and fake.calls == 0


def test_a_run_directory_of_other_systems_is_refused(tmp_path, model, capsys):
    assert main(["run", "--dataset", str(tmp_path / "data"), "--out", str(tmp_path / "run"),
                 "--systems", "baseline,naive", "--limit", "2", "--no-probe", "--no-cache",
                 "--index-dir", str(tmp_path / "index")]) == 0
    calls = model.calls
    capsys.readouterr()
    assert cutoff(tmp_path) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'run'}: holds a run of other systems (naive)" in err
    assert model.calls == calls and not (tmp_path / "run" / "cutoff.json").exists()


def test_unscored_answers_are_counted_and_left_out(tmp_path, fake_server, capsys):
    codes = monthly_dataset(tmp_path / "data")
    known = KnowsBefore({title: code for title, (month, code) in codes.items() if month < FALL})

    def garbles_one(request):  # the judge gives no grade for one town's closed-book answer
        user = request["messages"][-1]["content"]
        if request.get("tool_choice") not in (None, "auto") and "Town 2023-05 1?" in user \
                and DONT_KNOW in user.split("Wikipedia article:")[0]:
            return {"content": "fine"}
        return known(request)

    server = fake_server(reply=garbles_one)
    assert cutoff(tmp_path, "--no-probe") == 0
    document = json.loads((tmp_path / "run" / "cutoff.json").read_text())
    assert document["questions"]["left_out"] == {"baseline": {"unscored": 1}, "oracle": {}}
    may = next(row for row in document["months"] if row["month"] == "2023-05")
    assert may["closed_book"]["n"] == PER_MONTH - 1 and may["open_book"]["n"] == PER_MONTH
    assert "baseline: 1 unscored answer left out" in capsys.readouterr().out
    assert document["fall"]["month"] == FALL and server.calls > 0


def test_a_cap_stops_the_run_and_the_estimate_says_it_covers_the_finished_pairs(
        tmp_path, model, capsys):
    config = tmp_path / "freshrag.toml"
    config.write_text(f'[prices]\n"fake-model" = {{ input = {PRICE[0]}, output = {PRICE[1]} }}\n')
    args = ("--config", str(config), "--no-probe", "--concurrency", "1")
    assert cutoff(tmp_path, *args, "--max-cost", "0.02") == 3
    said = capsys.readouterr().out
    assert "CAPPED" in said and "the estimate covers the finished pairs only" in said
    partial = json.loads((tmp_path / "run" / "cutoff.json").read_text())
    assert 0 < partial["questions"]["asked"] < len(MONTHS) * PER_MONTH
    assert cutoff(tmp_path, *args) == 0  # the rest, resumed
    document = json.loads((tmp_path / "run" / "cutoff.json").read_text())
    assert document["questions"]["asked"] == len(MONTHS) * PER_MONTH
    assert document["fall"]["month"] == FALL


def test_a_batch_run_answers_every_pair_through_the_batch_api(tmp_path, fake_server, capsys):
    codes = monthly_dataset(tmp_path / "data")
    batches = FakeBatches(polls=1)
    server = fake_server(reply=KnowsBefore({title: code for title, (month, code) in codes.items()
                                            if month < FALL}), batches=batches)
    assert main(["cutoff", "--dataset", str(tmp_path / "data"), "--out", str(tmp_path / "run"),
                 "--batch", "--batch-poll", "0.05", "--no-probe"]) == 0
    assert server.calls == 0 and batches.submitted  # every chat call came from a batch
    document = json.loads((tmp_path / "run" / "cutoff.json").read_text())
    assert document["fall"]["month"] == FALL


@pytest.mark.parametrize("option", ["--text-weight", "--top-k", "--chunk-size", "--qdrant-url"])
def test_retrieval_index_options_are_not_cutoff_options(tmp_path, capsys, option):
    """baseline and oracle retrieve nothing: `cutoff` neither shows nor takes the index's options,
    which `run` shows and takes."""
    with pytest.raises(SystemExit) as usage:
        main(["cutoff", "--dataset", str(tmp_path), option, "1"])
    assert usage.value.code == 2
    assert f"unrecognized arguments: {option}" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["cutoff", "--help"])
    assert option not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert option in capsys.readouterr().out
