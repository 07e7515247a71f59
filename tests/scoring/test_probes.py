"""Judge probes: made-up answers from the dataset itself, and the verdict on the judge."""

import random

import pytest

from freshrag.cli.main import main
from freshrag.core.config import LLMSettings, RoleConfig
from freshrag.core.dataset import example_dir, load_dataset_dir
from freshrag.core.types import Article, Grade
from freshrag.llm.client import LLMClient
from freshrag.scoring.probes import (
    ABSTAIN,
    closest_sentences,
    discrimination,
    make_probes,
    most_distant_article,
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


def test_a_working_judge_passes_the_probes():
    with FakeOpenAIServer(reply=discerning_judge) as server:
        verdict = probe_judge(judge_client(server), EXAMPLE.questions, EXAMPLE.articles, k=6)
        assert server.calls == 18  # three probes a question
    assert verdict["informative"] is True
    assert verdict["fields"]["truthfulness"]["discrimination"] == 1.0
    assert verdict["fields"]["relevance"]["discrimination"] == 1.0
    assert verdict["calls"] == 18 and verdict["usage"]["input"] > 0 and verdict["unscored"] == 0


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
    assert verdict["informative"] is False and verdict["unscored"] == 9
    assert verdict["fields"]["truthfulness"] == {"discrimination": None, "interval": None,
                                                 "pairs": 0}


def test_probes_are_seeded_and_made_from_the_dataset():
    probes = make_probes(EXAMPLE.questions, EXAMPLE.articles, k=5, seed=3)
    assert probes == make_probes(EXAMPLE.questions, EXAMPLE.articles, k=5, seed=3)
    assert probes != make_probes(EXAMPLE.questions, EXAMPLE.articles, k=5, seed=4)
    assert [p.kind for p in probes] == ["grounded", "wrong", "abstaining"] * 5
    for grounded, wrong, abstaining in zip(probes[::3], probes[1::3], probes[2::3]):
        gold = EXAMPLE.articles[grounded.question.gold_title]
        assert grounded.answer.split(". ")[0] in gold.content
        assert wrong.answer.split(". ")[0] not in gold.content
        assert abstaining.answer == ABSTAIN


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


def test_an_unscored_probe_is_left_out_of_its_pair():
    grades = {("q1", "grounded"): Grade(5, 5), ("q1", "wrong"): Grade(None, None, "no call"),
              ("q2", "grounded"): Grade(5, 5), ("q2", "wrong"): Grade(1, 5)}
    assert discrimination(grades, "grounded", "wrong", "truthfulness")["pairs"] == 1


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
        assert main(["probe-judge", "--probe-k", "4"]) == status
        assert server.calls == 12
        out = capsys.readouterr().out
        assert said in out and "cost: 12 judge calls (0 from the cache)" in out
        assert main(["probe-judge", "--probe-k", "4"]) == status
        assert server.calls == 12  # the second time, every grade comes from the cache
    assert "sk-probe-key" not in out
