"""Checks a finished run of agents, as issue 38's "done when" asks of the embedded model: every
answer of every system finished (status ok) within its bound, and the HTML viewer shows its steps.

    python tests/benchmarks/check_agent_run.py RUN_DIR

For each row of RUN_DIR/samples.jsonl (epoch 1): its status; its system's model calls (every
role but the judge) against the run's `max_steps`, and their tokens against its `token_budget`;
why it stopped. Then `freshrag report RUN_DIR --html` is written into the run directory and
opened in headless Chromium (Playwright on Debian's chromium, as tests/support/dom.py drives
it); every answer is opened in the viewer, one after another, and its timeline must hold one
item per recorded step, the query of each search step among them.

Prints one line per system (answers, ok, within the bound, stopped, steps per answer, answers
whose timeline matched) and ends with exit status 1 if any answer failed a check.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from freshrag.core.samples import read_samples  # noqa: E402
from tests.support.dom import report_url, viewer_tab  # noqa: E402


def bound_problems(row: dict[str, Any], max_steps: int, budget: int) -> list[str]:
    """Why `row` broke its bound or did not finish (empty: it kept to both)."""
    problems = [] if row["status"] == "ok" else [f"status {row['status']}: {row.get('error')}"]
    own = [call for call in row.get("calls") or [] if call.get("role") != "judge"]
    if len(own) > max_steps:
        problems.append(f"{len(own)} model calls, more than max_steps {max_steps}")
    spent = sum((call.get("usage") or {}).get("input", 0) + (call.get("usage") or {}).get(
        "output", 0) for call in own)
    if spent > budget:
        problems.append(f"{spent:,} tokens, more than the budget of {budget:,}")
    if row.get("stopped") not in (None, "max_steps", "budget"):
        problems.append(f"stopped {row.get('stopped')!r}")
    if not row.get("steps"):
        problems.append("no steps recorded")
    return problems


def timeline(tab: Any, row: dict[str, Any]) -> list[str]:
    """The step heads of `row`'s answer as the viewer shows them, opened from the list."""
    tab.select_option("#f-system", row["system"])
    tab.fill("#f-search", f"{row['dataset']}/{row['question_id']}")
    rows = tab.locator("#viewer-spacer .vrow")
    if rows.count() != 1:
        return [f"the list shows {rows.count()} answers for it"]
    rows.first.click()
    texts = tab.locator("#viewer-detail .viewer-steps > li").all_inner_texts()
    tab.click("#viewer-close")
    return texts


def viewer_problems(row: dict[str, Any], shown: list[str]) -> list[str]:
    steps = row.get("steps") or []
    if len(shown) != len(steps):
        return [f"the timeline shows {len(shown)} steps of {len(steps)}"]
    return [f"step {number}'s query is not shown" for number, (step, text)
            in enumerate(zip(steps, shown), start=1)
            if step["kind"] == "search" and step.get("query")
            and " ".join(step["query"].split())[:40] not in " ".join(text.split())]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    args = parser.parse_args(argv)
    args.run_dir = args.run_dir.resolve()  # the page opens as a file URL
    config = json.loads((args.run_dir / "manifest.json").read_text(encoding="utf-8"))["config"]
    rows = [row for row in read_samples(args.run_dir / "samples.jsonl")
            if row.get("epoch", 1) == 1]
    def key(row: dict[str, Any]) -> tuple[str, str]:
        return row["system"], row["question_id"]

    unbounded = {key(row): problems for row in rows if (problems := bound_problems(
        row, config["max_steps"], config["token_budget"]))}
    with viewer_tab(report_url(args.run_dir)) as tab:
        unshown = {key(row): problems for row in rows
                   if (problems := viewer_problems(row, timeline(tab, row)))}
    by_system: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_system[row["system"]].append(row)
    print(f"{args.run_dir}: max_steps {config['max_steps']}, token budget "
          f"{config['token_budget']:,}")
    print("system      answers  ok  within bound  stopped (max_steps/budget)  steps mean "
          "(max)  timeline shown")
    for system, answers in sorted(by_system.items()):
        steps = [len(row.get("steps") or []) for row in answers]
        stopped = Counter(row.get("stopped") for row in answers)
        within = sum(key(row) not in unbounded for row in answers)
        shown = sum(key(row) not in unshown for row in answers)
        print(f"{system:<11} {len(answers):>7} {sum(r['status'] == 'ok' for r in answers):>3} "
              f"{within:>13}  {stopped['max_steps']:>12}/{stopped['budget']:<13} "
              f"{statistics.mean(steps):>10.2f} ({max(steps)})  {shown:>14}")
    failures = sorted(unbounded.keys() | unshown.keys())
    for system, question in failures:
        problems = unbounded.get((system, question), []) + unshown.get((system, question), [])
        print(f"  {system} {question}: {'; '.join(problems)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
