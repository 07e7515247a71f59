"""One decode rule for text that is not Unicode (docs/faults.md#text-that-is-not-unicode): a
lone surrogate, valid JSON ("\\ud800") but no text UTF-8 holds, becomes U+FFFD wherever JSON is
decoded (core/jsonl.py loads: model replies, service replies, answers files) or written, and a
dataset, whose text is kept exactly, names it with its file and line. The same `loads` bounds
how deeply lists and objects nest."""

import json
from pathlib import Path

import pytest

from freshrag.core.dataset import Dataset, DatasetError, load_dataset
from freshrag.core.jsonl import MAX_DEPTH, JsonlWriter, loads, read_jsonl, replace_jsonl
from freshrag.core.runfiles import CACHE_FILE
from freshrag.core.samples import read_samples
from freshrag.core.textfile import NotUnicode, lone_surrogate, unicode_text
from freshrag.core.types import Article, Question, SystemAnswer
from freshrag.llm.replies import completion_value
from freshrag.run.plan import CallRecorder, answer_and_grade
from freshrag.systems.external.http import HttpSettings, HttpSystem
from tests.support.datasets import write_jsonl
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import ScriptedLLM, ToolReply
from tests.support.runs import run_cli

FFFD = "\ufffd"


@pytest.mark.parametrize("given, made", [
    pytest.param("\ud800", FFFD, id="a-high-surrogate-alone"),
    pytest.param("a\udfffb", f"a{FFFD}b", id="a-low-surrogate-inside"),
    pytest.param("\udc80\ud800", FFFD * 2, id="a-pair-in-the-wrong-order"),
    pytest.param("\U0001F600 and é", "\U0001F600 and é", id="text-that-is-unicode-unchanged"),
    pytest.param(["x", ["\ud83d"]], ["x", [FFFD]], id="in-nested-lists"),
    pytest.param({"k\udc00": {"v": "\ud801!"}}, {f"k{FFFD}": {"v": f"{FFFD}!"}}, id="in-keys"),
    pytest.param([1, None, True, 2.5], [1, None, True, 2.5], id="no-text-at-all"),
])
def test_each_lone_surrogate_becomes_the_replacement_character(given, made):
    assert unicode_text(given) == made
    assert lone_surrogate(made) is None
    json.dumps(made, ensure_ascii=False).encode("utf-8")  # now text any UTF-8 file holds


@pytest.mark.parametrize("text, value", [
    pytest.param('"\\ud800"', FFFD, id="escaped-high"),
    pytest.param('{"answer": "Oak\\udc01"}', {"answer": f"Oak{FFFD}"}, id="escaped-low-in-object"),
    pytest.param('["\\ud83d\\ude00"]', ["\U0001F600"], id="an-escaped-pair-is-one-character"),
    pytest.param(b'{"a": "\xed\xa0\x80"}', {"a": FFFD}, id="utf8-encoded-surrogate-in-bytes"),
    pytest.param(b'"\\udbff"', FFFD, id="escaped-in-bytes"),
])
def test_loads_gives_unicode_text(text, value):
    assert loads(text) == value


def test_a_reader_that_keeps_text_exactly_names_the_text_instead():
    with pytest.raises(NotUnicode, match=r"'x\\ud800' holds a lone surrogate"):
        loads('{"title": "x\\ud800"}', exact_text=True)


@pytest.mark.parametrize("levels, refused", [
    pytest.param(MAX_DEPTH, False, id="at-the-bound"),
    pytest.param(MAX_DEPTH + 1, True, id="one-over"),
    pytest.param(900, True, id="under-jsons-own-limit"),
    pytest.param(50_000, True, id="far-over-jsons-own-limit"),
])
def test_nesting_is_bounded_as_a_decode_error(levels, refused):
    text = "[" * levels + "]" * levels
    if refused:
        with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
            loads(text)
    else:
        assert loads(text) is not None
    assert loads('{"list": [' + "[0]," * 500 + "0]}") is not None  # many, side by side


def test_freshrags_own_files_are_read_to_jsons_own_limit():
    assert loads("[" * 500 + "]" * 500, max_depth=None) is not None
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        loads("[" * 5000 + "]" * 5000, max_depth=None)  # a RecursionError no more


@pytest.mark.parametrize("row", [
    pytest.param({"answer": "Oak \ud800"}, id="in-a-value"),
    pytest.param({"details": {"note\udfff": ["\ud800\ud800"]}}, id="in-a-key-and-a-list"),
])
def test_the_writers_never_crash_on_such_text(tmp_path, row):
    writer = JsonlWriter(tmp_path / "rows.jsonl")
    writer.write(row)
    writer.close()
    replace_jsonl(tmp_path / "whole.jsonl", [row])
    for name in ("rows.jsonl", "whole.jsonl"):
        data = (tmp_path / name).read_bytes()
        assert FFFD.encode() in data
        [read] = read_jsonl(tmp_path / name)
        assert lone_surrogate(read) is None and read == unicode_text(json.loads(json.dumps(row)))


def test_a_model_reply_with_lone_surrogates_is_made_unicode_before_it_is_counted():
    reply = {"choices": [{"message": {"content": "Oak\ud800", "tool_calls": [
        {"function": {"name": "submit", "arguments": '{"reason": "x\udc00"}'}}]},
        "logprobs": {"content": [{"token": "\ud83d", "logprob": -0.1, "top_logprobs": []}]}}]}
    request = {"model": "m", "messages": [{"role": "user", "content": "?"}], "logprobs": True}
    value = completion_value(reply, request, 0.1)
    assert value["text"] == f"Oak{FFFD}" and value["tool_arguments"] == '{"reason": "x' + FFFD + '"}'
    assert value["logprobs"][0]["token"] == FFFD
    assert value["usage"]["estimated"]  # counted locally, on text tiktoken can encode


def test_a_service_reply_with_a_lone_surrogate_is_answered():
    body = b'{"answer": "Oak\\ud800 planks", "contexts": ["The weir \xed\xb0\x80."]}'
    with FakeOpenAIServer(services={"/rag": lambda request, headers: {
            "body": body, "content_type": "application/json"}}) as server:
        settings = HttpSettings("mine", f"http://127.0.0.1:{server.port}/rag")
        answer = HttpSystem(None, settings).answer(Question("w1", "Of what?", "Orlen Weir"))
    assert answer.text == f"Oak{FFFD} planks" and answer.details["context"] == f"The weir {FFFD}."


def test_a_systems_answer_with_a_lone_surrogate_is_written_and_read_back(tmp_path):
    question = Question("w1", "What was the Orlen weir rebuilt of?", "Orlen Weir")
    dataset = Dataset("D", [question], {"Orlen Weir": Article("Orlen Weir", "Oak.")},
                      {"questions": Path("q.jsonl")})
    system = type("Mine", (), {"answer": lambda self, q: SystemAnswer(
        "Oak\ud800", details={"decision": "none", "why\udfff": "\ud800"})})()
    llm = ScriptedLLM([ToolReply("submit_grade", '{"truthfulness": 4, "relevance": 4}')])
    row = answer_and_grade(dataset, question, "mine", system, CallRecorder(llm))
    assert row["status"] == "ok"
    writer = JsonlWriter(tmp_path / "samples.jsonl")
    writer.write(row)
    writer.close()
    [read] = read_samples(tmp_path / "samples.jsonl")
    assert read["answer"] == f"Oak{FFFD}" and read["details"][f"why{FFFD}"] == FFFD


PLUGIN = """
from freshrag import SystemAnswer


class Surrogate:
    def __init__(self, context):
        pass

    def answer(self, question):
        return SystemAnswer("Oak\\ud800 planks")
"""


@pytest.mark.parametrize("cache", [pytest.param([], id="cache-on"),
                                   pytest.param(["--no-cache"], id="cache-off")])
def test_a_plugged_in_systems_lone_surrogate_is_graded_with_the_cache_on_or_off(
        tmp_path, fake_server, cache):
    (tmp_path / "mine.py").write_text(PLUGIN)
    server = fake_server()
    code = run_cli(tmp_path, "--systems", f"{tmp_path / 'mine.py'}:Surrogate", "--no-probe",
                   *cache)
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert code == 0 and len(rows) == 3
    assert all(row["status"] == "ok" and row["grade"]["truthfulness"] is not None for row in rows)
    assert all(row["answer"] == f"Oak{FFFD} planks" for row in rows)
    judged = [json.dumps(r["messages"], ensure_ascii=False) for r in server.requests]
    assert all("\ud800" not in text for text in judged) and any(FFFD in t for t in judged)
    assert (tmp_path / CACHE_FILE).exists() == (not cache)


@pytest.mark.parametrize("which, line", [
    pytest.param("questions", '{"title": "Orlen Weir", "question": "Of \\udfffwhat?"}',
                 id="a-question"),
    pytest.param("articles", '{"title": "Orlen\\ud800 Weir", "content": "Oak."}', id="a-title"),
])
def test_a_dataset_names_a_lone_surrogate_by_file_and_line(tmp_path, which, line):
    questions = write_jsonl(tmp_path / "questions.jsonl",
                            [{"title": "Orlen Weir", "question": "Of what?"}])
    articles = write_jsonl(tmp_path / "articles.jsonl",
                           [{"title": "Orlen Weir", "content": "Oak."}])
    path = questions if which == "questions" else articles
    path.write_text(path.read_text() + line + "\n")
    with pytest.raises(DatasetError, match=rf"{path}:2: .* holds a lone surrogate escape"):
        load_dataset(questions, articles)
