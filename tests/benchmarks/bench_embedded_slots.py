"""The prebuilt embedded runtime's slots: prompt and generation tokens/s with 1, 2 and 4 slots, each
at one request per slot (docs/design.md#parallel-slots-in-the-embedded-server); what
`PARALLEL_SLOTS` in harness/llm/local_server.py was set by.

    python tests/benchmarks/bench_embedded_slots.py [--slots 1 2 4] [--requests 8]

Each setting starts its own embedded server (xllamacpp) as freshrag does, with that many slots,
and measures as tests/benchmarks/bench_demo_floor.py does: distinct example articles of about
1,500 tokens with one token generated (prompt speed), and short prompts with 128 tokens
generated, the end token ignored (generation speed). Prints ONE JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--requests", type=int, default=8)
    args = parser.parse_args(argv)
    from bench_demo_floor import _speed

    from freshrag.llm.local_server import PREBUILT, RUNTIME_ENV, LocalServer

    os.environ[RUNTIME_ENV] = PREBUILT
    results = []
    for slots in args.slots:
        with LocalServer(slots=slots) as server:
            results.append({"slots": slots, "requests_at_once": slots,
                            "prompt_tokens_per_s": _speed(server.base_url, slots, args.requests,
                                                          True),
                            "generated_tokens_per_s": _speed(server.base_url, slots,
                                                             args.requests, False)})
        print(f"[bench] {results[-1]}", file=sys.stderr, flush=True)
    print(json.dumps({"cpus": os.cpu_count(), "load_average": os.getloadavg(),
                      "runs": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
