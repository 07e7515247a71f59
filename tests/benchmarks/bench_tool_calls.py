"""Tool calls and speed of the embedded runtimes side by side, or of any OpenAI-compatible
endpoint: what the embedded runtime was chosen by (docs/design.md#the-embedded-runtime).

    python tests/benchmarks/bench_tool_calls.py [xllamacpp] [llama-cpp-python] [http://HOST/v1]

A runtime's name starts the embedded server on it (FRESHRAG_LOCAL_RUNTIME) as freshrag does; a URL
is used as it is. Prints ONE JSON object, per runtime or endpoint: of 20 requests each, how many
gave a tool call whose arguments are a JSON object when forced (the judge's `submit_grade`) and
with `tool_choice: auto` (the boolean agent's `retrieve`), at temperature 0.7 and 20 seeds; then
prompt tokens/s (8 distinct example articles of about 1,500 tokens, one token generated) and
generation tokens/s (8 replies of up to 128 tokens), at one request per slot.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from freshrag.core.dataset import example_dir, load_dataset_dir  # noqa: E402
from freshrag.llm.local_server import RUNTIME_ENV, RUNTIMES, LocalServer  # noqa: E402
from freshrag.scoring.judge import GRADE_TOOL  # noqa: E402
from freshrag.systems.prompts import RETRIEVE_TOOL  # noqa: E402

REQUESTS = 20
GRADE_ME = [{"role": "system", "content": "Rate the answer by calling submit_grade."},
            {"role": "user", "content": "Query: capital of France? Answer: Paris."}]


def tool_calls(client: openai.OpenAI, forced: bool) -> int:
    made = 0
    for i in range(REQUESTS):
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
        calls = reply.choices[0].message.tool_calls or []
        with contextlib.suppress(ValueError):
            made += bool(calls) and isinstance(json.loads(calls[0].function.arguments), dict)
    return made


def speed(client: openai.OpenAI, concurrency: int, prompt: bool, requests: int = 8) -> float:
    articles = list(load_dataset_dir(example_dir()).articles.values())

    def one(i: int) -> int:
        text = (articles[i % len(articles)].prompt_text()[:6000] if prompt
                else f"Write a long story about bridges, number {i}.")
        usage = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"{i}: {text}"}],
            max_tokens=1 if prompt else 128, temperature=0.8, seed=i).usage
        return usage.prompt_tokens if prompt else usage.completion_tokens

    one(requests)  # warm
    started = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        tokens = sum(pool.map(one, range(requests)))
    return round(tokens / (time.monotonic() - started), 1)


def measure(base_url: str, concurrency: int) -> dict:
    client = openai.OpenAI(base_url=base_url, api_key="none", timeout=600, max_retries=0)
    return {f"forced_tool_calls_of_{REQUESTS}": tool_calls(client, True),
            f"auto_tool_calls_of_{REQUESTS}": tool_calls(client, False),
            "concurrency": concurrency,
            "prompt_tokens_per_s": speed(client, concurrency, True),
            "generated_tokens_per_s": speed(client, concurrency, False)}


def main(targets: list[str]) -> int:
    results = {}
    for target in targets or list(RUNTIMES):
        if target.startswith("http"):
            results[target] = measure(target, 1)
            continue
        os.environ[RUNTIME_ENV] = target
        with LocalServer() as server:
            results[target] = measure(server.base_url, server.concurrency())
        print(f"[bench] {target}: {results[target]}", file=sys.stderr, flush=True)
    print(json.dumps({"cpus": os.cpu_count(), "load_average": os.getloadavg(), **results},
                     indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
