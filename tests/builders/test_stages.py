"""The four stages against a scripted source and the scripted fake model: what each keeps and
drops, that the funnel adds up, and that a stage broken off part-way resumes without examining a
page or asking the model a second time."""

import json
from datetime import date

import pytest

from freshrag.builders.manifest import check_settings, funnel, update_manifest
from freshrag.builders.prompts import ARTICLE_CHARS, QUESTION_PROMPTS
from freshrag.builders.sources.pages import DISAMBIGUATION, REDIRECT, TOO_SHORT, VANISHED, Page
from freshrag.builders.stages import (
    ARTICLES,
    QUESTIONS,
    RECENCY,
    SAMPLE,
    BuildConfig,
    BuildError,
    classify_recency,
    filter_created,
    generate_questions,
    read_titles,
    sample_articles,
)
from freshrag.builders.styles.prompted import clean_question, read_question
from freshrag.core.dataset import load_dataset_dir
from freshrag.core.jsonl import read_jsonl
from freshrag.llm.client import ContextTooLong
from tests.support.fakes import ScriptedLLM, ToolReply

CUTOFF = date(2021, 9, 30)
LONG = "A long article text. " * 60  # 1,260 characters: kept
AFTER, BEFORE = "2022-03-01T10:00:00Z", "2019-05-05T10:00:00Z"


def page(title, created=AFTER, content=LONG, discard=None, revision_id=7):
    return Page(title, content, created, revision_id, f"http://wiki/{title}", discard)


class ScriptedSource:
    """Yields the given pages in order, skipping `seen`; records every page it handed out; can be
    told to break off after some pages, as a killed process or a dropped connection would."""

    def __init__(self, pages, random_order=True, fail_after=None):
        self.all = pages
        self.random_order = random_order
        self.fail_after = fail_after
        self.description = "scripted source"
        self.handed_out = []

    def pages(self, seen):
        for item in self.all:
            if item.title in seen:
                continue
            if self.fail_after is not None and len(self.handed_out) >= self.fail_after:
                raise ConnectionError("connection dropped")
            self.handed_out.append(item.title)
            yield item


MIXED = [page("Alpha"), page("Short", content="tiny"), page("Redirect", discard=REDIRECT),
         page("Beta", created=BEFORE), page("Dab", discard=DISAMBIGUATION), page("Gamma"),
         page("Gone", discard=VANISHED), page("Delta", created=None), page("Epsilon")]


def config(tmp_path, **overrides):
    return BuildConfig(out=tmp_path / "dataset", cutoff=CUTOFF, **{"n": 4, **overrides})


def test_sample_keeps_articles_until_n_and_counts_every_discard(tmp_path):
    source = ScriptedSource(MIXED)
    cfg = config(tmp_path)
    titles = sample_articles(source, cfg)
    assert titles == ["Alpha", "Beta", "Gamma", "Delta"]
    assert source.handed_out == [p.title for p in MIXED[:8]]  # nothing past the n-th kept page
    assert [row["title"] for row in read_jsonl(cfg.out / ARTICLES)] == titles
    assert read_titles(cfg.out, "A_r") == titles
    counts = funnel(cfg.out)
    assert counts["discarded_r"] == {TOO_SHORT: 1, REDIRECT: 1, DISAMBIGUATION: 1, VANISHED: 1}
    assert counts["sampled"] == counts["n_r"] + sum(counts["discarded_r"].values()) == 8


def test_a_broken_off_sample_resumes_without_examining_a_page_twice(tmp_path):
    cfg = config(tmp_path, n=5)
    with pytest.raises(ConnectionError):
        sample_articles(ScriptedSource(MIXED, fail_after=4), cfg)
    assert not (cfg.out / "A_r.txt").exists()  # the stage has not finished
    resumed = ScriptedSource(MIXED)
    titles = sample_articles(resumed, cfg)
    assert titles == ["Alpha", "Beta", "Gamma", "Delta", "Epsilon"]
    assert not set(resumed.handed_out) & {p.title for p in MIXED[:4]}
    examined = [row["title"] for row in read_jsonl(cfg.out / SAMPLE)]
    assert sorted(examined) == sorted(p.title for p in MIXED) and len(set(examined)) == 9


def test_an_article_written_just_before_a_kill_is_not_fetched_again(tmp_path):
    cfg = config(tmp_path, n=2)
    cfg.out.mkdir()
    (cfg.out / ARTICLES).write_text(json.dumps(page("Alpha").article_row()) + "\n")
    source = ScriptedSource(MIXED)
    assert sample_articles(source, cfg) == ["Alpha", "Beta"]
    assert "Alpha" not in source.handed_out
    assert [row["title"] for row in read_jsonl(cfg.out / SAMPLE)].count("Alpha") == 1


def test_a_dump_with_n_gives_a_seeded_uniform_sample_of_the_whole_dump(tmp_path):
    pages = [page(f"Article {i}") for i in range(40)] + [page("Short", content="x")]
    first = sample_articles(ScriptedSource(pages, random_order=False), config(tmp_path / "a", n=5))
    again = sample_articles(ScriptedSource(pages, random_order=False), config(tmp_path / "b", n=5))
    other = sample_articles(ScriptedSource(pages, random_order=False),
                            config(tmp_path / "c", n=5, seed=1))
    assert first == again and first != other and len(set(first)) == 5
    assert first != [f"Article {i}" for i in range(5)]  # not just the dump's first pages
    counts = funnel(tmp_path / "a" / "dataset")
    assert counts["n_r"] == 5 and counts["discarded_r"] == {"not_sampled": 35, TOO_SHORT: 1}
    assert counts["sampled"] == len(pages)


def test_a_dump_without_n_keeps_every_article(tmp_path):
    source = ScriptedSource(MIXED, random_order=False)
    assert sample_articles(source, config(tmp_path, n=None)) == \
        ["Alpha", "Beta", "Gamma", "Delta", "Epsilon"]


def test_created_after_the_cutoff_day_only(tmp_path):
    pages = [page("Last minute", created="2021-09-30T23:59:59Z"),
             page("Next day", created="2021-10-01T00:00:00Z"), page("Unknown", created=None),
             page("Old", created=BEFORE)]
    cfg = config(tmp_path)
    sample_articles(ScriptedSource(pages), cfg)
    assert filter_created(cfg) == ["Next day"]
    counts = funnel(cfg.out)
    assert counts["n_d"] == 1
    assert counts["discarded_d"] == {"created_before_cutoff": 2, "created_unknown": 1}


def built_to_a_d(tmp_path, titles=("One", "Two", "Three", "Four"), **overrides):
    cfg = config(tmp_path, n=len(titles), **overrides)
    sample_articles(ScriptedSource([page(t) for t in titles]), cfg)
    filter_created(cfg)
    return cfg


def recency(value):
    return ToolReply("report_recency", json.dumps({"mostly_after_cutoff": value}))


def test_recency_verdicts_keep_true_and_count_unknown(tmp_path):
    cfg = built_to_a_d(tmp_path, concurrency=1)
    llm = ScriptedLLM([recency(True), recency(False), ToolReply("report_recency", '{"mostly'),
                       "I think it is recent."])
    assert classify_recency(llm, cfg) == ["One"]
    first = llm.requests[0]
    assert first["role"] == "builder" and first["tool_choice"] == "report_recency"
    assert first["temperature"] == 0.0 and first["max_tokens"]
    assert "2021-09-30" in first["messages"][0]["content"]
    assert first["messages"][1]["content"].startswith("Title: One\n\n")
    rows = {row["title"]: row for row in read_jsonl(cfg.out / RECENCY)}
    assert rows["Three"]["verdict"] == "unknown" and "invalid JSON" in rows["Three"]["reason"]
    assert rows["Four"]["verdict"] == "unknown" and "no report_recency call" in rows["Four"]["reason"]
    counts = funnel(cfg.out)
    assert counts["n_f"] == 1
    assert counts["discarded_f"] == {"not_mostly_after_cutoff": 1, "unknown_verdict": 2}
    assert counts["n_d"] == counts["n_f"] + sum(counts["discarded_f"].values())


def test_the_classifier_sees_title_and_text_cut_to_15000_characters(tmp_path):
    cfg = config(tmp_path, n=1)
    sample_articles(ScriptedSource([page("Huge", content="word " * 10_000)]), cfg)
    filter_created(cfg)
    llm = ScriptedLLM([recency(True)])
    classify_recency(llm, cfg)
    assert len(llm.requests[0]["messages"][1]["content"]) == ARTICLE_CHARS


def test_an_article_too_long_for_the_model_is_halved_until_it_fits(tmp_path):
    cfg = config(tmp_path, n=2, concurrency=1)
    sample_articles(ScriptedSource([page("Huge", content="word " * 10_000),
                                    page("Endless", content="more " * 10_000)]), cfg)
    filter_created(cfg)
    too_long = ContextTooLong("maximum context length is 8192 tokens")
    llm = ScriptedLLM([too_long, recency(True), too_long, too_long, too_long,
                       too_long, "Why is Huge so long?"])
    assert classify_recency(llm, cfg) == ["Huge"]
    sent = [len(request["messages"][1]["content"]) for request in llm.requests]
    prefix = len("Title: Huge\n\n")
    assert sent[:2] == [ARTICLE_CHARS, prefix + ARTICLE_CHARS // 2]
    rows = {row["title"]: row for row in read_jsonl(cfg.out / RECENCY)}
    assert rows["Huge"]["content_chars"] == ARTICLE_CHARS // 2
    assert rows["Endless"]["verdict"] == "unknown" and "too long" in rows["Endless"]["reason"]
    assert funnel(cfg.out)["discarded_f"] == {"unknown_verdict": 1}
    assert generate_questions(llm, cfg) == 1  # the question call is cut the same way
    assert len(llm.requests[-1]["messages"][1]["content"]) < ARTICLE_CHARS


def test_a_broken_off_classification_resumes_without_asking_again(tmp_path):
    cfg = built_to_a_d(tmp_path, concurrency=1)
    failing = ScriptedLLM([recency(True), recency(True), RuntimeError("endpoint down")])
    with pytest.raises(RuntimeError):
        classify_recency(failing, cfg)
    resumed = ScriptedLLM([recency(False), recency(True)])
    assert classify_recency(resumed, cfg) == ["One", "Two", "Four"]
    asked = [request["messages"][1]["content"].split("\n")[0] for request in resumed.requests]
    assert asked == ["Title: Three", "Title: Four"]


def test_questions_are_tied_to_their_articles_and_readable_by_the_runner(tmp_path):
    cfg = built_to_a_d(tmp_path, concurrency=1, questions_per_article=2, style="recent")
    classify_recency(ScriptedLLM([recency(True), recency(False), recency(True), recency(False)]),
                     cfg)
    llm = ScriptedLLM(["Question: What happened to One?", "\"Why One?\"", "What about Three?",
                       "How did Three end?"])
    assert generate_questions(llm, cfg) == 4
    rows = read_jsonl(cfg.out / QUESTIONS)
    assert [(r["title"], r["question"]) for r in rows] == [
        ("One", "What happened to One?"), ("One", "Why One?"), ("Three", "What about Three?"),
        ("Three", "How did Three end?")]
    assert all(r["revision_id"] == 7 and r["generator"] == "scripted" and r["style"] == "recent"
               for r in rows)
    assert len({r["id"] for r in rows}) == 4
    assert [r["temperature"] for r in llm.requests] == [1.0] * 4
    assert [r["attempt"] for r in llm.requests] == [0, 1, 0, 1]  # two samples, two cache entries
    expected_prompt = QUESTION_PROMPTS["recent"].format(cutoff="2021-09-30")
    assert llm.requests[0]["messages"][0]["content"] == expected_prompt
    dataset = load_dataset_dir(cfg.out)
    assert [q.gold_title for q in dataset.questions] == ["One", "One", "Three", "Three"]
    assert set(dataset.articles) == {"One", "Two", "Three", "Four"}  # A_r: the retrieval database


def test_an_empty_question_is_left_out_and_asked_again_on_resume(tmp_path):
    cfg = built_to_a_d(tmp_path, titles=("One", "Two"), concurrency=1, questions_from="A_d")
    empty = ScriptedLLM(["What is One?", "  ", "", "\n"])  # Two: empty at every try
    assert generate_questions(empty, cfg) == 1 and not empty.script
    retry = ScriptedLLM(["What is Two?"])
    assert generate_questions(retry, cfg) == 2
    assert retry.requests[0]["messages"][1]["content"].startswith("Title: Two")


def test_a_later_stage_needs_the_earlier_one(tmp_path):
    with pytest.raises(BuildError, match=r"A_d\.txt: stage A_d has not finished"):
        classify_recency(ScriptedLLM([]), config(tmp_path))


def test_a_dataset_refuses_other_settings_on_resume(tmp_path):
    cfg = built_to_a_d(tmp_path)
    update_manifest(cfg, "scripted source", "--cutoff", None, "A_d")
    check_settings(cfg)  # the same settings: fine
    moved = BuildConfig(out=cfg.out, cutoff=date(2023, 1, 1), n=4)
    with pytest.raises(BuildError, match=r"cutoff '2021-09-30' \(now '2023-01-01'\)"):
        check_settings(moved)


@pytest.mark.parametrize("text, question", [
    ("What is it?", "What is it?"),
    ("Question: What is it?", "What is it?"),
    ("Here is a question:\n\n\"What is it?\"", "What is it?"),
    ("   ", ""),
])
def test_clean_question(text, question):
    assert clean_question(text) == question


@pytest.mark.parametrize("reply, reason", [
    ("Title: One Bridge", "heading"),
    ("Article:\nOne Bridge", "heading"),
    ("I don't know.", "refusal"),
    ("I'm sorry, I cannot write that.", "refusal"),
    ("  ", "empty"),
    ("Name the river One crosses.", None),  # an imperative asks too
    ("Title: which river does One cross?", None),  # a question mark: kept
])
def test_a_reply_that_holds_no_question_says_why(reply, reason):
    question, why = read_question(reply)
    assert why == reason and bool(question) == (reason is None)


def test_replies_without_a_question_are_dropped_and_counted_once_each(tmp_path):
    cfg = built_to_a_d(tmp_path, titles=("One",), concurrency=1, questions_from="A_d")
    replies = ["Title: One", "I don't know.", "What is One?"]
    assert generate_questions(ScriptedLLM(replies), cfg) == 1
    assert [r["question"] for r in read_jsonl(cfg.out / QUESTIONS)] == ["What is One?"]
    assert funnel(cfg.out)["dropped_questions"] == {"heading": 1, "refusal": 1}
    (cfg.out / QUESTIONS).unlink()  # asked again (as a resume would, from the cache)
    assert generate_questions(ScriptedLLM(replies), cfg) == 1
    assert funnel(cfg.out)["dropped_questions"] == {"heading": 1, "refusal": 1}


def test_an_empty_question_is_asked_again_with_another_attempt_at_once(tmp_path):
    cfg = built_to_a_d(tmp_path, titles=("One",), concurrency=1, questions_from="A_d",
                       questions_per_article=2)
    llm = ScriptedLLM(["", "What is One?", "Why is One?"])
    assert generate_questions(llm, cfg) == 2
    # sample 0 came back empty: asked again as a new attempt, which no other sample uses
    assert [r["attempt"] for r in llm.requests] == [0, 2, 1]
    rows = read_jsonl(cfg.out / QUESTIONS)
    assert [(r["id"], r["question"]) for r in rows] == [("A_d-00000-0", "What is One?"),
                                                         ("A_d-00000-1", "Why is One?")]


@pytest.mark.parametrize("change, message", [
    pytest.param({"n": 5}, r"n 4 \(now 5\)", id="n"),
    pytest.param({"n": None}, r"n 4 \(now None\)", id="n-dropped"),
    pytest.param({"seed": 1}, r"seed 0 \(now 1\)", id="seed"),
])
def test_a_dataset_refuses_another_sample_size_or_seed_on_resume(tmp_path, change, message):
    cfg = built_to_a_d(tmp_path)
    update_manifest(cfg, "scripted source", "--cutoff", None, "A_d")
    with pytest.raises(BuildError, match=message):
        check_settings(BuildConfig(**{**cfg.__dict__, **change}))
    check_settings(BuildConfig(**{**cfg.__dict__, "concurrency": 9}))  # how fast is not what


def test_a_question_asked_again_sends_the_article_as_far_as_the_first_try_cut_it(tmp_path):
    cfg = config(tmp_path, n=1, concurrency=1, questions_from="A_d")
    sample_articles(ScriptedSource([page("Huge", content="word " * 10_000)]), cfg)
    filter_created(cfg)
    too_long = ContextTooLong("maximum context length is 8192 tokens")
    llm = ScriptedLLM([too_long, "", "Why is Huge so long?"])
    assert generate_questions(llm, cfg) == 1
    sent = [len(request["messages"][1]["content"]) for request in llm.requests]
    prefix = len("Title: Huge\n\n")
    assert sent == [ARTICLE_CHARS, prefix + ARTICLE_CHARS // 2, prefix + ARTICLE_CHARS // 2]
