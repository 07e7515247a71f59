"""Benchmark of `freshrag run --dry-run` (docs/measurements.md#cost-estimates): its estimate
beside what the same run then spends, on the example set with the embedded model.

    python tests/benchmarks/bench_estimate.py [--limit 4] [--systems ...] [--probe-k 3]

Prints ONE JSON object on stdout (the run's own output goes to stderr). Steps, in a fresh
results directory (an empty response cache):

1. `freshrag run ... --dry-run` exactly as a user types it (a subprocess): its table;
2. the same command without `--dry-run` (the embedded llama.cpp server with SmolLM2-135M):
   calls, input and output tokens per role, from every call that reached the server (cache hits
   left out: they are not sent), the judge probes included (judge-probes.json);
3. the estimate again, in process, over the same jobs with no cache but with the output lengths
   the run left in the cache: what a dry run of the next, similar run assumes.

Per role, each estimate's [low, high] beside the actual figure and the actual / estimate ratio
(of the midpoint where there is a range), and the tokenizer the dry run counted each role with:
SmolLM2's own for the embedded model (harness/llm/local_tokens.py), as the server counts, so the
input gap left is the requests the dry run cannot foresee (answers it made up, decisions).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.costs import table  # noqa: E402

SYSTEMS = "baseline,oracle,naive,boolean,advanced"


def parse_table(text: str) -> dict[str, dict[str, list[int]]]:
    """role -> calls / input / output as [low, high], from the printed dry-run table per role."""

    def span(cell: str) -> list[int]:
        parts = [int(p.replace(",", "")) for p in cell.split("–")]
        return parts * (3 - len(parts)) if len(parts) == 1 else parts

    # cells after the role: model, calls, from cache, repeats, input, output, USD, tokenizer
    return {role: {"calls": span(cells[1]), "input": span(cells[4]), "output": span(cells[5]),
                   "tokenizer": cells[7]}
            for role, cells in table(text).items() if not role.startswith("**")}


def uncached_by_role(rows: Path) -> defaultdict[str, dict[str, int]]:
    """Calls sent and tokens reported per role over the `calls` of a JSON Lines file's rows
    (samples.jsonl, scores.jsonl), the ones the cache answered left out."""
    spent: defaultdict[str, dict[str, int]] = defaultdict(
        lambda: {"calls": 0, "input": 0, "output": 0})
    for line in rows.read_text().splitlines():
        for call in json.loads(line)["calls"]:
            if not call["cache_hit"]:
                spent[call["role"]]["calls"] += 1
                spent[call["role"]]["input"] += call["usage"]["input"]
                spent[call["role"]]["output"] += call["usage"]["output"]
    return spent


def actual(run_dir: Path) -> dict[str, dict[str, int]]:
    """Calls sent and tokens reported per role: the pairs' uncached calls and the probes'."""
    spent = uncached_by_role(run_dir / "samples.jsonl")
    probes = run_dir / "judge-probes.json"
    if probes.exists():
        verdict = json.loads(probes.read_text())
        spent["judge"]["calls"] += verdict["calls"] - verdict["cache_hits"]
        spent["judge"]["input"] += verdict["usage"]["input"]
        spent["judge"]["output"] += verdict["usage"]["output"]
    return dict(spent)


def second_estimate(args: argparse.Namespace, out: Path, cache: Path) -> dict[str, dict]:
    """The estimate over the same jobs, no cache, output lengths observed in the run's cache."""
    from freshrag.core.config import load_settings
    from freshrag.core.dataset import example_dir, load_dataset_dir
    from freshrag.cost.estimate import (
        StandInRetriever,
        estimate,
        local_stand_in,
        observed_outputs,
    )
    from freshrag.llm.cache import ResponseCache
    from freshrag.llm.client import LLMClient
    from freshrag.reporting.prices import KNOWN_PRICES
    from freshrag.run.plan import make_plan
    from freshrag.run.runner import RunConfig
    from freshrag.scoring.probes import ProbeSettings
    from freshrag.systems import SYSTEMS as FACTORIES

    settings = load_settings(None)
    warmed = LLMClient(settings, ResponseCache(cache), local=local_stand_in())
    observed = observed_outputs(warmed)
    dataset = load_dataset_dir(example_dir())
    config = RunConfig(out=out, systems=tuple(args.systems.split(",")), limit=args.limit,
                       probe=ProbeSettings(k=args.probe_k))
    jobs = make_plan(dataset, config, [], None).jobs(
        FACTORIES, StandInRetriever(dataset.articles, 1024, 48, 5))
    result = estimate(LLMClient(settings, None, local=local_stand_in()), jobs, KNOWN_PRICES,
                      observed=observed)
    return {"observed_output_means": result["output_from"],
            "roles": {row["role"]: {"calls": row["calls"], "input": row["input_tokens"],
                                    "output": row["output_tokens"]} for row in result["rows"]}}


def compare(estimated: dict[str, dict[str, list[int]]],
            spent: dict[str, dict[str, int]]) -> dict[str, dict]:
    table = {}
    for role in sorted(set(estimated) | set(spent)):
        row = {}
        for measure in ("calls", "input", "output"):
            low, high = estimated.get(role, {}).get(measure, [0, 0])
            real = spent.get(role, {}).get(measure, 0)
            mid = (low + high) / 2
            row[measure] = {"estimate": [low, high], "actual": real,
                            "actual_over_estimate": round(real / mid, 3) if mid else None,
                            "in_range": low <= real <= high}
        table[role] = row
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=4)
    parser.add_argument("--systems", default=SYSTEMS)
    parser.add_argument("--probe-k", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="freshrag-bench-estimate-") as name:
        out = Path(name) / "results" / "example"
        command = [sys.executable, "-m", "freshrag", "run", "--limit", str(args.limit),
                   "--systems", args.systems, "--out", str(out), "--probe-k", str(args.probe_k)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        started = time.monotonic()
        dry = subprocess.run(command + ["--dry-run"], env=env, cwd=name, capture_output=True,
                             text=True, check=True)
        dry_s = time.monotonic() - started
        print(dry.stdout, file=sys.stderr)
        started = time.monotonic()
        subprocess.run(command, env=env, cwd=name, stdout=sys.stderr, check=False)
        run_s = time.monotonic() - started
        spent = actual(out)
        later = second_estimate(args, Path(name) / "results" / "later", out.parent / ".llm-cache.sqlite")
    print(json.dumps({
        "command": " ".join(["freshrag"] + command[3:]),
        "dry_run_s": round(dry_s, 1), "run_s": round(run_s, 1),
        "tokenizers": {role: row["tokenizer"] for role, row in parse_table(dry.stdout).items()},
        "fresh_cache": compare(parse_table(dry.stdout), spent),
        "with_observed_outputs": {"output_means": later["observed_output_means"],
                                  "roles": compare(later["roles"], spent)},
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
