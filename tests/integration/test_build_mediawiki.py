"""`freshrag build` against the real local MediaWiki, through the same code path as against
Wikipedia (mwclient for random titles and first revisions, wikipedia-api for the text): A_d holds
exactly the sampled articles the wiki says were created after the cutoff, the funnel adds up, and
the questions belong to their articles. The builder model is the fake OpenAI-compatible server
here (verdicts scripted per article, some garbled), and the real llama.cpp server in the last test.
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.request
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from builders.mediawiki import MediaWikiSource
from builders.pages import VANISHED
from builders.stages import SAMPLE, BuildConfig, sample_articles
from harness.cli import main
from harness.results import read_jsonl
from tests.fake_openai_server import FakeOpenAIServer
from tests.integration.mediawiki import SeededMediaWiki

pytestmark = pytest.mark.integration

CUTOFF = "2021-09-30"
END_OF_CUTOFF_DAY = datetime(2021, 10, 1, tzinfo=timezone.utc)


def moment(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


def scripted_verdict(request: dict) -> dict:
    """report_recency answered true, false or with garbage, by a hash of the article's text;
    any other request (a question) gets a question naming the article's first words."""
    user = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
    if request.get("tool_choice"):
        kind = int(hashlib.sha256(user.encode()).hexdigest(), 16) % 3
        arguments = {0: '{"mostly_after_cutoff": true}', 1: '{"mostly_after_cutoff": false}',
                     2: '{"mostly_after_cutoff": "perhaps"'}[kind]
        return {"tool_call": {"name": "report_recency", "arguments": arguments}}
    return {"content": f"What is said about {user.splitlines()[0][7:60]}?"}


@pytest.fixture
def fake_builder(monkeypatch):
    with FakeOpenAIServer(reply=scripted_verdict) as server:
        monkeypatch.setenv("FRESHRAG_BUILDER_BASE_URL", server.base_url)
        monkeypatch.setenv("FRESHRAG_BUILDER_API_KEY", "sk-not-written")
        monkeypatch.setenv("FRESHRAG_BUILDER_MODEL", "scripted-builder")
        yield server


def test_build_from_the_wiki(mediawiki: SeededMediaWiki, fake_builder, tmp_path, capsys):
    out = tmp_path / "dataset"
    assert main(["build", "--wiki-api", mediawiki.api_url, "--n", "80", "--cutoff", CUTOFF,
                 "--out", str(out), "--questions-from", "A_f", "--no-cache"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    funnel = manifest["funnel"]
    articles = {row["title"]: row for row in read_jsonl(out / "articles.jsonl")}
    a_r = (out / "A_r.txt").read_text().splitlines()
    a_d = (out / "A_d.txt").read_text().splitlines()
    a_f = (out / "A_f.txt").read_text().splitlines()

    # A_r: 80 articles of the wiki, never a redirect, disambiguation page or short page
    assert len(a_r) == 80 == funnel["n_r"] and set(a_r) == set(articles)
    assert set(a_r) <= set(mediawiki.articles)
    assert all(len(row["content"]) > 1000 for row in articles.values())
    assert funnel["sampled"] == funnel["n_r"] + sum(funnel["discarded_r"].values())

    # A_d: exactly the sampled articles whose first revision in the wiki is after the cutoff day
    created = {title: mediawiki.articles[title].revisions[0].timestamp for title in a_r}
    assert all(moment(articles[t]["created"]) == moment(created[t]) for t in a_r)
    assert set(a_d) == {t for t in a_r if moment(created[t]) >= END_OF_CUTOFF_DAY}
    assert 0 < len(a_d) < len(a_r)  # the sample holds both kinds
    assert funnel["n_r"] == funnel["n_d"] + sum(funnel["discarded_d"].values())

    # A_f: the scripted verdicts, the garbled ones counted as unknown
    verdicts = {row["title"]: row["verdict"] for row in read_jsonl(out / "recency.jsonl")}
    assert set(verdicts) == set(a_d)
    assert a_f == [t for t in a_d if verdicts[t] is True]
    unknown = sum(v == "unknown" for v in verdicts.values())
    assert unknown > 0 and funnel["discarded_f"].get("unknown_verdict", 0) == unknown
    assert funnel["n_d"] == funnel["n_f"] + sum(funnel["discarded_f"].values())

    # content is the wiki's latest revision; questions are tied to their articles
    for title in a_r:
        opening = mediawiki.articles[title].revisions[-1].text.split("\n")[0][:60]
        assert opening[:30] in articles[title]["content"], title
    questions = list(read_jsonl(out / "questions.jsonl"))
    assert sorted(q["title"] for q in questions) == sorted(a_f) and funnel["questions"] == len(a_f)
    for question in questions:
        assert question["revision_id"] == articles[question["title"]]["revision_id"]
        assert question["title"][:20] in question["question"]
    assert manifest["source"] == mediawiki.api_url
    assert "sk-not-written" not in (out / "manifest.json").read_text()


class VanishingSource(MediaWikiSource):
    """The wiki as it would be if a page were deleted between sampling and fetching: its title
    comes back from list=random, then it is gone."""

    def random_titles(self) -> list[str]:
        return ["Deleted while sampling", *super().random_titles()]


def test_a_page_gone_before_it_is_fetched_is_skipped_and_counted(mediawiki, tmp_path):
    config = BuildConfig(out=tmp_path / "dataset", cutoff=datetime(2021, 9, 30).date(), n=10)
    kept = sample_articles(VanishingSource(mediawiki.api_url, concurrency=2), config)
    assert len(kept) == 10 and "Deleted while sampling" not in kept
    discards = {row["title"]: row["discard"] for row in read_jsonl(config.out / SAMPLE)}
    assert discards["Deleted while sampling"] == VANISHED


def test_an_unreachable_wiki_is_named(tmp_path, capsys):
    url = "http://127.0.0.1:9/w/api.php"  # the discard port: nothing listens
    assert main(["build", "--wiki-api", url, "--n", "5", "--cutoff", CUTOFF,
                 "--out", str(tmp_path / "d")]) == 2
    assert url in capsys.readouterr().err


def test_build_with_the_real_local_model(mediawiki, tmp_path, monkeypatch):
    """The default builder: SmolLM2-135M on the embedded llama.cpp server. It is too small to
    judge recency well; what is checked is that every verdict is recorded (true, false or unknown,
    never a crash) and that its questions come out tied to their articles."""
    for role in ("BUILDER_", ""):
        for key in ("BASE_URL", "MODEL", "API_KEY"):
            monkeypatch.delenv(f"FRESHRAG_{role}{key}", raising=False)
    monkeypatch.chdir(tmp_path)  # no freshrag.toml here: the roles keep their local default
    out = tmp_path / "dataset"
    assert main(["build", "--wiki-api", mediawiki.api_url, "--n", "12", "--cutoff", CUTOFF,
                 "--out", str(out), "--questions-from", "A_d", "--concurrency", "2"]) == 0
    a_d = (out / "A_d.txt").read_text().splitlines()
    verdicts = list(read_jsonl(out / "recency.jsonl"))
    assert sorted(v["title"] for v in verdicts) == sorted(a_d)
    assert all(v["verdict"] in (True, False, "unknown") for v in verdicts)
    questions = list(read_jsonl(out / "questions.jsonl"))
    assert sorted(q["title"] for q in questions) == sorted(a_d)
    assert all(q["question"].strip() and q["generator"] for q in questions)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["models"]["builder"]["base_url"] == "local"


class RecordingProxy:
    """A reverse proxy in front of the wiki that records what every request carried."""

    def __init__(self, target: str):
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self._forward(None)

            def do_POST(self):
                self._forward(self.rfile.read(int(self.headers.get("Content-Length", 0))))

            def _forward(self, body):
                params = parse_qs(urlsplit(self.path).query)
                if body:
                    params.update(parse_qs(body.decode()))
                proxy.requests.append((self.headers.get("User-Agent", ""), params))
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                upstream = urllib.request.Request(target + self.path, data=body, headers=headers,
                                                  method=self.command)
                with urllib.request.urlopen(upstream, timeout=30) as answer:
                    data = answer.read()
                    self.send_response(answer.status)
                    for key in ("Content-Type", "Content-Encoding"):
                        if answer.headers.get(key):
                            self.send_header(key, answer.headers[key])
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_every_request_names_the_user_and_sends_maxlag(mediawiki, tmp_path):
    proxy = RecordingProxy(mediawiki.api_url[: -len("/api.php")])
    agent = "my-lab-bench/1.0 (me@example.org)"
    try:
        assert main(["build", "--wiki-api", f"{proxy.url}/api.php", "--n", "3", "--cutoff",
                     CUTOFF, "--out", str(tmp_path / "d"), "--stage", "A_r",
                     "--user-agent", agent, "--max-lag", "7"]) == 0
    finally:
        proxy.server.shutdown()
    assert len(proxy.requests) >= 1 + 1 + 3 * 2  # siteinfo, random titles, per page: info + text
    for user_agent, params in proxy.requests:
        assert user_agent.startswith(agent), user_agent
    # all but mwclient's own siteinfo request when it connects
    assert [params for _, params in proxy.requests if params.get("maxlag") != ["7"]] == [
        params for _, params in proxy.requests if "siteinfo" in params.get("meta", [""])[0]]
