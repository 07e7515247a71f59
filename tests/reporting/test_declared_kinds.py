"""A system's declared kind (outcomes.kind, docs/own-system.md) is read from its run's manifest
once, when the report loads the run (loading.load_summaries puts it on each answer as
`system_kind`), and never again by a table: as the manifest records it, else as a built-in
system declares it, else "fixed". A whole report reads each manifest once: the judge's checks,
the notes and the HTML page take the manifests read at load (loading.read_runs)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from freshrag.core import manifest
from freshrag.core.samples import read_summaries
from freshrag.reporting import analysis, summary_table
from freshrag.reporting.identity import group_rows
from freshrag.reporting.loading import load_summaries
from freshrag.reporting.outcomes import decides, kind, multi_step
from freshrag.workflows.report import report
from tests.support.runs import sample, write_run

SYSTEMS = ["baseline", "boolean", "mine", "theirs"]  # two built-ins, two of the user's


def rows(systems: list[str]) -> list[dict]:
    return [sample(f"q{n:02d}", system, truth=1 + (n * len(system)) % 5, retrieved=n % 2 == 0)
            for n in range(1, 13) for system in systems]


@pytest.fixture
def runs(tmp_path) -> tuple[Path, Path]:
    """A run whose manifest records its systems' kinds, and one from before the record."""
    return (write_run(tmp_path / "now", rows(SYSTEMS), {
                "systems": SYSTEMS,
                "system_kinds": {"baseline": "fixed", "boolean": "decides", "mine": "agent",
                                 "theirs": "decides"}}),
            write_run(tmp_path / "before", rows(SYSTEMS), {"systems": SYSTEMS}))


@pytest.fixture
def reads(monkeypatch) -> Counter:
    """Every read of a manifest by any of freshrag's modules, counted by directory."""
    counted: Counter = Counter()
    original = manifest.read_manifest

    def counting(run_dir: Path):
        counted[Path(run_dir).name] += 1
        return original(run_dir)

    for name, module in list(sys.modules.items()):
        if name.startswith("freshrag") and getattr(module, "read_manifest", None) is original:
            monkeypatch.setattr(module, "read_manifest", counting)
    return counted


def test_the_report_reads_each_manifest_once_whatever_its_tables_ask(runs, reads):
    answers = load_summaries(list(runs))
    assert reads == {"now": 1, "before": 1}
    analysis.analyse(answers)  # the decisions against need, the routers: each asks the kinds
    summary_table.summarise(answers)
    assert reads == {"now": 1, "before": 1}


def test_a_whole_report_reads_each_manifest_once(runs, reads, tmp_path):
    """The printed report, analysis.json and the HTML page: the judge's checks and the notes
    (both from the manifests) among them, the page's answers read whole."""
    now, before = runs
    stopped = json.loads((now / "manifest.json").read_text(encoding="utf-8"))
    (now / "manifest.json").write_text(json.dumps({
        **stopped, "capped": {"max_cost": 1.0, "spent": 1.25},
        "llm": {"roles": {"judge": {"model": "the-judge"}}}}), encoding="utf-8")
    made = report([now, before, tmp_path / "." / "now"], out=tmp_path / "report",
                  html=tmp_path / "page.html")
    assert reads == {"now": 1, "before": 1}
    judged = json.loads((tmp_path / "report" / "analysis.json").read_text(encoding="utf-8"))
    assert [(run["run"], run["judge"]) for run in judged["judge"]["runs"]] == [
        (str(now), "the-judge"), (str(before), None)]  # what each run's manifest said
    assert f"{now}: CAPPED by --max-cost $1.0000 after $1.2500 spent" in made.printed
    assert "CAPPED by --max-cost" in made.html.read_text(encoding="utf-8")


def test_the_kinds_are_the_manifests_else_the_built_ins_else_fixed(runs):
    kinds = {(key.run, key.system): (kind(group), decides(group), multi_step(group))
             for key, group in group_rows(load_summaries(list(runs))).items()}
    now, before = (str(run) for run in runs)
    assert kinds == {
        (now, "baseline"): ("fixed", False, False), (now, "boolean"): ("decides", True, False),
        (now, "mine"): ("agent", False, True), (now, "theirs"): ("decides", True, False),
        # a run from before the record: a user's system by what its rows did (a search at most)
        (before, "baseline"): ("fixed", False, False),
        (before, "boolean"): ("decides", True, False),
        (before, "mine"): ("fixed", False, False), (before, "theirs"): ("fixed", False, False)}


def test_answers_not_loaded_from_a_run_take_the_built_ins_kinds(runs):
    answers = read_summaries(runs[0] / "samples.jsonl")  # no run adds what its manifest says
    assert {answer.system_kind for answer in answers} == {None}
    assert {key.system: kind(group) for key, group in group_rows(answers).items()} == {
        "baseline": "fixed", "boolean": "decides", "mine": "fixed", "theirs": "fixed"}
