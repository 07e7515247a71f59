"""`freshrag serve`: the embedded llama.cpp server (SmolLM2-135M-Instruct) in the foreground, for
other tools or other freshrag commands to share (docs/running.md)."""

from __future__ import annotations

import argparse

from freshrag.cli.options import add_command
from freshrag.cli.values import whole

NAME = "serve"
HELP = "run the embedded llama.cpp server in the foreground"


DESCRIPTION = ("Starts the embedded server every role uses by default and keeps it running until "
               "Ctrl-C, so that several freshrag commands (or other tools) share one loaded "
               "model: point them at it with --base-url or FRESHRAG_BASE_URL.")
EXAMPLES = ("freshrag serve --port 8080",
            "freshrag run --base-url http://127.0.0.1:8080/v1 --model smollm2-135m-instruct "
            "--limit 3 --out results/served")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    p.add_argument_group("server").add_argument(
        "--port", type=whole(1, 65_535), help="port on 127.0.0.1 (default: a free one)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.llm.local_server import LocalServer, LocalServerError

    with LocalServer(port=args.port) as server:
        print(f"serving SmolLM2-135M-Instruct at {server.base_url} (Ctrl-C stops it)\n"
              f"point freshrag at it with: export FRESHRAG_BASE_URL={server.base_url}", flush=True)
        server.wait()
    raise LocalServerError(server.death())  # Ctrl-C ends serve by KeyboardInterrupt, not here
