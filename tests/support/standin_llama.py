"""A stand-in for the embedded llama.cpp server, run as its own process by LocalServer's tests.

`python tests/support/standin_llama.py PORT MODE`. Both modes list a model at `GET /v1/models`, as a
llama.cpp server does as soon as it has loaded its file. `crash` then dies by SIGSEGV on the
first completion, as a library compiled for another CPU does (a general protection fault);
`serve` answers every completion with a short text and its usage, and a forced tool call with
the call; `text` answers even a forced tool call with text, as a runtime without tool calls does.
"""

import json
import os
import signal
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self._send({"object": "list", "data": [{"id": "standin", "object": "model"}]})

    def do_POST(self):  # noqa: N802
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if MODE == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        message = {"role": "assistant", "content": "Hello."}
        if MODE == "serve" and isinstance(request.get("tool_choice"), dict):
            name = request["tool_choice"]["function"]["name"]
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "t1", "type": "function",
                 "function": {"name": name, "arguments": '{"ok": true}'}}]}
        self._send({"id": "c1", "object": "chat.completion", "created": 0, "model": "standin",
                    "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})

    def _send(self, payload):
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    PORT, MODE = int(sys.argv[1]), sys.argv[2]
    print(f"stand-in llama server on port {PORT}, mode {MODE}", flush=True)
    HTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
