"""Tool calls and throughput of an OpenAI-compatible endpoint: what the embedded runtime was
chosen by (docs/design.md#the-embedded-runtime).

    python tests/benchmarks/bench_tool_calls.py http://127.0.0.1:PORT/v1

Prints JSON: of 5 requests each, how many gave a tool call when forced (the judge's
`submit_grade`) and with `tool_choice: auto` (a boolean `retrieve`, as the boolean agent asks),
both at temperature 0.7 and five seeds,
and output tokens per second for 8 requests of 64 tokens at concurrency 1 and 4.
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from freshrag.scoring.judge import GRADE_TOOL  # noqa: E402
from freshrag.systems.prompts import RETRIEVE_TOOL  # noqa: E402

GRADE_ME = [{"role": "system", "content": "Rate the answer by calling submit_grade."},
            {"role": "user", "content": "Query: capital of France? Answer: Paris."}]


def tool_calls(client: openai.OpenAI, forced: bool) -> int:
    made = 0
    for i in range(5):
        if forced:
            reply = client.chat.completions.create(
                model="m", messages=GRADE_ME, tools=[GRADE_TOOL], max_tokens=128, seed=i,
                temperature=0.7,
                tool_choice={"type": "function", "function": {"name": "submit_grade"}})
        else:
            question = f"Who won the 2026 Hessary Robotics Challenge? ({i})"
            reply = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": question}],
                tools=[RETRIEVE_TOOL], tool_choice="auto", max_tokens=128, seed=i,
                temperature=0.7)
        made += bool(reply.choices[0].message.tool_calls)
    return made


def throughput(client: openai.OpenAI, concurrency: int, requests: int = 8) -> float:
    def one(i: int) -> int:
        prompt = f"Write two sentences about bridges, number {i}."
        return client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": prompt}], max_tokens=64,
            temperature=0).usage.completion_tokens

    started = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        tokens = sum(pool.map(one, range(requests)))
    return round(tokens / (time.monotonic() - started), 1)


if __name__ == "__main__":
    client = openai.OpenAI(base_url=sys.argv[1], api_key="none", timeout=600)
    print(json.dumps({"forced_tool_calls_of_5": tool_calls(client, True),
                      "auto_tool_calls_of_5": tool_calls(client, False),
                      "output_tok_per_s": {c: throughput(client, c) for c in (1, 4)}}, indent=2))
