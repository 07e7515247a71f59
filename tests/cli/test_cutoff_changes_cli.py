"""`freshrag cutoff` from changed facts on the fake server (docs/cutoff.md#from-changed-facts): a
model that gives the value now of the changes made before a month and the value then of those
after is found to fall at that month; beside new articles each signal is its own, named; a set
without changed facts asked for the change signal is named in one line before any call; running
again resumes without a call."""

from __future__ import annotations

import json

from freshrag.cli.main import main
from freshrag.reporting.cutoff import month_range
from tests.support.cutoff_model import (
    POPULATION,
    QUESTION,
    SawChangesBefore,
    fact_sentence,
    population_sentence,
)
from tests.support.datasets import write_dataset

MONTHS = month_range("2022-01", "2023-12")
CHANGES_FALL = "2023-04"  # the first month whose changes the model did not see
ARTICLES_FALL = "2022-09"  # the first month whose new articles it does not know
PER_MONTH = 3


def changed_facts(skip=()):
    """Three towns whose population changed in each month but `skip`: articles, questions and
    (value then, value now) by town."""
    articles, questions, values = [], [], {}
    for m, month in enumerate(MONTHS):
        for k in range(PER_MONTH if month not in skip else 0):
            title = f"Old town {month} {k}"
            then, now = str(1000 + m * 10 + k), str(5000 + m * 10 + k)
            values[title] = (then, now)
            articles.append({"title": title, "created": "2015-01-01T00:00:00Z",
                             "content": f"{title} is a town. {population_sentence(now)}"})
            questions.append({"title": title, "question": POPULATION.format(title=title),
                              "reference": now, "value_then": then, "value_now": now,
                              "field": "population_total", "change": "slow",
                              "changed_at": f"{month}-1{k}T08:00:00Z"})
    return articles, questions, values


def new_articles():
    articles, questions, known = [], [], {}
    for m, month in enumerate(MONTHS):
        for k in range(PER_MONTH):
            title, code = f"New town {month} {k}", f"RC-{m * PER_MONTH + k:04d}"
            if month < ARTICLES_FALL:
                known[title] = code
            articles.append({"title": title, "created": f"{month}-1{k}T08:00:00Z",
                             "content": f"{title} is a town. {fact_sentence(code)}"})
            questions.append({"title": title, "question": QUESTION.format(title=title)})
    return articles, questions, known


def model_for(values, known=None):
    seen = {title for title in values if title.split()[2] < CHANGES_FALL}
    return SawChangesBefore(known or {}, values, seen)


def cutoff(tmp_path, *extra):
    return main(["cutoff", "--dataset", str(tmp_path / "data"), "--out", str(tmp_path / "run"),
                 "--concurrency", "4", "--no-cache", "--no-probe", *extra])


def test_the_month_from_which_the_model_gives_the_value_then_is_found(tmp_path, fake_server,
                                                                      capsys):
    articles, questions, values = changed_facts()
    write_dataset(tmp_path / "data", articles=articles, questions=questions)
    server = fake_server(reply=model_for(values))
    assert cutoff(tmp_path, "--stated-cutoff", "2023-06-30") == 0
    said = capsys.readouterr().out
    document = json.loads((tmp_path / "run" / "cutoff.json").read_text())
    assert document["signals"] == ["changes"]
    changes = document["changes"]
    assert changes["fall"]["found"] and changes["fall"]["month"] == CHANGES_FALL
    assert changes["fall"]["level_before"] == 1 and changes["fall"]["level_after"] == 0
    for row in changes["months"]:
        saw = row["month"] < CHANGES_FALL
        closed = row["closed_book"]
        assert (closed["current"], closed["stale"]) == ((PER_MONTH, 0) if saw else (0, PER_MONTH))
        assert closed["mean"] == (1 if saw else 0)
        assert row["open_book"]["mean"] == 1  # the page as it is now gives the value now
    assert f"the share of current answers falls from {CHANGES_FALL}" in said
    assert "the estimate is 3 months earlier" in said
    assert (tmp_path / "run" / "cutoff.md").read_text() in said
    assert (tmp_path / "run" / "cutoff-changes.png").read_bytes()[:4] == b"\x89PNG"
    assert not (tmp_path / "run" / "cutoff.png").exists()
    # the staleness scorer, added to the run's, classed every answer by matching the values
    scored = [json.loads(line) for line in (tmp_path / "run" / "scores.jsonl").open()]
    assert len(scored) == 2 * len(MONTHS) * PER_MONTH
    assert {(row["scorer"], row["details"]["source"]) for row in scored} == {("staleness", "match")}
    calls, first = server.calls, (tmp_path / "run" / "cutoff.json").read_text()
    assert cutoff(tmp_path, "--stated-cutoff", "2023-06-30") == 0  # resumed: nothing to ask
    assert server.calls == calls and (tmp_path / "run" / "cutoff.json").read_text() == first


def test_beside_new_articles_both_signals_are_reported_each_named(tmp_path, fake_server,
                                                                  capsys):
    old, changed, values = changed_facts(skip=("2022-06", "2022-07", "2022-08"))
    new, asked, known = new_articles()
    write_dataset(tmp_path / "data", articles=old + new, questions=changed + asked)
    fake_server(reply=model_for(values, known))
    assert cutoff(tmp_path) == 0
    said = capsys.readouterr().out
    document = json.loads((tmp_path / "run" / "cutoff.json").read_text())
    assert document["signals"] == ["articles", "changes"]
    assert document["fall"]["month"] == ARTICLES_FALL
    assert document["questions"]["asked"] == len(asked)  # the changed facts are not articles'
    assert document["changes"]["fall"]["month"] == CHANGES_FALL
    assert document["changes"]["questions"]["asked"] == len(changed)
    assert "## From new articles" in said and "## From changed facts" in said
    assert "| 2022-06 to 2022-08 (3 months without changes) | 0 |" in said
    for figure in ("cutoff.png", "cutoff-changes.png"):
        assert (tmp_path / "run" / figure).read_bytes()[:4] == b"\x89PNG"


def test_a_set_without_changed_facts_asked_for_the_change_signal_is_named(tmp_path, fake,
                                                                         capsys):
    new, asked, _ = new_articles()
    write_dataset(tmp_path / "data", articles=new, questions=asked)
    assert cutoff(tmp_path, "--signal", "changes") == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'data' / 'questions.jsonl'}: no question of set 'data' is about a " \
           f"changed fact" in err
    assert len(err.strip().splitlines()) == 1 and fake.calls == 0
