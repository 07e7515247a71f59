"""`freshrag build --style multihop` against the real local MediaWiki: the links come from the
wiki's link table through its API (`prop=links`, redirects through `prop=redirects`), and each
bridge question of the set names two pages that really link, as the API itself says when asked
afterwards (`generator=links` with `redirects`). The models are the fake server, scripted: a
question through the first article, an answer that says which articles it was given, a judge that
rates an answer 5 when it was given both gold articles."""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request
from typing import Any

import pytest

from freshrag.cli.main import main
from freshrag.core.jsonl import read_jsonl
from tests import WIKIRAG
from tests.integration.mediawiki import LocalMediaWiki, linked_pages
from tests.support.fake_openai_server import FakeOpenAIServer, default_reply
from tests.support.fakes import use_endpoint
from tests.support.wikidump import write_dump

pytestmark = pytest.mark.integration

CUTOFF = "2021-09-30"


def script(request: dict[str, Any]) -> dict[str, Any]:
    tools = [tool["function"]["name"] for tool in request.get("tools") or []]
    system, user = request["messages"][0]["content"], request["messages"][-1]["content"]
    if "write_bridge" in tools:
        first = re.search(r"First article: (.*)", user).group(1)
        second = re.search(r"Second article: (.*)", user).group(1)
        question = f"Through [{first}][{second}]: what is the place it names known for?"
        return {"tool_call": {"name": "write_bridge", "arguments": json.dumps(
            {"question": question.replace(second, "the other"), "answer": "its visitors"})}}
    if "check_answer" in tools:
        first = re.search(r"Question: Through \[(.*?)\]", user).group(1)
        seen = re.search(r"Seen: (.*)", user).group(1).split(" | ")
        return {"tool_call": {"name": "check_answer", "arguments": json.dumps(
            {"truthfulness": 5 if len(seen) == 2 and first in seen else 1})}}
    if not tools:
        return {"content": "Seen: " + " | ".join(re.findall(r"^Title: (.*)$", system, re.M))}
    return default_reply(request)


def linked_from(api_url: str, title: str) -> set[str]:
    """The pages `title` links to, redirects resolved, as the wiki's API says."""
    query = urllib.parse.urlencode({"action": "query", "generator": "links", "titles": title,
                                    "gplnamespace": 0, "gpllimit": "max", "redirects": 1,
                                    "format": "json", "formatversion": 2})
    with urllib.request.urlopen(f"{api_url}?{query}", timeout=30) as reply:
        pages = json.loads(reply.read()).get("query", {}).get("pages", [])
    return {page["title"] for page in pages}


def test_a_two_hop_set_from_the_wiki_names_pages_that_really_link(tmp_path, monkeypatch):
    pages, targets = linked_pages(WIKIRAG / "articles.jsonl")
    out = tmp_path / "dataset"
    with LocalMediaWiki(tmp_path / "wiki") as wiki, FakeOpenAIServer(reply=script) as server:
        # link updates on: prop=links reads the pagelinks table that they fill
        wiki.import_dump(write_dump(tmp_path / "linked.xml", pages))
        use_endpoint(monkeypatch, server.base_url, "sk-multihop")
        assert main(["build", "--wiki-api", wiki.api_url, "--n", str(len(targets)), "--cutoff",
                     CUTOFF, "--out", str(out), "--style", "multihop", "--multihop", "bridge",
                     "--questions-from", "A_d", "--no-cache", "--concurrency", "2"]) == 0
        links = {row["title"]: [link["title"] for link in row["links"]]
                 for row in read_jsonl(out / "links.jsonl")}
        assert {title: [t for t in found if t in targets] for title, found in links.items()} \
            == {title: [target] for title, target in targets.items()}  # the redirect resolved
        questions = list(read_jsonl(out / "questions.jsonl"))
        assert len(questions) == len(targets)
        for question in questions:
            first, second = question["gold_titles"]
            assert question["multihop"] == "bridge" and question["title"] == first
            assert second == targets[first] and second in linked_from(wiki.api_url, first)
    funnel = json.loads((out / "manifest.json").read_text())["funnel"]["multihop"]
    assert funnel["bridge"]["kept"] == len(targets) and funnel["bridge"]["dropped"] == {}
