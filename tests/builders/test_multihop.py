"""`freshrag build --style multihop` on a dump of invented post-cutoff pages that link to each
other (one through a redirect) and carry infoboxes, with the fake server as every model: bridges
along real links, comparisons with computed references, the both-needed check with a scripted
answerer and judge, its drops counted, --distractors, the dry run and a resume after a failure."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from freshrag.builders.sources.dump import DumpSource
from freshrag.builders.sources.links import Link, link_title, wikilinks
from freshrag.builders.sources.mediawiki import MediaWikiSource
from freshrag.builders.styles.distractors import DISTRACTORS, add_distractors
from freshrag.builders.styles.multihop import CANDIDATES
from freshrag.builders.styles.multihop_check import BY_ONE, NOT_WITH_ALL, check
from freshrag.builders.styles.multihop_plan import LINKS, mention
from freshrag.core.jsonl import read_jsonl
from freshrag.core.types import LLMResponse, Usage
from tests.support.builds import listed_build
from tests.support.costs import table
from tests.support.fake_openai_server import FakeOpenAIServer, default_reply
from tests.support.fakes import use_endpoint
from tests.support.wikidump import DumpPage, Revision, write_dump

CUTOFF = "2024-12-31"
FILLER = ("Its council meets in a hall of pale limestone and old oak. Farmers nearby grow barley, "
          "rye and a bitter winter pear. A river crosses the valley twice before a marsh. "
          "The annual fair draws traders from three neighbouring valleys. ")
# title: (created, wikitext before the filler)
PAGES = {
    "Alder Bridge": ("2025-03-10T12:00:00Z",
                     "{{Infobox bridge\n| name = Alder Bridge\n| opened = {{Start date|2025|3|14}}"
                     "\n| total_length = 410 m\n}}\n'''Alder Bridge''' is a footbridge. It leads "
                     "to [[Brask Hall|the old market hall of Brask]], which it serves. Stone for "
                     "it came from [[alder Quarry]]."),
    "Brask Hall": ("2025-05-01T12:00:00Z",
                   "{{Infobox building\n| name = Brask Hall\n| opened = {{Start date|2025|5|2}}\n"
                   "| height = 31 m\n}}\n'''Brask Hall''' is a market hall. From its roof one sees "
                   "[[Corran Tower]], the tallest building of the town."),
    "Corran Tower": ("2025-07-05T12:00:00Z",
                     "{{Infobox building\n| name = Corran Tower\n| opened = {{Start date|2025|7|"
                     "9}}\n| height = 58 m\n}}\n'''Corran Tower''' is a tower. Its top looks over "
                     "[[Delm crossing]], a bridge finished later that year."),
    "Delm Bridge": ("2025-08-20T12:00:00Z",
                    "{{Infobox bridge\n| name = Delm Bridge\n| opened = {{Start date|2025|9|1}}\n"
                    "| total_length = 220 m\n}}\n'''Delm Bridge''' is a road bridge. It was built "
                    "to relieve [[Alder Bridge]] of its traffic."),
    "Esk Fair": ("2025-09-12T12:00:00Z",
                 "'''Esk Fair''' is a fair held near [[Old Town]]. [[File:Fair.jpg|thumb]] "
                 "[[Category:Fairs]] [[de:Esk-Markt]]"),
    "Old Town": ("2015-01-15T12:00:00Z",
                 "{{Infobox settlement\n| name = Old Town\n| population_total = 4,812\n}}\n"
                 "'''Old Town''' is an old town."),
    "Harbour Mill": ("2015-02-15T12:00:00Z",
                     "{{Infobox building\n| name = Harbour Mill\n| opened = {{Start date|1850|1|"
                     "1}}\n}}\n'''Harbour Mill''' is an old mill."),
    "Alder Quarry": ("2016-03-01T12:00:00Z", "'''Alder Quarry''' is a quarry of grey stone."),
}
FRESH = ["Alder Bridge", "Brask Hall", "Corran Tower", "Delm Bridge", "Esk Fair"]
# The links each fresh page makes to the dump's articles, the redirect followed.
LINKED = {"Alder Bridge": ["Brask Hall", "Alder Quarry"], "Brask Hall": ["Corran Tower"],
          "Corran Tower": ["Delm Bridge"], "Delm Bridge": ["Alder Bridge"],
          "Esk Fair": ["Old Town"]}
OPENED = {"Alder Bridge": "2025-03-14", "Brask Hall": "2025-05-02", "Corran Tower": "2025-07-09",
          "Delm Bridge": "2025-09-01"}
SIZE = {"Alder Bridge": 410, "Brask Hall": 31, "Corran Tower": 58, "Delm Bridge": 220}


def write_wiki(path: Path) -> Path:
    pages = []
    for page_id, (title, (created, text)) in enumerate(PAGES.items(), start=1):
        text = f"{text}\n\n== History ==\n{FILLER * 5}"
        first = Revision(2 * page_id, created, text[:len(text) // 2])
        pages.append(DumpPage(page_id, title, [first, Revision(
            2 * page_id + 1, created.replace(":00:00Z", ":30:00Z"), text, parent_id=first.id)]))
    pages.append(DumpPage(99, "Delm crossing", [Revision(198, "2025-08-21T12:00:00Z",
                                                         "#REDIRECT [[Delm Bridge]]")],
                          redirect="Delm Bridge"))
    return write_dump(path, pages)


class Script:
    """The fake model. write_bridge: a question through the first article (garbage for
    `unusable`); the answerer: "Seen:" and the titles of the extracts it was given; the judge:
    5 when the answer saw every gold article (any one, for a question whose first hop is
    `shortcut`; never, for a comparison about `hopeless`), else 1."""

    def __init__(self, unusable: str | None = "Brask Hall", shortcut: str | None = "Corran Tower",
                 hopeless: str | None = "Alder Bridge", fail_at: int | None = None):
        self.unusable, self.shortcut, self.hopeless = unusable, shortcut, hopeless
        self.golds: dict[str, list[str]] = {}
        self.fail_at, self.answers = fail_at, 0
        self.roles: Counter = Counter()
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        tools = [tool["function"]["name"] for tool in request.get("tools") or []]
        system, user = request["messages"][0]["content"], request["messages"][-1]["content"]
        with self.lock:
            self.roles["judge" if "check_answer" in tools else "builder" if tools else "answer"] += 1
        if "write_bridge" in tools:
            return self.bridge(user)
        if "check_answer" in tools:
            return self.judge(user)
        if not tools:
            with self.lock:
                self.answers += 1
                if self.answers == self.fail_at:
                    return {"error": {"status": 400, "message": "the endpoint broke"}}
            return {"content": "Seen: " + " | ".join(re.findall(r"^Title: (.*)$", system, re.M))}
        return default_reply(request)

    def bridge(self, user: str) -> dict[str, Any]:
        first = re.search(r"First article: (.*)", user).group(1)
        second = re.search(r"Second article: (.*)", user).group(1)
        fact = re.search(r"A fact of the second article: (.*)", user).group(1)
        if first == self.unusable:
            return {"content": "no call at all"}
        question = f"Through {first}: what is the {fact.split(':')[0]} of the place it names?"
        with self.lock:
            self.golds[question] = [first, second]
        return {"tool_call": {"name": "write_bridge", "arguments": json.dumps(
            {"question": question, "answer": fact.split(": ", 1)[-1]})}}

    def judge(self, user: str) -> dict[str, Any]:
        question = re.search(r"Question: (.*)", user).group(1)
        seen = set(re.search(r"Seen: (.*)", user).group(1).split(" | "))
        golds = self.golds.get(question) or list(re.search(r": (.*) or (.*)\?$", question).groups())
        answered = set(golds) <= seen or (golds[0] == self.shortcut and bool(seen & set(golds)))
        if golds[0] == self.hopeless and question.startswith("Which"):
            answered = False
        return {"tool_call": {"name": "check_answer",
                              "arguments": json.dumps({"truthfulness": 5 if answered else 1})}}


class Direct:
    """The LLM protocol answered by a Script in process: the check run again outside a build."""

    def __init__(self, script: Script):
        self.script = script

    def chat(self, role: str, messages: list[dict[str, Any]], *, tools=None, tool_choice=None,
             **options: Any) -> LLMResponse:
        forced = {"type": "function", "function": {"name": tool_choice}} if tool_choice else None
        reply = self.script({"messages": messages, "tools": tools, "tool_choice": forced})
        call = reply.get("tool_call") or {}
        return LLMResponse(role=role, model="scripted", text=reply.get("content"),
                           tool_name=call.get("name"), tool_arguments=call.get("arguments"),
                           usage=Usage(1, 1), latency_s=0.0, cache_hit=False, messages=messages)


@pytest.fixture
def wiki(tmp_path) -> Path:
    return write_wiki(tmp_path / "wiki.xml")


def serve(monkeypatch, script: Script) -> FakeOpenAIServer:
    server = FakeOpenAIServer(reply=script).start()
    use_endpoint(monkeypatch, server.base_url, "sk-multihop")
    return server


def build(wiki: Path, out: Path, *extra: str) -> int:
    return listed_build(["--dump", str(wiki), "--cutoff", CUTOFF, "--out", str(out), "--style",
                         "multihop", "--questions-from", "A_d", "--concurrency", "1", *extra])


@pytest.fixture
def built(tmp_path, wiki, monkeypatch):
    """The set built with the default Script: (directory, script, server)."""
    script = Script()
    server = serve(monkeypatch, script)
    try:
        assert build(wiki, tmp_path / "d") == 0
        yield tmp_path / "d", script, server
    finally:
        server.stop()


def test_bridge_questions_ask_across_two_pages_that_really_link(built):
    out, _, _ = built
    links = {row["title"]: [link["title"] for link in row["links"]]
             for row in read_jsonl(out / LINKS)}
    assert {title: links[title] for title in FRESH} == LINKED  # files, categories, wikis left out
    questions = list(read_jsonl(out / "questions.jsonl"))
    bridges = [q for q in questions if q["multihop"] == "bridge"]
    assert bridges and all(q["gold_titles"][1] in LINKED[q["title"]] for q in bridges)
    # the pages' own wikitext links them, the redirect "Delm crossing" counted as Delm Bridge
    for question in bridges:
        first, second = question["gold_titles"]
        said = {link.title for link in wikilinks(PAGES[first][1])}
        assert second in said or first == "Corran Tower" and "Delm crossing" in said
    for question in questions:
        assert question["title"] == question["gold_titles"][0] and question["hops"] == 2
        assert set(question["gold_titles"]) <= set(FRESH) and question["reference"]
        assert question["style"] == "multihop" and question["stage"] == "A_d"
        newest = max(question["gold_titles"], key=lambda t: PAGES[t][0])
        assert question["created"] == PAGES[newest][0] and question["month"] == PAGES[newest][0][:7]
    written = {row["id"]: row for row in read_jsonl(out / CANDIDATES)}
    corran = next(row for row in written.values() if row["gold_titles"][0] == "Corran Tower"
                  and row["kind"] == "bridge")
    assert corran["sentence"].startswith("Its top looks over Delm crossing")


def test_comparisons_take_their_reference_from_the_facts(built):
    out, _, _ = built
    rows = [row for row in read_jsonl(out / CANDIDATES) if row["kind"] == "comparison"]
    assert sorted(tuple(row["gold_titles"]) for row in rows) == [
        ("Alder Bridge", "Delm Bridge"), ("Brask Hall", "Corran Tower")]
    for row in rows:
        first, second = row["gold_titles"]
        if row["fact"] == "opened":
            expected = min((first, second), key=OPENED.__getitem__)
        else:
            assert row["fact"] in ("height", "total_length")
            expected = max((first, second), key=SIZE.__getitem__)
        assert row["reference"] == expected and row["question"].endswith(f"{first} or {second}?")


def test_the_check_keeps_only_questions_that_need_both_articles(built):
    out, script, _ = built
    written = {row["id"]: row for row in read_jsonl(out / CANDIDATES)}
    dropped = {row["id"]: row["dropped"] for row in written.values() if row["dropped"]}
    by_first = {(row["gold_titles"][0], row["kind"]): row["dropped"] for row in written.values()}
    assert by_first == {("Alder Bridge", "bridge"): None, ("Alder Bridge", "comparison"): NOT_WITH_ALL,
                        ("Brask Hall", "bridge"): "unusable_reply", ("Brask Hall", "comparison"): None,
                        ("Corran Tower", "bridge"): BY_ONE, ("Delm Bridge", "bridge"): None}
    shortcut = next(row for row in written.values() if row["dropped"] == BY_ONE)
    assert [step["articles"] for step in shortcut["check"]] == [
        ["Corran Tower", "Delm Bridge"], ["Corran Tower"]]  # stopped at the first that answered
    questions = list(read_jsonl(out / "questions.jsonl"))
    assert not {q["id"] for q in questions} & set(dropped)
    assert len(questions) == len(written) - len(dropped) == 3
    funnel = json.loads((out / "manifest.json").read_text())["funnel"]["multihop"]
    assert funnel["bridge"] == {"candidates": 4, "kept": 2,
                                "dropped": {"unusable_reply": 1, BY_ONE: 1},
                                "lacking": {"no_link": 1, "no_mention": 0, "no_fact": 0}}
    assert funnel["comparison"] == {"candidates": 2, "kept": 1, "dropped": {NOT_WITH_ALL: 1},
                                    "lacking": {"no_fact": 1, "alone": 0}}
    # run again on the kept set with the same scripted model, the check keeps them (>= 80%)
    articles = {row["title"]: row["content"] for row in read_jsonl(out / "articles.jsonl")}
    again = [check(Direct(script), q["question"], q["reference"],
                   [(t, articles[t]) for t in q["gold_titles"]]) for q in questions]
    assert sum(verdict.dropped is None for verdict in again) >= 0.8 * len(questions)
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["models"]) == {"builder", "answer", "judge"}
    assert manifest["settings"]["multihop"] == ["bridge", "comparison"]


def test_a_question_one_article_answers_fails_the_check_run_again():
    """The check itself, as the build runs it: answered from the first article alone, dropped;
    answered with both and with neither alone, kept."""
    script = Script(shortcut="A")
    script.golds = {"Q1?": ["A", "B"], "Q2?": ["C", "D"]}
    golds = {"Q1?": [("A", "text a"), ("B", "text b")], "Q2?": [("C", "text c"), ("D", "text d")]}
    verdicts = {q: check(Direct(script), q, "x", golds[q]) for q in golds}
    assert verdicts["Q1?"].dropped == BY_ONE and "'A' alone" in verdicts["Q1?"].reason
    assert verdicts["Q2?"].dropped is None and len(verdicts["Q2?"].steps) == 3


def test_distractors_are_close_articles_not_gold_and_the_same_for_a_seed(tmp_path, wiki,
                                                                         monkeypatch):
    script = Script(unusable=None, shortcut=None, hopeless=None)
    server = serve(monkeypatch, script)
    try:
        assert build(wiki, tmp_path / "one", "--distractors", "2", "--seed", "5") == 0
        assert build(wiki, tmp_path / "two", "--distractors", "2", "--seed", "5") == 0
    finally:
        server.stop()
    rows = list(read_jsonl(tmp_path / "one" / DISTRACTORS))
    questions = list(read_jsonl(tmp_path / "one" / "questions.jsonl"))
    assert [row["id"] for row in rows] == [q["id"] for q in questions] and len(rows) == 6
    for row in rows:
        titles = [d["title"] for d in row["distractors"]]
        assert len(titles) == len(set(titles)) == 2 and not set(titles) & set(row["gold_titles"])
        assert all(d["signs"] for d in row["distractors"])
    assert (tmp_path / "two" / DISTRACTORS).read_bytes() == (tmp_path / "one" / DISTRACTORS) \
        .read_bytes()
    funnel = json.loads((tmp_path / "one" / "manifest.json").read_text())["funnel"]["multihop"]
    assert funnel["distractors"]["chosen"] == 12 and funnel["distractors"]["short"] == 0
    assert json.loads((tmp_path / "one" / "manifest.json").read_text())["settings"][
        "distractors"] == 2


def test_a_linked_neighbour_the_sample_left_out_is_fetched_into_the_corpus(built, wiki):
    """Alder Quarry (linked from Alder Bridge) as if the sample had missed it: the distractors
    of Alder Bridge's questions fetch it from the dump and append it to articles.jsonl."""
    out, _, _ = built
    path = out / "articles.jsonl"
    rows = [row for row in read_jsonl(path) if row["title"] != "Alder Quarry"]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    said = add_distractors(out, 3, 0, lambda: DumpSource(wiki))
    chosen = {row["id"]: row["distractors"] for row in read_jsonl(out / DISTRACTORS)}
    added = {d["title"] for ds in chosen.values() for d in ds if d["added"]}
    assert added == {"Alder Quarry"} and said.endswith("(1 articles added)")
    assert [row["title"] for row in read_jsonl(path)].count("Alder Quarry") == 1
    questions = {q["id"]: q for q in read_jsonl(out / "questions.jsonl")}
    assert all("Alder Bridge" in questions[qid]["gold_titles"] for qid, ds in chosen.items()
               if any(d["title"] == "Alder Quarry" for d in ds))


def test_the_dry_run_counts_the_calls_the_build_then_makes(tmp_path, wiki, monkeypatch, capsys):
    script = Script(unusable=None, shortcut=None, hopeless=None)  # every question kept
    server = serve(monkeypatch, script)
    out = tmp_path / "d"
    try:
        for stage in ("A_r", "facts", "A_d"):
            assert build(wiki, out, "--stage", stage) == 0
        capsys.readouterr()
        assert build(wiki, out, "--dry-run") == 0
        estimate = table(capsys.readouterr().out)
        assert server.calls == 0
        assert build(wiki, out) == 0
        # classifier for 5 articles and 4 bridges written; 6 questions x 3 answers and grades
        assert script.roles == {"builder": 9, "answer": 18, "judge": 18}
        assert {role: int(estimate[role][1]) for role in script.roles} == script.roles
        capsys.readouterr()
        assert build(wiki, out, "--dry-run") == 0
        assert not {"builder", "answer", "judge"} & set(table(capsys.readouterr().out))
    finally:
        server.stop()


def test_a_build_broken_off_resumes_without_asking_a_finished_call_again(tmp_path, wiki,
                                                                         monkeypatch):
    whole = Script()
    server = serve(monkeypatch, whole)
    try:
        assert build(wiki, tmp_path / "whole" / "d") == 0
        expected = server.calls
    finally:
        server.stop()
    broken = Script(fail_at=7)  # the last answer of Brask Hall's comparison, the 4th candidate
    server = serve(monkeypatch, broken)
    try:
        assert build(wiki, tmp_path / "cut" / "d") != 0
        first = [json.dumps(r, sort_keys=True) for r in server.requests]
        assert len(read_jsonl(tmp_path / "cut" / "d" / CANDIDATES)) == 3
        server.reset_counts()
        server.reply = Script()
        assert build(wiki, tmp_path / "cut" / "d") == 0
        second = [json.dumps(r, sort_keys=True) for r in server.requests]
    finally:
        server.stop()
    failed = first[-1]  # the refused call, asked again
    asked = first[:-1] + second
    assert len(asked) == len(set(asked)) == expected and failed in second
    assert (tmp_path / "cut" / "d" / "questions.jsonl").read_bytes() == \
        (tmp_path / "whole" / "d" / "questions.jsonl").read_bytes()


@pytest.mark.parametrize("target, title", [
    pytest.param("tarnholt_bridge#History", "Tarnholt bridge", id="section-and-underscores"),
    pytest.param(":Brask Hall", "Brask Hall", id="leading-colon"),
    pytest.param("Category:Bridges", None, id="category"),
    pytest.param("File:Bridge.jpg", None, id="file"),
    pytest.param("de:Brücke", None, id="interwiki"),
    pytest.param("Star Wars: Episode I", "Star Wars: Episode I", id="colon-in-a-title"),
    pytest.param("#Later", None, id="same-page"),
])
def test_link_targets_become_article_titles(target, title):
    assert link_title(target) == title


def test_the_wiki_source_follows_continuation_and_redirects():
    """prop=links continued over two replies (a page in both), prop=redirects mapping a
    redirect to one of the titles asked about."""
    replies = {
        ("links", None): {"continue": {"plcontinue": "1|0|M"}, "query": {"pages": [
            {"title": "A", "links": [{"ns": 0, "title": "B crossing"}]},
            {"title": "B", "links": [{"ns": 0, "title": "A"}]}]}},
        ("links", "1|0|M"): {"query": {"pages": [
            {"title": "A", "links": [{"ns": 0, "title": "Elsewhere"}, {"ns": 0, "title": "A"}]},
            {"title": "B"}]}},
        ("redirects", None): {"query": {"pages": [
            {"title": "A"}, {"title": "B", "redirects": [{"ns": 0, "title": "B crossing"}]}]}},
    }
    asked = []
    source = object.__new__(MediaWikiSource)

    def api(action, **params):
        asked.append(params)
        return replies[params["prop"], params.get("plcontinue")]

    source._api = api
    assert source.links(["A", "B"]) == {"A": [Link("B"), Link("Elsewhere")], "B": [Link("A")]}
    assert [p.get("plcontinue") for p in asked if p["prop"] == "links"] == [None, "1|0|M"]
    assert all(p["titles"] == "A|B" and p["formatversion"] == 2 for p in asked)


def test_without_the_cache_a_resume_asks_again_only_the_candidate_cut_short(tmp_path, wiki,
                                                                          monkeypatch):
    """multihop.jsonl, not the response cache, is what spares a finished candidate its calls."""
    out = tmp_path / "d"
    server = serve(monkeypatch, Script(fail_at=7))
    try:
        assert build(wiki, out, "--no-cache") != 0
        first = {json.dumps(r, sort_keys=True) for r in server.requests}
        server.reset_counts()
        server.reply = Script()
        assert build(wiki, out, "--no-cache") == 0
        again = {json.dumps(r, sort_keys=True) for r in server.requests} & first
    finally:
        server.stop()
    assert again and all("Brask Hall or Corran Tower" in request for request in again)
    assert len(list(read_jsonl(out / "questions.jsonl"))) == 3


@pytest.mark.parametrize("content, title, text, sentence", [
    pytest.param("A town. It plays 1915–16 Aston Villa F.C. season games. Later.",
                 "1915–16 Aston Villa F.C. season", None,
                 "It plays 1915–16 Aston Villa F.C. season games.", id="a-full-stop-in-the-name"),
    pytest.param("== Brask Hall ==\nIt faces [the hall].\nNear brask hall, a road.", "Brask Hall",
                 None, "Near brask hall, a road.", id="not-a-heading-case-ignored"),
    pytest.param("It leads to the old market hall of Brask. More.", "Brask Hall",
                 "the old market hall of Brask", "It leads to the old market hall of Brask.",
                 id="by-the-link-text"),
    pytest.param("Seen from Delm. Nothing else.", "Delm Bridge (Kent)", None,
                 None, id="not-named"),
])
def test_the_sentence_that_names_the_second_article(content, title, text, sentence):
    assert mention(content, title, text) == sentence


def test_a_sample_with_nothing_to_pair_is_refused_before_any_model_call(tmp_path, monkeypatch,
                                                                         capsys):
    # the fresh pages without their links or infoboxes: no bridge, no comparison can be planned
    plain = [DumpPage(page_id, title, [Revision(page_id, created, f"'''{title}''' is a place. "
                                                 f"{FILLER * 5}")])
             for page_id, (title, (created, _)) in enumerate(PAGES.items(), start=1)]
    dump = write_dump(tmp_path / "plain.xml", plain)
    server = serve(monkeypatch, Script())
    try:
        assert build(dump, tmp_path / "d") == 2
        assert server.calls == 0  # stage A_f, the first to call the model, never started
    finally:
        server.stop()
    said = capsys.readouterr().err
    # planned over A_d's five fresh pages, the widest the questions (from A_d here) may ask about
    assert "no two-article question can be planned from the 5 articles it may ask about" in said
    assert "bridge: no link 5" in said and "no model was called" in said
