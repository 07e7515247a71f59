"""An OpenAI Agents SDK agent as a freshrag system (docs/own-system.md).

The agent is the SDK's own: an `Agent` with one function tool, `search`, on a Chat Completions
model, run by the SDK's `Runner` for at most `max_steps` turns. Nothing in it knows freshrag but
two links: the model's client has the base URL and key of the run's endpoint for this answer
(`context.endpoint`), so that each of its calls is made by the run's client, cached, capped by
--max-cost and counted; and its tool asks the run's index (`session.search`). Tracing is off,
so nothing goes to OpenAI's trace service. Run it beside naive RAG:

    freshrag run --systems naive,docs/examples/openai_agents_agent.py:AgentsSDKAgent
"""

from __future__ import annotations

import asyncio
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    MaxTurnsExceeded,
    ModelSettings,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
)
from openai import AsyncOpenAI

from freshrag import CallShape, Question, SystemAnswer, SystemContext

INSTRUCTIONS = ("Answer the question from Wikipedia: search for what you need with the search "
                "tool, then answer in one or two sentences. If the extracts do not hold the "
                "answer, say that you do not know.")


class AgentsSDKAgent:
    """An OpenAI Agents SDK agent: the run's answer model, a search tool on the run's index."""

    uses_index = True  # the run builds or opens the retrieval index: context.retriever
    uses_endpoint = True  # its model is called through context.endpoint
    uses_steps = True  # its bound is the run's max_steps, part of the run's identity
    name = "agents-sdk-agent"

    def __init__(self, context: SystemContext):
        self.context = context
        self.max_turns = context.max_steps  # a turn is one model call and the tools it asks
        self.call_shape = CallShape({"answer": (1, context.max_steps)})

    def answer(self, question: Question) -> SystemAnswer:
        assert self.context.endpoint is not None, "run by freshrag, which serves the endpoint"
        with self.context.endpoint("answer") as session:
            @function_tool
            def search(query: str) -> str:
                """Search Wikipedia; the passages that best match the query."""
                return session.search(query)

            try:
                result = session.run(lambda: asyncio.run(self._run(
                    session.base_url, session.api_key, search, question.text)))
            except MaxTurnsExceeded:  # it would search again after its last turn
                return session.answer("", stopped="max_steps")
            return session.answer(str(result.final_output))

    async def _run(self, base_url: str, api_key: str, search: FunctionTool, text: str) -> Any:
        # Runner.run on a loop of its own, and the client closed after it: Runner.run_sync would
        # leave the thread's loop and the client's connections open after each answer
        async with AsyncOpenAI(base_url=base_url, api_key=api_key) as client:
            agent = Agent(name="wikipedia", instructions=INSTRUCTIONS, tools=[search],
                          model=OpenAIChatCompletionsModel(model="freshrag", openai_client=client),
                          model_settings=ModelSettings(max_tokens=256))
            return await Runner.run(agent, text, max_turns=self.max_turns,
                                    run_config=RunConfig(tracing_disabled=True))
