"""Every workflow from Python, as a notebook runs them (docs/api.md#every-workflow): a dataset
built from a Wikipedia dump, evaluated, scored again and reported, each one call beside the
command of the same name. Endpoints and keys come from freshrag.toml and FRESHRAG_* as for the
commands (tests/test_examples.py points them at its fake server).

Run it as `python docs/examples/services.py DUMP WORKDIR`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import freshrag


def workflows(dump: Path, work: Path) -> dict[str, object]:
    """Each workflow's result, in order: the build's funnel, the run, the score pass, the
    report's printed tables."""
    # `freshrag build --dump DUMP --cutoff 2021-09-30 --out WORK/dataset`
    built = freshrag.build(work / "dataset", dump=[dump], cutoff="2021-09-30")
    # `freshrag run --dataset WORK/dataset --systems baseline,oracle --limit 3 --no-probe`
    run = freshrag.evaluate(work / "dataset", systems="baseline,oracle", out=work / "run",
                            limit=3, probe=None)
    # `freshrag score WORK/run --scorers judge --repeats 2`: the judge twice more, its spread
    scored = freshrag.score(run.out, "judge", repeats=2)
    # `freshrag report WORK/run`
    reported = freshrag.report(run.out)
    return {"funnel": built["funnel"], "run": run, "score": scored, "report": reported}


if __name__ == "__main__":
    results = workflows(Path(sys.argv[1]), Path(sys.argv[2]))
    print(results["report"].printed)  # type: ignore[attr-defined]
