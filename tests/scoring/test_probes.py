"""Judge probes: made-up answers from the dataset itself, and the verdict on the judge."""

import random

import pytest

from freshrag.cli.main import main
from freshrag.core.config import LLMSettings, RoleConfig
from freshrag.core.dataset import example_dir, load_dataset_dir
from freshrag.core.types import Article, Grade, Question
from freshrag.llm.client import LLMClient
from freshrag.scoring.probes import (
    ABSTAIN,
    CONTEXTS,
    GAP,
    closest_sentences,
    discrimination,
    make_probes,
    most_distant_article,
    near_miss,
    passage,
    probe_judge,
    sentences,
    verdict_lines,
    words,
)
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import discerning_judge, grade_call, use_endpoint

EXAMPLE = load_dataset_dir(example_dir())


def judge_client(server) -> LLMClient:
    roles = {"judge": RoleConfig(model="fake-judge", base_url=server.base_url)}
    return LLMClient(LLMSettings(roles=roles, timeout_s=5, max_attempts=2), backoff_s=0.01)


def test_a_working_judge_passes_the_probes_and_the_near_misses():
    made = make_probes(EXAMPLE.questions, EXAMPLE.articles, k=6)
    misses = [p for p in made if p.kind == "near_miss"]
    assert misses  # the example's answers hold numbers, months or names
    with FakeOpenAIServer(reply=discerning_judge) as server:
        verdict = probe_judge(judge_client(server), EXAMPLE.questions, EXAMPLE.articles, k=6)
        assert server.calls == len(made) == 18 + len(misses)  # three a question, and the misses
    assert verdict["informative"] is True and verdict["k"] == 6
    assert verdict["fields"]["truthfulness"]["discrimination"] == 1.0
    assert verdict["fields"]["relevance"]["discrimination"] == 1.0
    assert verdict["near_miss"]["discrimination"] == 1.0
    assert verdict["near_miss"]["pairs"] == len(misses) == sum(verdict["near_miss"]["changed"].values())
    assert verdict["calls"] == len(made) and verdict["usage"]["input"] > 0
    assert verdict["unscored"] == 0


def word_matching_judge(request):
    """Grades by the share of the answer's words found in the article: it tells an answer about
    another topic from the right one, but not an answer with one fact changed."""
    user = request["messages"][-1]["content"]
    answer = user.split("Chatbot's answer: ", 1)[1].split("\n\nWikipedia article:", 1)[0]
    article = words(user.split("Wikipedia article:\n", 1)[1])
    if answer == ABSTAIN:
        return grade_call(3, 1)
    share = len(words(answer) & article) / max(1, len(words(answer)))
    return grade_call(5, 5) if share > 0.8 else grade_call(1, 4)


def test_a_judge_that_matches_words_passes_the_probes_but_not_the_near_misses():
    with FakeOpenAIServer(reply=word_matching_judge) as server:
        verdict = probe_judge(judge_client(server), EXAMPLE.questions, EXAMPLE.articles, k=6)
    assert verdict["informative"] is True  # the paper's probes cannot tell it from a good judge
    assert verdict["near_miss"]["pairs"] > 0
    assert verdict["near_miss"]["discrimination"] == 0.5  # every near miss graded as the truth
    assert "near misses" in verdict_lines(verdict)[-1]


def test_a_constant_judge_fails_the_probes():
    with FakeOpenAIServer(reply=lambda request: grade_call(4, 4)) as server:
        verdict = probe_judge(judge_client(server), EXAMPLE.questions, EXAMPLE.articles, k=6)
    assert verdict["informative"] is False
    for field in ("truthfulness", "relevance"):
        assert verdict["fields"][field]["discrimination"] == 0.5  # every pair a tie
        low, high = verdict["fields"][field]["interval"]
        assert low == high == 0.5


def test_a_judge_that_scores_nothing_is_not_informative():
    with FakeOpenAIServer(reply=lambda request: {"content": "Looks fine to me."}) as server:
        verdict = probe_judge(judge_client(server), EXAMPLE.questions, EXAMPLE.articles, k=3)
    assert verdict["informative"] is False
    assert verdict["unscored"] == len(make_probes(EXAMPLE.questions, EXAMPLE.articles, k=3))
    assert verdict["fields"]["truthfulness"] == {"discrimination": None, "interval": None,
                                                 "pairs": 0}


def test_probes_are_seeded_and_made_from_the_dataset():
    probes = make_probes(EXAMPLE.questions, EXAMPLE.articles, k=5, seed=3)
    assert probes == make_probes(EXAMPLE.questions, EXAMPLE.articles, k=5, seed=3)
    assert probes != make_probes(EXAMPLE.questions, EXAMPLE.articles, k=5, seed=4)
    by_question = {}
    for probe in probes:
        by_question.setdefault(probe.question.id, []).append(probe)
    assert len(by_question) == 5
    for made in by_question.values():
        assert [p.kind for p in made] in (["grounded", "wrong", "abstaining"],
                                          ["grounded", "wrong", "abstaining", "near_miss"])
        grounded, wrong, abstaining = made[:3]
        gold = EXAMPLE.articles[grounded.question.gold_title]
        assert grounded.answer.split(". ")[0] in gold.content
        assert wrong.answer.split(". ")[0] not in gold.content
        assert abstaining.answer == ABSTAIN
        if len(made) == 4:  # one word of the grounded answer changed, the rest as it was
            miss = made[3]
            before, after = grounded.answer.split(" "), miss.answer.split(" ")
            assert len(before) == len(after)
            assert sum(a != b for a, b in zip(before, after)) == 1
            assert miss.changed in ("number", "month", "name")


@pytest.mark.parametrize("answer, changed, kept", [
    pytest.param("The bridge opened in 1937 with nine spans.", "number", "The bridge opened in ",
                 id="number"),
    pytest.param("It was opened in May by the mayor.", "month", "It was opened in ", id="month"),
    pytest.param("It was designed by Ola Hansen in the north.", "name", "It was designed by ",
                 id="name"),
])
def test_a_near_miss_changes_one_number_month_or_name(answer, changed, kept):
    missed, kind = near_miss(answer, random.Random(1), ["Kettering", "Ostrava"])
    assert kind == changed and missed != answer and missed.startswith(kept)
    assert len(missed.split()) == len(answer.split())
    assert sum(a != b for a, b in zip(missed.split(), answer.split())) == 1


def test_an_answer_with_nothing_to_change_has_no_near_miss():
    assert near_miss("it has nine spans of pale stone.", random.Random(1), ["Ostrava"]) is None


def test_the_grounded_answer_is_the_sentences_closest_to_the_question():
    article = Article("Bridge", "The bridge opened in 2024. It has nine spans.\n\n== History ==\n"
                                "Cats sleep a lot. The spans are made of steel.")
    assert sentences(article) == ["The bridge opened in 2024.", "It has nine spans.",
                                  "Cats sleep a lot.", "The spans are made of steel."]
    assert closest_sentences("How many spans, and of what, does it have?", article) == \
        "It has nine spans. The spans are made of steel."


def test_the_wrong_answer_comes_from_the_article_sharing_fewest_words():
    gold = Article("Bridge", "The river bridge has nine spans. The bridge crosses the river.")
    near = Article("Ferry", "The river ferry crossed before the bridge. It had two decks.")
    far = Article("Cats", "Cats sleep sixteen hours. Kittens purr loudly.")
    articles = {a.title: a for a in (gold, near, far)}
    assert most_distant_article(gold, articles, random.Random(0)) == far
    assert "bridge" in words(gold.content) and "the" not in words(gold.content)


@pytest.mark.parametrize("pairs, expected", [
    pytest.param([(5, 1)] * 4, 1.0, id="all-ordered"),
    pytest.param([(1, 5)] * 4, 0.0, id="all-reversed"),
    pytest.param([(3, 3), (5, 1)], 0.75, id="tie-counts-half"),
])
def test_discrimination_counts_ties_half(pairs, expected):
    grades = {}
    for i, (good, bad) in enumerate(pairs):
        grades[f"q{i}", "grounded"] = Grade(good, 3)
        grades[f"q{i}", "wrong"] = Grade(bad, 3)
    result = discrimination(grades, "grounded", "wrong", "truthfulness")
    assert result["discrimination"] == expected and result["pairs"] == len(pairs)


@pytest.mark.parametrize("unscored_side", ["grounded", "wrong"])
def test_an_unscored_probe_is_left_out_of_its_pair(unscored_side):
    # as the judge leaves one: no scores, the reason, and the raw reply of each attempt
    unscored = Grade(None, None, "no submit_grade call", raw=["Looks fine.", "Looks fine."])
    grades = {("q1", "grounded"): Grade(1, 5), ("q1", "wrong"): Grade(5, 5),  # alone: 0.0
              ("q2", "grounded"): Grade(5, 5), ("q2", "wrong"): Grade(1, 5)}  # alone: 1.0
    grades["q1", unscored_side] = unscored
    result = discrimination(grades, "grounded", "wrong", "truthfulness")
    assert result["pairs"] == 1 and result["discrimination"] == 1.0  # q2's pair alone


def test_the_verdict_warns_below_the_threshold_and_when_probes_were_off():
    fields = {"truthfulness": {"discrimination": 0.5, "interval": [0.5, 0.5], "pairs": 6},
              "relevance": {"discrimination": 0.92, "interval": [0.75, 1.0], "pairs": 6}}
    failing = verdict_lines({"k": 6, "threshold": 0.7, "fields": fields, "informative": False})
    assert failing[0].startswith("WARNING: the judge's scores are not informative")
    assert "truthfulness 0.50 [0.50, 0.50]" in failing[0] and "FRESHRAG_JUDGE_MODEL" in failing[1]
    passing = verdict_lines({"k": 6, "threshold": 0.7, "fields": fields, "informative": True})
    assert len(passing) == 1 and "WARNING" not in passing[0]
    assert "--no-probe" in verdict_lines({"skipped": True})[0]


@pytest.mark.parametrize("reply, status, said", [
    pytest.param(discerning_judge, 0, "the judge tells right from wrong", id="working-judge"),
    pytest.param(lambda request: grade_call(1, 4), 1, "WARNING: the judge's scores are not "
                 "informative", id="constant-judge"),
])
def test_probe_judge_command_exits_by_the_verdict(monkeypatch, tmp_path, capsys, reply, status,
                                                   said):
    monkeypatch.chdir(tmp_path)
    with FakeOpenAIServer(reply=reply) as server:
        use_endpoint(monkeypatch, server.base_url, "sk-probe-key")
        made = len(make_probes(EXAMPLE.questions, EXAMPLE.articles, k=4))
        assert main(["probe-judge", "--probe-k", "4"]) == status
        assert server.calls == made
        out = capsys.readouterr().out
        assert said in out and f"cost: {made} judge calls (0 from the cache)" in out
        assert main(["probe-judge", "--probe-k", "4"]) == status
        assert server.calls == made  # the second time, every grade comes from the cache
    assert "sk-probe-key" not in out


def test_a_passage_keeps_the_first_sentence_and_the_tested_ones_with_their_neighbours():
    article = Article("Bridge", " ".join(f"Sentence {n} is here." for n in range(20)))
    cut = passage(article, "What is sentence eleven?", "Sentence 10 is here. Sentence 11 is here.",
                  around=2)
    assert cut.title == "Bridge"
    assert cut.content == (f"Sentence 0 is here. {GAP} "
                           + " ".join(f"Sentence {n} is here." for n in range(8, 14)))
    # Two tested sentences far apart keep a window each; one at the start needs no gap.
    cut = passage(article, "?", "Sentence 1 is here. Sentence 17 is here.", around=1)
    assert cut.content == (f"Sentence 0 is here. Sentence 1 is here. Sentence 2 is here. {GAP} "
                           "Sentence 16 is here. Sentence 17 is here. Sentence 18 is here.")


def test_a_passage_without_the_tested_sentences_centres_on_the_one_closest_to_the_question():
    article = Article("Bridge", "The bridge is old. Cats sleep. Dogs bark. The spans are steel. "
                                "Birds sing. Fish swim. Trees grow.")
    cut = passage(article, "Of what are the spans?", "not in this article", around=1)
    assert cut.content == f"The bridge is old. {GAP} Dogs bark. The spans are steel. Birds sing."


def test_probes_are_graded_against_the_passage_they_test_unless_told_the_whole_article():
    requests = {}
    for context in CONTEXTS:
        with FakeOpenAIServer(reply=discerning_judge) as server:
            verdict = probe_judge(judge_client(server), EXAMPLE.questions, EXAMPLE.articles,
                                  k=4, context=context)
            requests[context] = [r["messages"][-1]["content"] for r in server.requests]
        assert verdict["context"] == context and verdict["informative"] is True
        assert verdict["near_miss"]["discrimination"] == 1.0  # the passage holds what changed
        requests[context, "input"] = verdict["usage"]["input"]
    made = make_probes(EXAMPLE.questions, EXAMPLE.articles, k=4)
    for probe in made:
        gold = EXAMPLE.articles[probe.question.gold_title]
        (cut,) = probe.evidence
        assert cut.content != gold.content and len(cut.content) < len(gold.content)
        assert sentences(gold)[0] in cut.content
        if probe.kind == "grounded":  # each of its sentences, with what lies between them
            assert all(part in cut.content for part in sentences(Article("", probe.answer)))
    assert any(gold.content in text for text in requests["article"]
               for gold in EXAMPLE.articles.values())
    assert not any(gold.content in text for text in requests["passage"]
                   for gold in EXAMPLE.articles.values())
    assert requests["passage", "input"] < requests["article", "input"]


def test_a_multi_article_question_has_a_passage_of_each_gold_article():
    first = Article("Bridge", "The Bridge spans the Oder. " + "Filler text here. " * 10
                    + "It was designed by Ola Hansen.")
    second = Article("Ola Hansen", "Ola Hansen is an architect. " + "Other words here. " * 10
                     + "Hansen was born in 1961 in Bergen.")
    other = Article("Cats", "Cats sleep a lot. Cats purr when content.")
    question = Question("q1", "When was the designer of the Bridge born?", "Bridge",
                        gold_titles=("Bridge", "Ola Hansen"), hops=2)
    articles = {a.title: a for a in (first, second, other)}
    (grounded, *_) = make_probes([question], articles, k=1)
    assert [a.title for a in grounded.evidence] == ["Bridge", "Ola Hansen"]
    assert all(len(cut.content) < len(whole.content)
               for cut, whole in zip(grounded.evidence, (first, second)))
    assert "born in 1961" in grounded.evidence[1].content


def test_an_unknown_probe_context_is_refused_by_name():
    with pytest.raises(ValueError, match="probe context: expected one of passage, article"):
        make_probes(EXAMPLE.questions, EXAMPLE.articles, k=1, context="summary")
