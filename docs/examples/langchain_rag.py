"""A LangChain pipeline as a freshrag system (docs/own-system.md).

The chain is plain LangChain (langchain-core's runnables and prompt template): the question goes
to a retriever and, with the chunks it returns, through a prompt to a chat model. Two adapters
connect it to the run: the retriever step asks the run's index (`context.retriever`), and the
model step calls the run's client (`context.llm`), so that every call is cached, budgeted and
counted per role like a built-in system's. Run it beside naive RAG:

    freshrag run --systems naive,lc=docs/examples/langchain_rag.py:LangChainRag
"""

from __future__ import annotations

from typing import Any

from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from freshrag import LLMResponse, Question, RetrievedChunk, SystemAnswer, SystemContext

PROMPT = ChatPromptTemplate.from_messages([
    ("system", "Answer the question from these Wikipedia extracts, each headed by its title. "
               "If they do not hold the answer, say that you do not know.\n\n{extracts}"),
    ("human", "{question}"),
])
ROLES = {"system": "system", "human": "user", "ai": "assistant"}


class LangChainRag:
    """A LangChain retrieval chain: the run's index, a prompt template, the run's answer model."""

    uses_index = True  # the run builds or opens the retrieval index: context.retriever
    name = "langchain-rag"

    def __init__(self, context: SystemContext):
        self.context = context
        retrieve = RunnableLambda(self._retrieve)
        answer = (RunnableLambda(_prompt_inputs) | PROMPT | RunnableLambda(self._chat))
        self.chain = ({"chunks": retrieve, "question": RunnablePassthrough()}
                      | RunnablePassthrough.assign(response=answer))

    def answer(self, question: Question) -> SystemAnswer:
        result = self.chain.invoke(question.text)
        response: LLMResponse = result["response"]
        chunks: list[RetrievedChunk] = result["chunks"]
        return SystemAnswer(response.text or "", calls=[response], retrievals=1, details={
            "decision": "retrieve",
            "retrieved": [{"title": c.title, "index": c.index, "score": c.score} for c in chunks]})

    def _retrieve(self, query: str) -> list[RetrievedChunk]:
        return self.context.retriever.retrieve(query)

    def _chat(self, prompt: PromptValue) -> LLMResponse:
        messages = [{"role": ROLES[m.type], "content": m.content} for m in prompt.to_messages()]
        return self.context.llm.chat("answer", messages, max_tokens=256)


def _prompt_inputs(state: dict[str, Any]) -> dict[str, str]:
    extracts = "\n\n".join(chunk.text for chunk in state["chunks"])
    return {"extracts": extracts, "question": state["question"]}
