"""Questions per information need (builders/styles/needs.py) with the scripted fake model: the needs file
read strictly, every reply kind (a question, BLANK, a malformed call) recorded and counted per need,
the seeded cap per need, and a resume that asks only what is missing."""

import json

import pytest

from freshrag.builders.styles.needs import (
    BLANK,
    FAILED,
    NEED_FUNCTION,
    NEEDS_FILE,
    QUESTION,
    NeedsError,
    NeedsPlan,
    generate_need_questions,
    needs_funnel,
    parse_need_reply,
    read_needs,
)
from freshrag.core.dataset import load_dataset_dir
from freshrag.core.jsonl import read_jsonl
from freshrag.core.types import Article, LLMResponse, Usage
from freshrag.llm.client import ContextTooLong
from freshrag.retrieval.chunking import chunk_articles
from tests.support.fakes import ScriptedLLM, ToolReply

NEEDS = ("Results of local elections", "Casualties of disasters")
# Two articles of one and two chunks (1,024 characters, as the index cuts them).
ARTICLES = {"Vote": "The council vote was won by the Greens with 40 seats. " * 10,
            "Flood": "The flood killed twelve people in the valley town. " * 30}


class Killed(Exception):
    """The process killed mid-stage (any error the stage does not handle stops it the same way)."""


def question(text, answer="an answer"):
    return ToolReply(NEED_FUNCTION, json.dumps({"question": text, "answer": answer}))


def dataset(tmp_path):
    out = tmp_path / "dataset"
    out.mkdir()
    (out / "articles.jsonl").write_text("".join(
        json.dumps({"title": title, "content": content, "revision_id": 3}) + "\n"
        for title, content in ARTICLES.items()))
    return out


def chunks():
    return chunk_articles([Article(t, c) for t, c in ARTICLES.items()], 1024, 48)


def generate(llm, out, plan=NeedsPlan(NEEDS)):
    return generate_need_questions(llm, out, "A_d", list(ARTICLES), plan, concurrency=1)


# --------------------------------------------------------------------------- the needs file


def test_a_needs_file_gives_one_need_a_line(tmp_path):
    path = tmp_path / "needs.txt"
    path.write_text("\ufeffResults of local elections\n  Casualties of disasters  \n",
                    encoding="utf-8")
    assert read_needs(path) == NEEDS


@pytest.mark.parametrize("content, where, what", [
    pytest.param(b"Elections\n\nDisasters\n", ":2:", "blank line", id="blank-line"),
    pytest.param(b"Elections\n   \n", ":2:", "blank line", id="blank-last-line"),
    pytest.param(b"Elections\nDisasters\nelections\n", ":3:", "same need as line 1",
                 id="duplicate-any-case"),
    pytest.param(b"x" * 501 + b"\n", ":1:", "one sentence", id="overlong"),
    pytest.param(b"Elections\nD\xe9sastres\n", ":2:", "not UTF-8", id="latin1"),
    pytest.param(b"", "needs.txt: no needs", "no needs", id="empty"),
])
def test_a_bad_needs_file_is_refused_naming_file_and_line(tmp_path, content, where, what):
    path = tmp_path / "needs.txt"
    path.write_bytes(content)
    with pytest.raises(NeedsError) as err:
        read_needs(path)
    assert f"{path}{where}" in str(err.value) or where in str(err.value)
    assert str(err.value).startswith(str(path)) and what in str(err.value)


# --------------------------------------------------------------------------- the parser


def reply(name=NEED_FUNCTION, arguments=None, text=None):
    return LLMResponse("builder", "m", text, name, arguments, Usage(1, 1), 0.0, False, [])


@pytest.mark.parametrize("response, outcome, question, answer, reason", [
    pytest.param(reply(arguments='{"question": "Who won?", "answer": " The  Greens "}'),
                 QUESTION, "Who won?", "The Greens", None, id="question"),
    pytest.param(reply(arguments='{"question": "Who won?\\n", "answer": ""}'),
                 QUESTION, "Who won?", None, None, id="question-empty-answer"),
    pytest.param(reply(arguments='{"question": "BLANK", "answer": ""}'),
                 BLANK, None, None, None, id="blank"),
    pytest.param(reply(arguments='{"question": " blank. ", "answer": "none"}'),
                 BLANK, None, None, None, id="blank-any-case-punctuated"),
    pytest.param(reply(arguments='{"question": "BLANK question about votes?", "answer": "x"}'),
                 QUESTION, "BLANK question about votes?", "x", None, id="blank-inside-a-question"),
    pytest.param(reply(name=None, text="Who won the vote?"),
                 FAILED, None, None, "no submit_question call", id="text-not-a-call"),
    pytest.param(reply(name="other", arguments="{}"),
                 FAILED, None, None, "no submit_question call", id="other-function"),
    pytest.param(reply(arguments='{"question": "Who'),
                 FAILED, None, None, "invalid JSON arguments", id="torn-json"),
    pytest.param(reply(arguments='["Who won?"]'),
                 FAILED, None, None, "arguments are list", id="array"),
    pytest.param(reply(arguments='{"question": 5, "answer": "x"}'),
                 FAILED, None, None, "question is 5", id="question-not-text"),
    pytest.param(reply(arguments='{"question": "  ", "answer": "x"}'),
                 FAILED, None, None, "empty question", id="question-empty"),
    pytest.param(reply(arguments='{"question": "Who won?"}'),
                 FAILED, None, None, "answer is None", id="answer-missing"),
])
def test_replies_are_parsed_strictly(response, outcome, question, answer, reason):
    got = parse_need_reply(response)
    assert got[:3] == (outcome, question, answer)
    assert (got[3] is None) if reason is None else got[3].startswith(reason)


# --------------------------------------------------------------------------- the stage


def test_each_chunk_and_need_gives_a_question_blank_or_failure_recorded_and_counted(tmp_path):
    out = dataset(tmp_path)
    assert len(chunks()) == 3
    llm = ScriptedLLM([
        question("Who won the council vote?", "The Greens"),  # elections x Vote
        question("BLANK", ""), question("blank", ""),          # elections x Flood 0, 1
        question("BLANK", ""),                                 # disasters x Vote
        "The flood killed twelve.", ToolReply(NEED_FUNCTION, '{"question": '),  # Flood 0: failed
        question("How many died in the flood?", "twelve"),     # disasters x Flood 1
    ])
    assert generate(llm, out) == 2
    assert not llm.script
    assert all(r["tool_choice"] == NEED_FUNCTION and r["role"] == "builder" for r in llm.requests)
    assert NEEDS[0] in llm.requests[0]["messages"][0]["content"]
    assert llm.requests[0]["messages"][1]["content"].startswith("Title: Vote\n")
    assert [r["attempt"] for r in llm.requests[4:6]] == [0, 1]  # asked once more, then failed

    dataset_ = load_dataset_dir(out)
    assert [(q.gold_title, q.information_need, q.reference) for q in dataset_.questions] == [
        ("Vote", NEEDS[0], "The Greens"), ("Flood", NEEDS[1], "twelve")]
    failed = [row for row in read_jsonl(out / NEEDS_FILE) if row["outcome"] == FAILED]
    assert len(failed) == 1 and failed[0]["raw"] == ["The flood killed twelve.", '{"question": ']
    assert failed[0]["reason"].startswith("invalid JSON arguments")
    assert failed[0]["usage"] == {"input": 20, "output": 10, "estimated": False}
    assert needs_funnel(out) == [
        {"need": NEEDS[0], "asked": 3, "questions": 1, BLANK: 2, FAILED: 0,
         "failed_by_reason": {}},
        {"need": NEEDS[1], "asked": 3, "questions": 1, BLANK: 1, FAILED: 1,
         "failed_by_reason": {"invalid JSON arguments": 1}}]


def test_a_resume_asks_only_the_pairs_without_a_question_or_blank(tmp_path):
    out = dataset(tmp_path)
    first = ScriptedLLM([question("Q1?"), question("BLANK"), question("BLANK"),
                         "text", "text again",  # disasters x Vote: failed
                         Killed()])   # killed before the last two pairs
    with pytest.raises(Killed):
        generate(first, out)
    assert len(read_jsonl(out / NEEDS_FILE)) == 4
    resumed = ScriptedLLM([question("Q2?"), question("Q3?"), question("Q4?")])
    assert generate(resumed, out) == 4
    assert not resumed.script
    asked = [(r["messages"][0]["content"], r["messages"][1]["content"][:12]) for r in
             resumed.requests]
    assert [need in system for need, (system, _) in zip([NEEDS[1]] * 3, asked)] == [True] * 3
    assert [user for _, user in asked] == ["Title: Vote\n", "Title: Flood", "Title: Flood"]
    funnel = needs_funnel(out)
    assert [entry["asked"] for entry in funnel] == [3, 3]  # the failed pair counted once
    assert funnel[1]["failed"] == 0 and funnel[1]["questions"] == 3


def test_a_request_the_endpoint_refuses_fails_its_pair_and_the_stage_goes_on(tmp_path):
    out = dataset(tmp_path)
    llm = ScriptedLLM([ContextTooLong("too long"), *[question("BLANK")] * 5])
    assert generate(llm, out) == 0
    funnel = needs_funnel(out)
    assert funnel[0]["failed_by_reason"] == {"endpoint error": 1}


def test_per_need_asks_a_seeded_sample_of_chunks(tmp_path):
    out = dataset(tmp_path)
    plan = NeedsPlan(NEEDS, per_need=2, seed=3)
    llm = ScriptedLLM([question(f"Q{i}?") for i in range(4)])
    assert generate(llm, out, plan) == 4
    assert [entry["asked"] for entry in needs_funnel(out)] == [2, 2]
    again = tmp_path / "again"
    again.mkdir()
    (again / "articles.jsonl").write_text((out / "articles.jsonl").read_text())
    generate(ScriptedLLM([question(f"Q{i}?") for i in range(4)]), again, plan)
    sampled = [(r["need_index"], r["title"], r["chunk"]) for r in read_jsonl(out / NEEDS_FILE)]
    assert sampled == [(r["need_index"], r["title"], r["chunk"])
                       for r in read_jsonl(again / NEEDS_FILE)]
    other = {(r["title"], r["chunk"]) for r in read_jsonl(out / NEEDS_FILE)}
    assert other <= {(c.title, c.index) for c in chunks()}
