"""A multi-article question through the scorers that read its gold articles
(docs/methods.md#multi-article-questions): the judge sees every gold article in hop order, each
cut alike to fit its window, the cut recorded; claims check against all of them; the probes grade
as the run grades; the score pass hands a scorer the whole set."""

from freshrag.core.types import Article, Grade, Question
from freshrag.llm.client import ContextTooLong
from freshrag.scoring import judge, probes
from freshrag.scoring.base import ScoreInput
from freshrag.scoring.claims import Claims
from freshrag.scoring.scorepass import missing_inputs, score_input
from tests.support.fakes import ScriptedLLM, ToolReply

TOO_LONG = ContextTooLong("judge endpoint http://x/v1: HTTP 400: maximum context length")
GRADE = ToolReply("submit_grade", '{"truthfulness": 5, "relevance": 4}')
VELMORA = Article("Velmora", "The Velmora bridge spans the river Tarn. " * 500)  # > 15,000
TARN = Article("Tarn", "The Tarn is 380 km long. " * 200)  # 5,000 characters
# nearer the first gold article than the second is: the wrong probe's article only if the
# second is left out
OSK = Article("Osk", "Osk is a town by the Velmora bridge. " * 20)
QUESTION = Question("m1", "How long is the river the Velmora bridge spans?", "Velmora",
                    gold_titles=("Velmora", "Tarn"), hops=2, multihop="bridge")
ARTICLES = {a.title: a for a in (VELMORA, TARN, OSK)}


def user_text(request):
    return request["messages"][-1]["content"]


def articles_sent(request):
    """The texts after each article mark of the judge's user message, in order."""
    return user_text(request).split(judge.ARTICLE_MARK)[1:]


def test_the_judge_sees_every_gold_article_in_hop_order_with_its_prompt():
    llm = ScriptedLLM([GRADE])
    grade, _ = judge.grade(llm, QUESTION, "380 km.", [VELMORA, TARN])
    assert grade.scored and grade.context_cut is None
    sent = articles_sent(llm.requests[0])
    assert sent == [VELMORA.prompt_text(), TARN.prompt_text()]
    assert llm.requests[0]["messages"][0]["content"] == judge.ARTICLES_JUDGE_PROMPT


def test_the_judge_cuts_each_gold_article_alike_to_fit_and_records_the_cut():
    llm = ScriptedLLM([TOO_LONG, TOO_LONG, GRADE])
    grade, calls = judge.grade(llm, QUESTION, "380 km.", [VELMORA, TARN])
    longest = len(VELMORA.prompt_text())  # 15,000: the bound starts at the longest
    assert [[len(text) for text in articles_sent(r)] for r in llm.requests] == [
        [longest, len(TARN.prompt_text())],
        [longest // 2, len(TARN.prompt_text())],  # the short one whole while it fits the bound
        [longest // 4, longest // 4]]
    assert all(text.startswith(title) for text, title in zip(articles_sent(llm.requests[2]),
                                                             ("Velmora", "Tarn")))
    assert grade.context_cut == {"chars": longest // 4, "halvings": 2} and len(calls) == 1


def test_a_gold_set_the_judge_cannot_take_is_unscored_naming_the_articles():
    grade, _ = judge.grade(ScriptedLLM([TOO_LONG] * 3), QUESTION, "380 km.", [VELMORA, TARN])
    assert grade.unscored_reason.startswith("articles too long for the judge model's context")


def test_one_article_is_graded_as_before():
    llm = ScriptedLLM([GRADE])
    one = Question("q1", "What does the bridge span?", "Velmora")
    judge.grade(llm, one, "The Tarn.", VELMORA)
    assert llm.requests[0]["messages"] == judge.judge_messages(one, "The Tarn.",
                                                               VELMORA.prompt_text())
    assert llm.requests[0]["messages"][0]["content"] == judge.JUDGE_PROMPT
    assert user_text(llm.requests[0]).endswith("\n\nWikipedia article:\n" + VELMORA.prompt_text())


def test_the_judge_scorer_grades_against_the_whole_set():
    llm = ScriptedLLM([GRADE])
    item = ScoreInput(QUESTION, "380 km.", article=VELMORA, articles=(VELMORA, TARN))
    assert judge.Judge().score(llm, item).status == "scored"
    assert len(articles_sent(llm.requests[0])) == 2


def row(**extra):
    return {"question_id": "m1", "question": QUESTION.text, "gold_title": "Velmora",
            "gold_titles": ["Velmora", "Tarn"], "hops": 2, "multihop": "bridge",
            "system": "oracle", "status": "ok", "answer": "380 km.", "retrievals": 0,
            "usage": {}, "grade": None, **extra}


def test_the_score_pass_hands_a_scorer_every_gold_article_and_needs_each():
    item = score_input(row(), ARTICLES, 0)
    assert item.question == QUESTION
    assert item.article == VELMORA and item.gold_articles() == (VELMORA, TARN)
    one = score_input(row(gold_titles=None, hops=None, multihop=None), ARTICLES, 0)
    assert one.articles == () and one.gold_articles() == (VELMORA,)
    assert "(e.g. 'Tarn')" in missing_inputs([row()], ["claims"], {"Velmora": VELMORA})
    assert missing_inputs([row()], ["claims"], ARTICLES) is None


def test_claims_check_the_answer_against_every_gold_article():
    llm = ScriptedLLM([ToolReply("submit_statements", '{"statements": ["It is 380 km long."]}'),
                       ToolReply("submit_verdicts", '{"supported": [true]}'),
                       ToolReply("submit_statements", '{"statements": ["The Tarn is 380 km."]}'),
                       ToolReply("submit_verdicts", '{"supported": [true]}')])
    result = Claims().score(llm, ScoreInput(QUESTION, "It is 380 km long.", article=VELMORA,
                                            articles=(VELMORA, TARN)))
    assert result.metrics == {"claims_precision": 1.0, "claims_recall": 1.0}
    for request in llm.requests[1:3]:  # the support check and the key claims read both
        assert "The Velmora bridge spans" in user_text(request)
        assert "The Tarn is 380 km long." in user_text(request)


def test_the_probes_grade_a_multi_article_question_against_its_whole_set():
    asked = Question("m2", "How long is the Tarn in km?", "Velmora",
                     gold_titles=("Velmora", "Tarn"), hops=2)
    made = probes.make_probes([asked], ARTICLES, k=1)
    grounded = next(p for p in made if p.kind == "grounded")
    wrong = next(p for p in made if p.kind == "wrong")
    assert "380 km" in grounded.answer  # from the second hop, which holds the answer
    assert wrong.answer.startswith("Osk")  # from neither gold article
    llm = ScriptedLLM([GRADE])
    verdict, _ = probes.grade_probe(llm, grounded, ARTICLES)
    assert isinstance(verdict, Grade) and len(articles_sent(llm.requests[0])) == 2
