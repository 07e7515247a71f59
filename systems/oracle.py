"""Oracle (section IV, "A_f GT"): the gold article is handed to the answerer.

The upper bound for any retrieval strategy: what the model scores when retrieval is perfect.
"""

from __future__ import annotations

from harness.types import ARTICLE_CHARS, Question, SystemAnswer, SystemContext
from systems.prompts import ANSWER_MAX_TOKENS, ARTICLE_PROMPT, answer_messages


class Oracle:
    def __init__(self, context: SystemContext):
        self.llm = context.llm
        self.articles = context.articles

    def answer(self, question: Question) -> SystemAnswer:
        article = self.articles[question.gold_title]
        prompt = ARTICLE_PROMPT.format(article=article.prompt_text())
        response = self.llm.chat("answer", answer_messages(question, prompt),
                                 max_tokens=ANSWER_MAX_TOKENS)
        cut = len(article.full_text()) > ARTICLE_CHARS
        return SystemAnswer(text=response.text or "", calls=[response], details={"article_cut": cut})
