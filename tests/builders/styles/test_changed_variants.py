"""`--style changed`'s two optional parts: `--false-premise` (a second question per changed fact
that presumes the value then, from a template by the kind of value, tagged `premise: "false"`
and counted in the funnel apart) and `--rewrite-sentences` (the sentences reworded since the
cutoff, rewritten by a scripted builder model as a fact with an old and a new value: a good reply
is a question; a value the sentences do not state, malformed JSON, an empty reply, one value
given twice and a question that states a value are each dropped and counted by reason; a
sentence that did not change is never sent); with both, a sentence's fact has its false-premise
twin too, worded from the subject its question asks for, or from the sentence then."""

from __future__ import annotations

import json

import pytest

from freshrag.builders.styles import changed_sentences as sentences_module
from freshrag.builders.styles.changed import premise_text, sentence_premise_text
from freshrag.builders.styles.changed_sentences import (
    SENTENCES,
    WRITE_FACT,
    changed_sentences,
    rewritten,
)
from freshrag.core.jsonl import read_jsonl
from tests.support.builds import listed_build
from tests.support.changed_pages import CUTOFF, write_pages
from tests.support.fake_openai_server import default_reply
from tests.support.fakes import ScriptedLLM, ToolReply

BEFORE = "The town is a town of 4,812 inhabitants."  # Springfield's sentence at the cutoff
AFTER = "The town is a town of 5,020 inhabitants."  # and in its latest revision


def build(tmp_path, *extra: str) -> tuple[int, object]:
    dump = tmp_path / "history.xml"
    if not dump.exists():
        write_pages(dump)
    out = tmp_path / "changed"
    code = listed_build(["--dump", str(dump), "--history-dump", str(dump), "--style", "changed",
                         "--questions-from", "A_r", "--cutoff", CUTOFF, "--out", str(out),
                         "--questions-per-article", "3", *extra])
    return code, out


def funnel(out) -> dict:
    return json.loads((out / "manifest.json").read_text())["funnel"]["changed"]


# --------------------------------------------------------------------------- false premise


def test_a_false_premise_twin_keeps_the_values_and_revisions_and_is_counted_apart(tmp_path,
                                                                                    fake):
    code, out = build(tmp_path, "--false-premise")
    assert code == 0
    plain, premised = read_jsonl(out / "questions.jsonl")
    assert plain["premise"] == "none" and premised["premise"] == "false"
    assert premised["question"] == "Why has the population total of Springfield stayed at 4,812?"
    assert premised["id"] == f"{plain['id']}-false-premise"
    for key in ("value_then", "value_now", "reference", "then_revision", "now_revision",
                "changed_at", "change", "field"):
        assert premised[key] == plain[key], key
    counted = funnel(out)
    assert counted["questions"] == {"slow": 1} and counted["false_premise"] == {"slow": 1}
    assert "beyond_per_article" not in counted["dropped"]  # the twin is no second field
    assert {tool["function"]["name"] for request in fake.requests
            for tool in request.get("tools") or []} == {"report_recency"}  # stage A_f's only


def test_without_the_option_there_is_no_false_premise_question(tmp_path, fake):
    code, out = build(tmp_path)
    assert code == 0
    assert [q["premise"] for q in read_jsonl(out / "questions.jsonl")] == ["none"]
    assert "false_premise" not in funnel(out) and "sentences" not in funnel(out)
    assert not (out / SENTENCES).exists()


@pytest.mark.parametrize("then, question", [
    pytest.param("2019-05-01", "Why is the opened of Mill still given as 2019-05-01?", id="date"),
    pytest.param("4,812", "Why has the opened of Mill stayed at 4,812?", id="number"),
    pytest.param("Ann Smith", "Why is the opened of Mill still Ann Smith?", id="name"),
])
def test_the_premise_is_worded_by_the_kind_of_value(then, question):
    assert premise_text("Mill", "opened", then) == question


@pytest.mark.parametrize("option", ["--false-premise", "--rewrite-sentences"])
def test_the_options_with_another_style_are_refused(tmp_path, fake, capsys, option):
    dump = write_pages(tmp_path / "pages.xml")
    code = listed_build(["--dump", str(dump), "--cutoff", CUTOFF, "--out", str(tmp_path / "d"),
                         option])
    assert code != 0 and "go with --style changed" in capsys.readouterr().err


# --------------------------------------------------------------------------- sentences


def test_only_reworded_sentences_are_paired():
    then = ("'''Town''' is a town of 4,812 inhabitants.<ref>Census 2020.</ref> It lies on a "
            "river that floods in spring. Its mayor is [[Ann Smith]] since 2019.\n\n"
            "{{Infobox settlement | population_total = 4,812}} The old mill burned in 1901.")
    now = ("'''Town''' is a town of 5,020 inhabitants.<ref>Census 2023.</ref> It lies on a "
           "river that floods in spring. The football club plays in the second league now. "
           "Its mayor is [[Ann Smith]] since 2019.\n\nThe old mill burned in 1901!")
    found = changed_sentences(then, now)
    assert found["pairs"] == [{"then": "Town is a town of 4,812 inhabitants.",
                               "now": "Town is a town of 5,020 inhabitants."}]
    assert found["compared"] == 4 and found["unchanged"] == 3  # the mill: same words


def test_a_section_rewritten_whole_is_paired_by_position(monkeypatch):
    """Past MAX_BLOCK pairs a block is not compared every sentence with every other."""
    compared = []
    alike = sentences_module._alike
    monkeypatch.setattr(sentences_module, "_alike",
                        lambda one, other: compared.append(1) or alike(one, other))
    then = " ".join(f"In {1900 + i} the town kept {i * 7} horses in its stables." for i in range(60))
    now = " ".join(f"In {1900 + i} the town kept {i * 7 + 1} horses in its stables."
                   for i in range(60))
    found = changed_sentences(then, now)
    assert len(found["pairs"]) == 60 and found["unchanged"] == 0
    assert found["pairs"][59] == {"then": "In 1959 the town kept 413 horses in its stables.",
                                  "now": "In 1959 the town kept 414 horses in its stables."}
    assert len(compared) == 60  # one comparison a sentence, not 60 x 60


def fact(question="What is the current number of inhabitants of Town?", then="4,812",
         now="5,020") -> ToolReply:
    return ToolReply(WRITE_FACT, json.dumps({"question": question, "value_then": then,
                                             "value_now": now}))


PAIR = {"title": "Town", "then": BEFORE, "now": AFTER, "then_revision": {"id": 1},
        "now_revision": {"id": 2}}


@pytest.mark.parametrize("script, outcome, detail", [
    pytest.param([fact()], "kept", None, id="good"),
    pytest.param([fact(then="4,900")], "value_not_in_sentence", "value_then '4,900'",
                 id="value-absent"),
    pytest.param([ToolReply(WRITE_FACT, '{"question": "What')] * 2, "reply_unparsed",
                 "invalid JSON", id="malformed-json"),
    pytest.param([""] * 2, "no_reply", "no write_changed_fact call", id="empty-reply"),
    pytest.param([ToolReply(WRITE_FACT, json.dumps({"question": "What?"}))] * 2,
                 "reply_unparsed", "value_then is 'None'", id="a-field-missing"),
    pytest.param([fact(then="5,020")], "value_not_in_sentence", "value_then", id="value-swapped"),
    pytest.param([fact(question="Is the number of inhabitants of Town 5,020?")],
                 "question_states_a_value", "the value now", id="question-gives-answer"),
])
def test_each_reply_is_kept_or_dropped_with_its_reason(script, outcome, detail):
    llm = ScriptedLLM(script)
    line = rewritten(llm, PAIR, "2023-06-30")
    assert not llm.script  # a reply that is no call was asked once more
    assert line["outcome"] == outcome
    assert (line["detail"] is None) if detail is None else (detail in line["detail"])
    assert line["raw"] == [reply.arguments if isinstance(reply, ToolReply) else reply
                           for reply in script]
    sent = llm.requests[0]["messages"][-1]["content"]
    assert BEFORE in sent and AFTER in sent and llm.requests[0]["role"] == "builder"
    if outcome == "kept":
        assert (line["value_then"], line["value_now"]) == ("4,812", "5,020")


def test_the_same_value_twice_is_dropped():
    pair = {**PAIR, "then": "The town has 4,812 inhabitants.",
            "now": "The town has 4812 inhabitants, a census says."}
    line = rewritten(ScriptedLLM([fact(now="4812")]), pair, "2023-06-30")
    assert line["outcome"] == "same_value"


class Writer:
    """The fake builder model: `write_changed_fact` answered by `fact_reply`, the rest by
    default; it remembers the sentences it was sent."""

    def __init__(self, fact_reply: dict):
        self.fact_reply, self.sent = fact_reply, []

    def __call__(self, request):
        if request.get("tools") and request["tools"][0]["function"]["name"] == WRITE_FACT:
            self.sent.append(request["messages"][-1]["content"])
            return self.fact_reply
        return default_reply(request)


GOOD = {"tool_call": {"name": WRITE_FACT, "arguments": json.dumps(
    {"question": "How many people live in Springfield?", "value_then": "4,812",
     "value_now": "5,020"})}}


def test_a_reworded_sentence_becomes_a_question_and_the_unchanged_are_never_sent(tmp_path,
                                                                                 fake_server):
    writer = Writer(GOOD)
    fake_server(reply=writer)
    code, out = build(tmp_path, "--rewrite-sentences")
    assert code == 0
    [sent] = writer.sent  # Shelbyville's and Ogdenville's sentences did not change
    assert "Subject: Springfield" in sent and BEFORE in sent and AFTER in sent
    field, sentence = read_jsonl(out / "questions.jsonl")
    assert field["field"] == "population_total"
    assert sentence["field"] == "sentence" and sentence["title"] == "Springfield"
    assert (sentence["question"], sentence["value_then"], sentence["value_now"],
            sentence["reference"]) == ("How many people live in Springfield?", "4,812", "5,020",
                                       "5,020")
    assert (sentence["sentence_then"], sentence["sentence_now"]) == (BEFORE, AFTER)
    assert sentence["premise"] == "none"  # no twin without --false-premise
    assert sentence["then_revision"] == field["then_revision"]
    assert sentence["now_revision"] == field["now_revision"]
    counted = funnel(out)
    assert counted["sentences"] == {"compared": 51, "unchanged": 50, "reworded": 1, "sent": 1,
                                    "beyond_per_article": 0, "kept": 1, "dropped": {}}
    assert counted["questions"] == {"slow": 1}  # the sentence's question is counted apart

    again = listed_build(["--dump", str(tmp_path / "history.xml"), "--history-dump",
                          str(tmp_path / "history.xml"), "--style", "changed", "--questions-from",
                          "A_r", "--cutoff", CUTOFF, "--out", str(out), "--questions-per-article",
                          "3", "--rewrite-sentences", "--stage", "questions"])
    assert again == 0 and len(writer.sent) == 1  # a pair written is not sent again


def test_a_reply_whose_value_the_sentences_lack_is_a_counted_drop(tmp_path, fake_server):
    bad = {"tool_call": {"name": WRITE_FACT, "arguments": json.dumps(
        {"question": "How many people live in Springfield?", "value_then": "4,900",
         "value_now": "5,020"})}}
    fake_server(reply=Writer(bad))
    code, out = build(tmp_path, "--rewrite-sentences")
    assert code == 0  # the infobox's question is still there
    assert [q["field"] for q in read_jsonl(out / "questions.jsonl")] == ["population_total"]
    assert funnel(out)["sentences"]["dropped"] == {"value_not_in_sentence": 1}
    [line] = read_jsonl(out / SENTENCES)
    assert line["outcome"] == "value_not_in_sentence" and line["raw"]


def test_the_dry_run_counts_the_sentence_calls_the_build_then_makes(tmp_path, fake_server,
                                                                   capsys):
    writer = Writer(GOOD)
    server = fake_server(reply=writer)
    for stage in ("A_r", "facts", "A_d"):
        assert build(tmp_path, "--rewrite-sentences", "--stage", stage)[0] == 0
    capsys.readouterr()
    assert build(tmp_path, "--rewrite-sentences", "--dry-run")[0] == 0
    said = capsys.readouterr().out
    [builder] = [line for line in said.splitlines() if line.startswith("| builder |")]
    assert builder.split("|")[3].strip() == "2", said  # A_f's classifier and the one pair
    assert not server.requests and not writer.sent
    assert build(tmp_path, "--rewrite-sentences")[0] == 0
    assert (len(server.requests), len(writer.sent)) == (2, 1), server.requests


# --------------------------------------------------------------------------- both options


@pytest.mark.parametrize("question, then, twin", [
    pytest.param("What is the current number of inhabitants of Town?", "4,812",
                 "Why has the number of inhabitants of Town stayed at 4,812?", id="number"),
    pytest.param("Who is the mayor of Town now?", "Ann Smith",
                 "Why is the mayor of Town still Ann Smith?", id="name"),
    pytest.param("What is the  opening date of the  Town Mall?", "2019-05-01",
                 "Why is the opening date of the Town Mall still given as 2019-05-01?",
                 id="date"),
    pytest.param("What is Town's latest census count?", "4,812",
                 "Why has Town's latest census count stayed at 4,812?", id="no-article"),
    pytest.param("How many people live in Town?", "4,812",
                 'Why is it still true of Town that "The town is a town of 4,812 '
                 'inhabitants"?', id="no-subject-named"),
])
def test_a_sentence_fact_s_premise_is_worded_by_its_question_or_its_sentence(question, then,
                                                                             twin):
    assert sentence_premise_text("Town", question, BEFORE, then) == twin


NAMED = {"tool_call": {"name": WRITE_FACT, "arguments": json.dumps(
    {"question": "What is the current number of inhabitants of Springfield?",
     "value_then": "4,812", "value_now": "5,020"})}}


def test_with_both_options_a_sentence_fact_has_its_false_premise_twin(tmp_path, fake_server):
    writer = Writer(NAMED)
    fake_server(reply=writer)
    code, out = build(tmp_path, "--rewrite-sentences", "--false-premise")
    assert code == 0 and len(writer.sent) == 1  # the twins ask the model nothing
    field, field_twin, sentence, twin = read_jsonl(out / "questions.jsonl")
    assert (field["premise"], field_twin["premise"]) == ("none", "false")
    assert (sentence["field"], sentence["premise"], twin["premise"]) == ("sentence", "none",
                                                                         "false")
    assert twin["id"] == f"{sentence['id']}-false-premise"
    assert twin["question"] == "Why has the number of inhabitants of Springfield stayed at 4,812?"
    for key in ("title", "field", "value_then", "value_now", "reference", "sentence_then",
                "sentence_now", "then_revision", "now_revision", "revision_id", "change"):
        assert twin[key] == sentence[key], key
    assert (twin["value_then"], twin["reference"]) == ("4,812", "5,020")
    assert twin["then_revision"] == field["then_revision"]
    assert twin["now_revision"] == field["now_revision"]
    counted = funnel(out)
    assert counted["sentences"] == {"compared": 51, "unchanged": 50, "reworded": 1, "sent": 1,
                                    "beyond_per_article": 0, "kept": 1, "false_premise": 1,
                                    "dropped": {}}
    assert counted["questions"] == {"slow": 1} and counted["false_premise"] == {"slow": 1}


def test_a_sentence_fact_dropped_has_no_twin(tmp_path, fake_server):
    bad = {"tool_call": {"name": WRITE_FACT, "arguments": json.dumps(
        {"question": "How many people live in Springfield?", "value_then": "4,900",
         "value_now": "5,020"})}}
    fake_server(reply=Writer(bad))
    code, out = build(tmp_path, "--rewrite-sentences", "--false-premise")
    assert code == 0
    assert [(q["field"], q["premise"]) for q in read_jsonl(out / "questions.jsonl")] == [
        ("population_total", "none"), ("population_total", "false")]
    assert "false_premise" not in funnel(out)["sentences"]
