"""Oracle (section IV, "A_f GT"): the gold article is handed to the answerer.

The upper bound for any retrieval strategy: what the model scores when retrieval is perfect.
The article is the paper's 15,000 characters (`article_cut` when longer), halved to fit the
answering model's window if need be (`chat_fitting`, the rule the judge and the builder use;
`context_cut` records it). An article still too long after the halvings fails the pair. A
general query (no gold article) is answered as the baseline answers it, `gold_article: null`.
"""

from __future__ import annotations

from freshrag.core.types import (
    ARTICLE_CHARS,
    CallShape,
    Declarations,
    Question,
    Step,
    SystemAnswer,
    SystemContext,
)
from freshrag.llm.client import ContextTooLong, chat_fitting
from freshrag.systems.prompts import ANSWER_MAX_TOKENS, ARTICLE_PROMPT, answer_messages
from freshrag.systems.rag import answered, from_steps


class Oracle(Declarations):
    call_shape = CallShape({"answer": (1, 1)})

    def __init__(self, context: SystemContext):
        self.llm = context.llm
        self.articles = context.articles

    def answer(self, question: Question) -> SystemAnswer:
        if question.gold_title is None:  # a general query: no article to hand over
            response = self.llm.chat("answer", answer_messages(question),
                                     max_tokens=ANSWER_MAX_TOKENS)
            return from_steps([answered(response)], {"gold_article": None})
        article = self.articles[question.gold_title]
        try:
            fitted = chat_fitting(self.llm, "answer", article.prompt_text(), lambda text: dict(
                messages=answer_messages(question, ARTICLE_PROMPT.format(article=text)),
                max_tokens=ANSWER_MAX_TOKENS))
        except ContextTooLong as err:
            raise ContextTooLong(f"gold article {article.title!r} {err}") from None
        cut = len(article.full_text()) > ARTICLE_CHARS
        # reading the article costs no call of its own: the answer's call carries it
        return from_steps([Step("read", title=article.title), answered(fitted.response)],
                          {"article_cut": cut, "context_cut": fitted.cut})
