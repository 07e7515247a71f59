"""`freshrag cutoff` on a dataset built by `freshrag build --created ... --per-month N` from the real
local MediaWiki (its creation log, docs/living.md): pages created across 24 months (a few a month,
invented text, each with a registry code of its own),
and a scripted model on the fake server that knows only the pages created before a chosen month
(but for every seventh page, which it knows or not the other way, as a real model would).
The estimate must find that month (within one) and its interval must hold it. The test's
figure and table go to results/artefacts/cutoff/, which docs/cutoff.md shows (the figure in the
README too)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from freshrag.cli.main import main
from freshrag.core.jsonl import read_jsonl
from freshrag.reporting.cutoff import CUTOFF_MD, CUTOFF_PNG, month_range, months_apart
from tests.integration.mediawiki import LocalMediaWiki
from tests.support.cutoff_model import QUESTION, KnowsBefore, fact_sentence
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.wikidump import DumpPage, Revision, creation_log, write_dump

pytestmark = pytest.mark.integration

ARTEFACTS = Path(__file__).resolve().parents[2] / "results" / "artefacts" / "cutoff"
MONTHS = month_range("2022-01", "2023-12")
PER_MONTH = 3
KNOWS_UNTIL = "2023-04"  # the model knows the pages created before this month, none after
STATED = "2023-08-31"  # what the model's maker would say: later than where its knowledge ends

WORDS = ("harbour mill ridge orchard ferry quarry lantern causeway granary beacon weir chapel "
         "market foundry meadow kiln tannery viaduct terrace cistern").split()


def invented_text(title: str, code: str, rng: random.Random) -> str:
    """Over 1,000 characters about an invented place, its registry code said once."""
    sentences = [f"{title} is an invented settlement used to test a benchmark.",
                 fact_sentence(code)]
    while sum(map(len, sentences)) < 1300:
        a, b, c = rng.sample(WORDS, 3)
        sentences.append(f"The {a} of {title} stands between the old {b} and the {c}, and "
                         f"visitors are told a story about it every {rng.randint(2, 40)} days.")
    return " ".join(sentences)


def wiki_pages() -> tuple[list[DumpPage], dict[str, tuple[str, str]]]:
    """The pages (one revision each, at its creation) and each title's (month, code)."""
    rng, pages, facts = random.Random(27), [], {}
    for m, month in enumerate(MONTHS):
        for k in range(PER_MONTH):
            number = m * PER_MONTH + k + 1
            title, code = f"Velmora Hamlet {number}", f"VH-{number:04d}"
            facts[title] = (month, code)
            created = f"{month}-{5 + 9 * k:02d}T10:00:00Z"
            pages.append(DumpPage(number, title, [Revision(2 * number, created,
                                                           invented_text(title, code, rng))]))
    return pages, facts


def builder(request: dict) -> dict:
    """The builder role: every article judged recent, every question asking its code."""
    user = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
    title = user.splitlines()[0][len("Title: "):]
    if request.get("tool_choice"):
        return {"tool_call": {"name": "report_recency",
                              "arguments": '{"mostly_after_cutoff": true}'}}
    return {"content": QUESTION.format(title=title)}


def test_the_cutoff_of_a_model_that_knows_the_wiki_until_a_month(tmp_path, monkeypatch, capsys):
    pages, facts = wiki_pages()
    known = {title: code for n, (title, (month, code)) in enumerate(facts.items())
             if (month < KNOWS_UNTIL) != (n % 7 == 3)}  # every 7th page the other way: noise
    data, run = tmp_path / "dataset", tmp_path / "run"
    with LocalMediaWiki(tmp_path / "wiki") as wiki, FakeOpenAIServer(reply=builder) as build_llm, \
            FakeOpenAIServer(reply=KnowsBefore(known)) as model:
        wiki.import_dump(write_dump(tmp_path / "pages.xml", pages, log_items=creation_log(pages)),
                         link_updates=False)
        for role, server in (("BUILDER_", build_llm), ("", model)):
            monkeypatch.setenv(f"FRESHRAG_{role}BASE_URL", server.base_url)
            monkeypatch.setenv(f"FRESHRAG_{role}API_KEY", "sk-not-written")
            monkeypatch.setenv(f"FRESHRAG_{role}MODEL", "scripted")
        assert main(["build", "--wiki-api", wiki.api_url, "--created",
                     f"{MONTHS[0]}:{MONTHS[-1]}", "--per-month", str(PER_MONTH), "--out", str(data),
                     "--no-cache"]) == 0
        built = {row["title"]: row for row in read_jsonl(data / "articles.jsonl")}
        assert set(built) == set(facts)  # every page, its creation from the wiki
        assert all(row["created"].startswith(facts[t][0]) for t, row in built.items())
        assert main(["cutoff", "--dataset", str(data), "--out", str(run), "--no-cache",
                     "--stated-cutoff", STATED, "--concurrency", "4"]) == 0
    said = capsys.readouterr().out
    document = json.loads((run / "cutoff.json").read_text())
    fall = document["fall"]
    assert fall["found"], fall
    assert abs(months_apart(fall["month"], KNOWS_UNTIL)) <= 1
    assert fall["interval"][0] <= KNOWS_UNTIL <= fall["interval"][1]
    assert [row["month"] for row in document["months"]] == MONTHS
    assert all(row["open_book"]["mean"] == 5 for row in document["months"])
    assert 1 < fall["level_before"] < 5 and 1 < fall["level_after"] < 5  # the noise was seen
    assert document["stated_cutoff"]["falls_from"] == "2023-09"
    assert f"falls from {fall['month']}" in said
    print(said)
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    for name in (CUTOFF_PNG, CUTOFF_MD):
        shutil.copyfile(run / name, ARTEFACTS / name)
