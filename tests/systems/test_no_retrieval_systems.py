from freshrag.core.types import Article, Question, SystemContext, Usage
from freshrag.systems import SYSTEMS
from tests.support.fakes import ScriptedLLM

ARTICLES = {"Velmora": Article("Velmora", "The Velmora bridge has nine spans. " * 600)}
QUESTION = Question("q1", "How many spans does the Velmora bridge have?", "Velmora")


def answer_with(name: str):
    llm = ScriptedLLM(["Nine."], usage=Usage(40, 3))
    answer = SYSTEMS[name](SystemContext(llm=llm, articles=ARTICLES)).answer(QUESTION)
    return answer, llm.requests


def test_baseline_asks_without_context():
    answer, requests = answer_with("baseline")
    assert answer.text == "Nine." and answer.retrievals == 0
    assert answer.usage_by_role() == {"answer": Usage(40, 3)}
    [request] = requests
    assert request["role"] == "answer" and request["tools"] is None
    assert request["messages"][-1] == {"role": "user", "content": QUESTION.text}
    assert "Velmora bridge has" not in str(request["messages"])


def test_oracle_gets_the_gold_article_cut_to_15000_characters():
    answer, [request] = answer_with("oracle")
    system_prompt = request["messages"][0]["content"]
    assert ARTICLES["Velmora"].prompt_text() in system_prompt
    assert ARTICLES["Velmora"].full_text() not in system_prompt  # longer than the cut
    assert answer.details == {"article_cut": True, "context_cut": None} and answer.retrievals == 0
    assert request["messages"][-1]["content"] == QUESTION.text
