"""A new user's first run on the embedded model: how much of it is the judge's probes
(docs/measurements.md#a-first-run).

    python tests/benchmarks/bench_first_run.py [--systems baseline,naive] [--limit 3]

Runs `freshrag run --limit 3 --systems baseline,naive` (`freshrag run --help`'s first example)
as a new user would, in a new directory: no response cache, no kept probe verdict, the embedded
model started by the run. Reads from the run directory the probe pass's own seconds
(`judge-probes.json`) and the pairs' calls, and prints the probes' share of the run's wall time
(the issue's target: under a third) with the load average before and after.

Prints ONE JSON object on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", default="baseline,naive")
    parser.add_argument("--limit", type=int, default=3)
    args = parser.parse_args(argv)
    report: dict = {"cpus": os.cpu_count(), "machine": platform.processor() or platform.machine(),
                    "load_before": [round(x, 2) for x in os.getloadavg()],
                    "command": f"freshrag run --limit {args.limit} --systems {args.systems}"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FRESHRAG_", "OPENAI_"))}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results" / "first"
        command = [sys.executable, "-m", "freshrag", "run", "--limit", str(args.limit),
                   "--systems", args.systems, "--out", str(out)]
        print(f"[bench] {' '.join(command[2:])} in {tmp}", file=sys.stderr, flush=True)
        started = time.perf_counter()
        subprocess.run(command, cwd=tmp, env=env, check=True, stdout=sys.stderr)
        wall = time.perf_counter() - started
        probes = json.loads((out / "judge-probes.json").read_text(encoding="utf-8"))
        rows = [json.loads(line) for line in (out / "samples.jsonl").open(encoding="utf-8")]
    report.update({
        "wall_s": round(wall, 1),
        "probe_s": probes["seconds"], "probe_calls": probes["calls"],
        "probe_questions": probes["k"], "probe_input_tokens": probes["usage"]["input"],
        "pairs": len(rows), "pair_calls": sum(len(row["calls"]) for row in rows),
        "pair_input_tokens": sum(usage["input"] or 0 for row in rows
                                 for usage in (row.get("usage") or {}).values()),
        "probe_share": round(probes["seconds"] / wall, 3),
        "target_share_under": round(1 / 3, 3),
        "load_after": [round(x, 2) for x in os.getloadavg()],
    })
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
