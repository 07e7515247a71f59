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
from collections import Counter
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from freshrag.builders.sources.mediawiki import MediaWikiSource
from freshrag.builders.sources.pages import DISAMBIGUATION, REDIRECT, TOO_SHORT, VANISHED
from freshrag.builders.stages import SAMPLE, BuildConfig, sample_articles
from freshrag.cli.main import main
from freshrag.core.jsonl import read_jsonl
from tests.integration.mediawiki import SeededMediaWiki
from tests.support.fake_openai_server import FakeOpenAIServer

pytestmark = pytest.mark.integration

CUTOFF = "2021-09-30"
END_OF_CUTOFF_DAY = datetime(2021, 10, 1, tzinfo=timezone.utc)


def moment(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


VERDICTS = {0: '{"mostly_after_cutoff": true}', 1: '{"mostly_after_cutoff": false}',
            2: '{"mostly_after_cutoff": "perhaps"'}  # the last one garbled
MEANING = {0: True, 1: False, 2: "unknown"}  # what the builder must make of each


class ScriptedBuilder:
    """report_recency answered true, false or with garbage, by a hash of the article's text,
    each verdict remembered by title (the user message starts `Title: ...`); any other request
    (a question) gets a question naming the article's first 53 characters of title."""

    def __init__(self):
        self.verdicts: dict[str, list[bool | str]] = {}

    def __call__(self, request: dict) -> dict:
        user = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
        title = user.splitlines()[0][len("Title: "):]
        if request.get("tool_choice"):
            kind = int(hashlib.sha256(user.encode()).hexdigest(), 16) % 3
            self.verdicts.setdefault(title, []).append(MEANING[kind])
            return {"tool_call": {"name": "report_recency", "arguments": VERDICTS[kind]}}
        return {"content": f"What is said about {title[:53]}?"}


@pytest.fixture
def fake_builder(monkeypatch) -> ScriptedBuilder:
    """The builder role on the fake server, answering from a ScriptedBuilder (yielded)."""
    script = ScriptedBuilder()
    with FakeOpenAIServer(reply=script) as server:
        monkeypatch.setenv("FRESHRAG_BUILDER_BASE_URL", server.base_url)
        monkeypatch.setenv("FRESHRAG_BUILDER_API_KEY", "sk-not-written")
        monkeypatch.setenv("FRESHRAG_BUILDER_MODEL", "scripted-builder")
        yield script


def expected_discard(wiki: SeededMediaWiki, title: str) -> str:
    """Why the fixture's page `title` cannot be in A_r."""
    if title in wiki.redirects:
        return REDIRECT
    if title in wiki.disambiguations:
        return DISAMBIGUATION
    # The released articles all hold more than 1,000 characters; the wiki's plain-text extract
    # of one can come out a little shorter than the text imported.
    assert len(wiki.articles[title].revisions[-1].text) < 1100, title
    return TOO_SHORT


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
    discarded = [row["title"] for row in read_jsonl(out / SAMPLE) if row["discard"]]
    assert funnel["discarded_r"] == dict(Counter(expected_discard(mediawiki, t) for t in discarded))
    assert funnel["sampled"] == 80 + len(discarded)

    # A_d: exactly the sampled articles whose first revision in the wiki is after the cutoff day
    created = {title: mediawiki.articles[title].revisions[0].timestamp for title in a_r}
    assert all(moment(articles[t]["created"]) == moment(created[t]) for t in a_r)
    assert set(a_d) == {t for t in a_r if moment(created[t]) >= END_OF_CUTOFF_DAY}
    assert 0 < len(a_d) < len(a_r)  # the sample holds both kinds
    assert funnel["n_d"] == len(a_d)
    assert funnel["discarded_d"] == {"created_before_cutoff": len(a_r) - len(a_d)}

    # A_f: the scripted verdicts, asked once per A_d article, the garbled ones counted as unknown
    given = fake_builder.verdicts
    assert sorted(given) == sorted(a_d) and all(len(v) == 1 for v in given.values())
    given = {title: verdicts[0] for title, verdicts in given.items()}
    recorded = {row["title"]: row for row in read_jsonl(out / "recency.jsonl")}
    assert {t: row["verdict"] for t, row in recorded.items()} == given
    assert all((row["reason"] is None) == (row["verdict"] != "unknown")
               for row in recorded.values())
    assert a_f == [t for t in a_d if given[t] is True]
    assert set(given.values()) == {True, False, "unknown"}  # the sample holds every kind
    assert funnel["discarded_f"] == {
        "not_mostly_after_cutoff": sum(v is False for v in given.values()),
        "unknown_verdict": sum(v == "unknown" for v in given.values())}
    assert funnel["n_d"] == funnel["n_f"] + sum(funnel["discarded_f"].values())

    # content is the wiki's latest revision; questions are tied to their articles
    for title in a_r:
        opening = mediawiki.articles[title].revisions[-1].text.split("\n")[0][:60]
        assert opening[:30] in articles[title]["content"], title
    questions = list(read_jsonl(out / "questions.jsonl"))
    assert sorted(q["title"] for q in questions) == sorted(a_f) and funnel["questions"] == len(a_f)
    for question in questions:
        assert question["revision_id"] == articles[question["title"]]["revision_id"]
        assert question["question"] == f"What is said about {question['title'][:53]}?"
        assert question["generator"] == "scripted-builder"
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


def said_mostly_after(raw: str | None) -> bool | None:
    """The verdict a recorded reply gives: `mostly_after_cutoff` if it is true or false."""
    try:
        arguments = json.loads(raw) if raw is not None else None
    except json.JSONDecodeError:
        return None
    value = arguments.get("mostly_after_cutoff") if isinstance(arguments, dict) else None
    return value if isinstance(value, bool) else None


def test_build_with_the_real_local_model(mediawiki, tmp_path, monkeypatch):
    """The default builder: SmolLM2-135M on the embedded llama.cpp server. It is too small to
    judge recency well, so no verdict is expected of it. What is checked: A_r and A_d are what
    the wiki determines, every verdict is the one its recorded reply gives (unknown only with a
    reason, for a reply that gives none), A_f and the funnel follow from the verdicts, and the
    questions come out tied to their articles."""
    for role in ("BUILDER_", ""):
        for key in ("BASE_URL", "MODEL", "API_KEY"):
            monkeypatch.delenv(f"FRESHRAG_{role}{key}", raising=False)
    monkeypatch.chdir(tmp_path)  # no freshrag.toml here: the roles keep their local default
    out = tmp_path / "dataset"
    assert main(["build", "--wiki-api", mediawiki.api_url, "--n", "6", "--cutoff", CUTOFF,
                 "--out", str(out), "--questions-from", "A_d", "--concurrency", "2"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    funnel = manifest["funnel"]
    assert manifest["models"]["builder"]["base_url"] == "local"
    a_r = (out / "A_r.txt").read_text().splitlines()
    a_d = (out / "A_d.txt").read_text().splitlines()
    a_f = (out / "A_f.txt").read_text().splitlines()
    assert len(a_r) == 6 == funnel["n_r"] and set(a_r) <= set(mediawiki.articles)
    created = {t: moment(mediawiki.articles[t].revisions[0].timestamp) for t in a_r}
    assert set(a_d) == {t for t in a_r if created[t] >= END_OF_CUTOFF_DAY}

    verdicts = {row["title"]: row for row in read_jsonl(out / "recency.jsonl")}
    assert sorted(verdicts) == sorted(a_d)
    for title, row in verdicts.items():
        said = said_mostly_after(row["raw"])
        if row["verdict"] in (True, False):
            assert said is row["verdict"] and row["reason"] is None, row
        else:
            assert row["verdict"] == "unknown" and row["reason"], row
            assert said is None or row["reason"].startswith("no report_recency call"), row
    assert a_f == [t for t in a_d if verdicts[t]["verdict"] is True]
    gone = [row["verdict"] for t, row in verdicts.items() if t not in a_f]
    assert funnel["discarded_f"] == dict(Counter(
        "unknown_verdict" if verdict == "unknown" else "not_mostly_after_cutoff"
        for verdict in gone))
    assert funnel["n_f"] == len(a_f)

    articles = {row["title"]: row for row in read_jsonl(out / "articles.jsonl")}
    questions = list(read_jsonl(out / "questions.jsonl"))
    assert sorted(q["title"] for q in questions) == sorted(a_d) and funnel["questions"] == len(a_d)
    for question in questions:
        assert question["question"].strip() and question["generator"], question
        assert question["revision_id"] == articles[question["title"]]["revision_id"]


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
        assert main(["build", "--n", "3", "--cutoff", CUTOFF, "--out", str(tmp_path / "d"),
                     "--stage", "facts", "--user-agent", agent, "--max-lag", "7"]) == 0
    finally:
        proxy.server.shutdown()
    assert len(proxy.requests) >= 1 + 1 + 3 * 2  # siteinfo, random titles, per page: info + text
    # the facts stage: the 3 revisions' wikitext in one request, through the same source
    assert [params["revids"][0].count("|") for _, params in proxy.requests
            if "content" in params.get("rvprop", [""])[0]] == [2]
    for user_agent, params in proxy.requests:
        assert user_agent.startswith(agent), user_agent
    # all but mwclient's own siteinfo request when it connects
    assert [params for _, params in proxy.requests if params.get("maxlag") != ["7"]] == [
        params for _, params in proxy.requests if "siteinfo" in params.get("meta", [""])[0]]
