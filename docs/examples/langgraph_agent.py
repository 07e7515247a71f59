"""A LangGraph ReAct agent as a freshrag system (docs/own-system.md).

The agent is plain LangGraph and langchain-openai: a graph of a chat model that may call one tool,
`search`, and a tool node that runs it, looping until the model answers in text. Nothing in it
knows freshrag but two links: the chat model's base URL and key are those of the run's endpoint
for this answer (`context.endpoint`), so that each of its calls is made by the run's client,
cached, capped by --max-cost and counted; and its tool asks the run's index
(`session.search`). Run it beside naive RAG:

    freshrag run --systems naive,docs/examples/langgraph_agent.py:LangGraphAgent
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.errors import GraphRecursionError
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from freshrag import CallShape, Question, SystemAnswer, SystemContext

PROMPT = ("Answer the question from Wikipedia: search for what you need with the search tool, "
          "then answer in one or two sentences. If the extracts do not hold the answer, say "
          "that you do not know.")


class LangGraphAgent:
    """A LangGraph ReAct agent: the run's answer model, a search tool on the run's index."""

    uses_index = True  # the run builds or opens the retrieval index: context.retriever
    uses_endpoint = True  # its model is called through context.endpoint
    uses_steps = True  # its bound is the run's max_steps, part of the run's identity
    name = "langgraph-agent"

    def __init__(self, context: SystemContext):
        self.context = context
        # a graph step per model call and per tool step after it: max_steps calls at most
        self.recursion_limit = 2 * context.max_steps
        self.call_shape = CallShape({"answer": (1, context.max_steps)})

    def answer(self, question: Question) -> SystemAnswer:
        assert self.context.endpoint is not None, "run by freshrag, which serves the endpoint"
        with self.context.endpoint("answer") as session:
            @tool
            def search(query: str) -> str:
                """Search Wikipedia; the passages that best match the query."""
                return session.search(query)

            model = ChatOpenAI(model="freshrag", base_url=session.base_url,
                               api_key=session.api_key, max_tokens=256)
            agent = react_graph(model, [search])
            messages = [SystemMessage(PROMPT), HumanMessage(question.text)]
            try:
                state = session.run(lambda: agent.invoke(
                    {"messages": messages}, {"recursion_limit": self.recursion_limit}))
            except GraphRecursionError:  # it would search again after its last call
                return session.answer("", stopped="max_steps")
            return session.answer(state["messages"][-1].text)


def react_graph(model: ChatOpenAI, tools: list[Any]) -> Any:
    """The ReAct loop as a LangGraph graph: the model, then its tool calls, until it answers."""

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.bind_tools(tools).invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()
