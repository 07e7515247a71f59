"""Start-up time of the `freshrag` command: `freshrag --help` and `freshrag COMMAND --help` for
every command, each run several times in a new process (docs/measurements.md).

    python tests/benchmarks/bench_cli_startup.py [--runs N] [--importtime [N]]

Prints ONE JSON object and never fails because the target is missed: per invocation, the median
and the slowest wall time of the runs (Python's own start included) and whether the median is
under the target of 0.3 s. With --importtime, also the N imports of `freshrag --help` that took
longest (`python -X importtime`): the top-level packages by their cumulative time, and any module
by its own time. The command runs as `python -m freshrag` with this interpreter, so that the
installed freshrag is the one measured whatever is first on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from freshrag.cli.main import parser as freshrag_parser  # noqa: E402

TARGET_S = 0.3


def commands() -> list[str]:
    [sub] = [action for action in freshrag_parser()._actions
             if isinstance(action, argparse._SubParsersAction)]
    return list(sub.choices)


def wall_times(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "freshrag", *argv], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return times


def import_offenders(top: int) -> dict[str, list[dict[str, object]]]:
    """The slowest imports of `freshrag --help`, from `python -X importtime`'s lines
    (`import time: SELF | CUMULATIVE | NAME`, microseconds, the name indented by depth)."""
    stderr = subprocess.run([sys.executable, "-X", "importtime", "-m", "freshrag", "--help"],
                            check=True, capture_output=True, text=True).stderr
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cumulative, name = line.removeprefix("import time:").split("|")
        rows.append({"module": name.strip(), "self_ms": round(int(own) / 1000, 1),
                     "cumulative_ms": round(int(cumulative) / 1000, 1)})
    packages = [row for row in rows if "." not in row["module"]]
    return {"packages_by_cumulative": sorted(packages, key=lambda r: -r["cumulative_ms"])[:top],
            "modules_by_self": sorted(rows, key=lambda r: -r["self_ms"])[:top]}


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--runs", type=int, default=7, help="runs of each invocation (default: 7)")
    options.add_argument("--importtime", type=int, nargs="?", const=15, metavar="N",
                         help="also list the N slowest imports of `freshrag --help` (default N: 15)")
    args = options.parse_args()
    results = {}
    for argv in [["--help"]] + [[command, "--help"] for command in commands()]:
        times = wall_times(argv, args.runs)
        median = statistics.median(times)
        results["freshrag " + " ".join(argv)] = {
            "median_s": round(median, 3), "max_s": round(max(times), 3), "met": median < TARGET_S}
        print(f"freshrag {' '.join(argv)}: {median:.3f} s", file=sys.stderr)
    report = {
        "command": " ".join(["python tests/benchmarks/bench_cli_startup.py", *sys.argv[1:]]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_average": [round(load, 2) for load in os.getloadavg()]},
        "runs": args.runs, "target_s": TARGET_S,
        "all_met": all(result["met"] for result in results.values()), "invocations": results,
    }
    if args.importtime:
        report["importtime"] = import_offenders(args.importtime)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
