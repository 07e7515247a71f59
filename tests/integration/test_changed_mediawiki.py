"""`freshrag build --style changed` against the real local MediaWiki: pages imported with several
dated revisions each (importDump keeps their timestamps) are read back through the API's
`prop=revisions` (`rvstart`, `rvdir`), and give the same changes as the dump they were imported
from: the field that changed becomes a question, the one vandalised and reverted and the
unchanged ones do not, each drop counted. A history dump that the wiki writes itself
(`dumpBackup.php --full`) is read back by the history reader to the same changes."""

from __future__ import annotations

import json
from datetime import date

import pytest

from freshrag.builders.sources.history import dump_histories
from freshrag.builders.styles.changes import Window, compare
from freshrag.cli.main import main
from freshrag.core.jsonl import read_jsonl
from tests.integration.mediawiki import LocalMediaWiki
from tests.support.changed_pages import CUTOFF, PAGES, write_pages
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import use_endpoint

pytestmark = pytest.mark.integration


def test_a_changed_facts_set_from_the_wiki_and_from_its_own_history_dump(tmp_path, monkeypatch):
    dump = write_pages(tmp_path / "pages.xml")
    out = tmp_path / "changed"
    with LocalMediaWiki(tmp_path / "wiki") as wiki, FakeOpenAIServer() as server:
        wiki.import_dump(dump, link_updates=False)
        use_endpoint(monkeypatch, server.base_url, "sk-changed")
        assert main(["build", "--wiki-api", wiki.api_url, "--n", str(len(PAGES)), "--cutoff",
                     CUTOFF, "--out", str(out), "--style", "changed", "--questions-from", "A_r",
                     "--questions-per-article", "3", "--no-cache", "--concurrency", "2"]) == 0
        written = wiki._php("maintenance/dumpBackup.php", "--full", "--quiet").stdout
    [question] = read_jsonl(out / "questions.jsonl")
    assert (question["title"], question["field"]) == ("Springfield", "population_total")
    assert (question["value_then"], question["value_now"]) == ("4,812", "5,020")
    assert question["then_revision"]["timestamp"] == "2023-06-29T10:00:00Z"
    assert question["now_revision"]["timestamp"] == "2024-03-01T10:00:00Z"
    funnel = json.loads((out / "manifest.json").read_text())["funnel"]["changed"]
    assert funnel["pages_dropped"] == {"infobox_unparsed": 1, "created_after_cutoff": 1}
    assert funnel["dropped"] == {"reverted": 1, "same_value": 1}
    from_api = {row["title"]: row for row in read_jsonl(out / "changes.jsonl")}

    history = tmp_path / "history.xml"
    history.write_text(written, encoding="utf-8")
    window = Window(date.fromisoformat(CUTOFF))
    from_dump = {title: compare(title, revisions, window) for title, revisions in
                 dump_histories(history, {page.title for page in PAGES})}
    assert set(from_dump) == set(from_api)
    for title, row in from_dump.items():
        assert row["dropped"] == from_api[title]["dropped"], title
        assert [_fact(field) for field in row["changed"]] == \
            [_fact(field) for field in from_api[title]["changed"]], title


def _fact(field: dict) -> tuple:
    return (field["field"], field["value_then"], field["value_now"], field["dropped"],
            field["then_revision"]["timestamp"], field["now_revision"]["timestamp"])
