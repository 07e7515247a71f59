"""A living set against the real local MediaWiki (docs/living.md): pages created across 24 months,
with the creation log a wiki keeps (imported as `<logitem>`s), sampled N a month by `freshrag
build --created ... --per-month N`; then pages created later are imported and `freshrag build
--since` makes the second version from exactly them; `freshrag datasets` lists both in lineage
order. The builder role is the scripted fake server: every article fresh, a question naming it.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone

import pytest

from freshrag.cli.main import main
from freshrag.core.jsonl import read_jsonl
from tests.integration.mediawiki import LocalMediaWiki
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.wikidump import creation_log, dated_pages, write_dump

pytestmark = pytest.mark.integration

PER_MONTH = 2
FIRST_MONTHS = [f"{year}-{month:02d}" for year in (2023, 2024) for month in range(1, 13)]
DAYS = (3, 10, 17, 24, 28)
LATER = ["2025-01-05T08:00:00Z", "2025-01-20T08:00:00Z", "2025-02-11T08:00:00Z",
         "2025-03-02T08:00:00Z", "2025-03-30T08:00:00Z"]


def moment(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone(timezone.utc)


def first_timestamps() -> list[str]:
    """3 to 5 creations a month (the last month 3, so that at most 2 of its pages can be newer
    than the first version's newest article, which a second version of 2 a month takes whole)."""
    stamps = []
    for i, month in enumerate(FIRST_MONTHS):
        stamps += [f"{month}-{day:02d}T12:00:00Z" for day in DAYS[:5 - i % 3]]
    return stamps


def script(request: dict) -> dict:
    """Every article judged mostly after the cutoff; a question naming the article."""
    user = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
    title = user.splitlines()[0].removeprefix("Title: ")
    if request.get("tool_choice"):
        return {"tool_call": {"name": "report_recency",
                              "arguments": '{"mostly_after_cutoff": true}'}}
    return {"content": f"What grows around {title}?"}


@pytest.fixture
def builder(monkeypatch):
    with FakeOpenAIServer(reply=script) as server:
        monkeypatch.setenv("FRESHRAG_BUILDER_BASE_URL", server.base_url)
        monkeypatch.setenv("FRESHRAG_BUILDER_API_KEY", "sk-not-written")
        monkeypatch.setenv("FRESHRAG_BUILDER_MODEL", "scripted-builder")
        yield server


def test_a_dated_set_then_its_next_version(tmp_path, builder, capsys):
    first_pages = dated_pages(first_timestamps())
    later_pages = dated_pages(LATER, first_id=len(first_pages) + 1)
    created = {page.title: page.revisions[0].timestamp for page in first_pages + later_pages}
    with LocalMediaWiki(tmp_path / "wiki") as wiki:
        wiki.import_dump(write_dump(tmp_path / "first.xml", first_pages,
                                    log_items=creation_log(first_pages)), link_updates=False)
        first = tmp_path / "sets" / "wiki"
        assert main(["build", "--wiki-api", wiki.api_url, "--created", "2023-01:2024-12",
                     "--per-month", str(PER_MONTH), "--out", str(first), "--no-cache"]) == 0
        manifest = json.loads((first / "manifest.json").read_text())
        articles = list(read_jsonl(first / "articles.jsonl"))
        questions = list(read_jsonl(first / "questions.jsonl"))

        # N a month, each created in the month it is filed under, as the wiki says
        assert Counter(row["month"] for row in articles) == {m: PER_MONTH for m in FIRST_MONTHS}
        assert all(row["created"] and moment(row["created"]) == moment(created[row["title"]])
                   and row["created"].startswith(row["month"]) for row in articles)
        assert {q["title"]: q["month"] for q in questions} == {a["title"]: a["month"]
                                                              for a in articles}
        # the funnel per month adds up to the funnel
        funnel, months = manifest["funnel"], manifest["funnel"]["months"]
        assert sorted(months) == FIRST_MONTHS
        for key in ("sampled", "n_r", "n_d", "n_f", "questions"):
            assert sum(month.get(key, 0) for month in months.values()) == funnel[key], key
        assert manifest["settings"]["created"] == "2023-01:2024-12"
        assert manifest["settings"]["cutoff"] == "2022-12-31"  # the day before the range
        version = manifest["version"]
        assert version["number"] == 1 and version["parent"] is None
        assert len(version["id"]) == 12
        stamps = sorted(row["created"] for row in articles)
        assert (version["created"]["first"], version["created"]["last"]) == (stamps[0], stamps[-1])

        # pages created later, then the next version from exactly those after the newest article
        wiki.import_dump(write_dump(tmp_path / "later.xml", later_pages,
                                    log_items=creation_log(later_pages, first_id=1000)),
                         link_updates=False)
        assert main(["build", "--since", str(first), "--no-cache"]) == 0
    second = tmp_path / "sets" / "wiki-v2"
    newest = moment(version["created"]["last"])
    expected = {title for title, stamp in created.items() if moment(stamp) > newest}
    assert expected >= {page.title for page in later_pages}
    assert {row["title"] for row in read_jsonl(second / "articles.jsonl")} == expected
    next_version = json.loads((second / "manifest.json").read_text())["version"]
    assert next_version["number"] == 2
    assert next_version["parent"] == {"path": str(first), "id": version["id"]}

    capsys.readouterr()
    assert main(["datasets", str(tmp_path / "sets"), "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(row["path"], row["number"], row["id"]) for row in listed] == [
        ("wiki", 1, version["id"]), ("wiki-v2", 2, next_version["id"])]
    assert [row["articles"] for row in listed] == [len(articles), len(expected)]
    assert main(["datasets", str(tmp_path / "sets")]) == 0
    table = capsys.readouterr().out
    assert f"v2 {next_version['id']}" in table and "wiki-v2" in table
