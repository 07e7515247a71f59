"""Oracle (section IV, "A_f GT"): the gold article is handed to the answerer.

The upper bound for any retrieval strategy: what the model scores when retrieval is perfect.
The article is the paper's 15,000 characters (`article_cut` when longer), halved to fit the
answering model's window if need be (`chat_fitting`, the rule the judge and the builder use;
`context_cut` records it). An article still too long after the halvings fails the pair. A
general query (no gold article) is answered as the baseline answers it, `gold_article: null`.
A multi-article question gets all its gold articles in hop order, a read step each, cut alike
(`chat_fitting_all`; docs/methods.md#multi-article-questions).
"""

from __future__ import annotations

from freshrag.core.answering import ANSWER_MAX_TOKENS
from freshrag.core.types import (
    ARTICLE_CHARS,
    CallShape,
    Declarations,
    Question,
    Step,
    SystemAnswer,
    SystemContext,
)
from freshrag.llm.errors import ContextTooLong
from freshrag.llm.fitting import chat_fitting_all
from freshrag.systems.prompts import ARTICLE_PROMPT, ARTICLES_PROMPT, answer_messages
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
        golds = [self.articles[title] for title in question.golds]
        try:
            fitted = chat_fitting_all(self.llm, "answer", [a.prompt_text() for a in golds],
                                      lambda texts: dict(
                messages=answer_messages(question, _prompt(texts)),
                max_tokens=ANSWER_MAX_TOKENS))
        except ContextTooLong as err:
            names = ", ".join(repr(article.title) for article in golds)
            raise ContextTooLong(f"gold article{'s' * (len(golds) > 1)} {names} {err}") from None
        cut = any(len(article.full_text()) > ARTICLE_CHARS for article in golds)
        # reading the articles costs no call of their own: the answer's call carries them
        return from_steps([*(Step("read", title=article.title) for article in golds),
                           answered(fitted.response)],
                          {"article_cut": cut, "context_cut": fitted.cut})


def _prompt(texts: list[str]) -> str:
    """The answer's system prompt: the one gold article, or each of a multi-article set's."""
    if len(texts) == 1:
        return ARTICLE_PROMPT.format(article=texts[0])
    return ARTICLES_PROMPT.format(articles="\n\n".join(texts))
