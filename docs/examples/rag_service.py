"""A small RAG service behind HTTP, the kind a team deploys, to put under test with freshrag
(docs/own-system.md#a-service-behind-http).

It keeps the articles of a dataset in memory, retrieves the three that share the most words with
the question, and asks an OpenAI-compatible endpoint (FRESHRAG_BASE_URL, FRESHRAG_MODEL,
FRESHRAG_API_KEY) to answer from them. It replies with the answer, the contexts, and the tokens the
endpoint reported:

    python docs/examples/rag_service.py --articles DIR/articles.jsonl --port 8765 &
    freshrag run --dataset DIR --systems naive,svc=http://127.0.0.1:8765/rag

Standard library and the openai SDK only; one request at a time per thread.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import openai

WORD = re.compile(r"\w+")


def load(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def retrieve(articles: list[dict[str, str]], question: str, k: int = 3) -> list[dict[str, str]]:
    asked = set(WORD.findall(question.lower()))
    ranked = sorted(articles, key=lambda a: -len(asked & set(WORD.findall(
        (a["title"] + " " + a["content"]).lower()))))
    return ranked[:k]


def make_handler(articles: list[dict[str, str]], client: openai.OpenAI, model: str) -> type:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            found = retrieve(articles, body["question"])
            extracts = "\n\n".join(f"{a['title']}\n{a['content'][:1500]}" for a in found)
            reply = client.chat.completions.create(model=model, max_tokens=200, messages=[
                {"role": "system", "content": "Answer from these extracts:\n\n" + extracts},
                {"role": "user", "content": body["question"]}])
            usage = reply.usage
            data = json.dumps({
                "answer": reply.choices[0].message.content or "",
                "contexts": [{"title": a["title"], "text": a["content"][:1500]} for a in found],
                "usage": {"input_tokens": usage.prompt_tokens,
                          "output_tokens": usage.completion_tokens} if usage else None,
                "retrievals": 1, "decision": True}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:  # quiet
            pass

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=Path, required=True)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    client = openai.OpenAI(base_url=os.environ["FRESHRAG_BASE_URL"],
                           api_key=os.environ.get("FRESHRAG_API_KEY") or "none")
    handler = make_handler(load(args.articles), client, os.environ.get("FRESHRAG_MODEL", "model"))
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    print(f"serving on http://127.0.0.1:{server.server_address[1]}/rag", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
