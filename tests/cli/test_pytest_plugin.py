"""The pytest plugin: a team's own test suite, scripted in a temporary project and run by pytest
in a child process, gets the fixture `freshrag_gate` through the `pytest11` entry point, and a
rule that fails fails its test with the gate's summary; the fixture's runs are freshrag's."""

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from freshrag.cli.pytest_plugin import FreshragGate
from freshrag.scoring.probes import ProbeSettings
from tests.support.datasets import write_dataset
from tests.support.fakes import discerning_judge
from tests.support.runs import sample, write_run

PROBED = {"k": 3, "threshold": 0.7, "informative": True, "fields": {
    "truthfulness": {"discrimination": 1.0, "interval": [1.0, 1.0]}}}
MANIFEST = {"kind": "run", "dataset": {"sha256": {}, "files": {}, "name": "A_f"}, "config": {},
            "llm": {"roles": {}}, "systems": ["naive"], "judge_probe": PROBED,
            "finished_at": "2026-11-29T08:00:00+00:00"}

TESTS = '''
TRUTH = [{"kind": "difference", "system": "naive", "lower_above": -0.2}]


def test_the_same_answers_hold(freshrag_gate):
    result = freshrag_gate.check("base", "same", TRUTH)
    assert result.passed


def test_worse_answers_fail(freshrag_gate):
    freshrag_gate.check("base", "worse", "gate.toml")
'''


SAME_RULE = ("freshrag gate: naive: truthfulness, candidate - baseline: the 95% interval's lower "
             "end is above -0.2")
SAME_FIGURE = "pass: +0.00 [+0.00, +0.00] over 10 questions"


def write_project(root):
    for name, worse in (("base", 0), ("same", 0), ("worse", 6)):
        write_run(root / name, [sample(f"q{i}", "naive", 1 if i < worse else 5, 5)
                                for i in range(10)], MANIFEST)
    (root / "gate.toml").write_text('[[gate.rule]]\nkind = "difference"\nsystem = "naive"\n'
                                    'lower_above = -0.2\n\n[[gate.rule]]\nkind = "judge_probes"\n')
    (root / "test_rag.py").write_text(TESTS)


def pytest_in(root, *options):
    # the plugins the suite's own ini turns off (pyproject.toml): a team's project has its own
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:phoenix", "-p", "no:langsmith_plugin",
                           "--junitxml", "junit.xml", *options], cwd=root, capture_output=True,
                          text=True, timeout=120)


def test_the_fixture_fails_a_team_test_whose_rule_fails(tmp_path):
    write_project(tmp_path)
    done = pytest_in(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout
    assert "FAILED test_rag.py::test_worse_answers_fail" in done.stdout
    assert "freshrag gate: FAILED (1 of 2 rules fail)" in done.stdout
    assert "-2.40 [" in done.stdout  # 6 answers of 10 down from 5 to 1
    assert "Traceback" not in done.stdout  # the summary, not the plugin's frames
    assert "incompatible with junit_family" not in done.stdout  # pytest's xunit2 warning
    # pytest's default xunit2 family: the suite's properties, each named by its test
    suite = ET.parse(tmp_path / "junit.xml").find("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert properties["test_rag.py::test_the_same_answers_hold " + SAME_RULE] == SAME_FIGURE
    assert not [p for case in suite.iter("testcase") for p in case.iter("property")]


def test_in_the_xunit1_family_each_figure_is_a_property_of_its_test(tmp_path):
    write_project(tmp_path)
    done = pytest_in(tmp_path, "-o", "junit_family=xunit1")
    assert done.returncode == 1 and "incompatible" not in done.stdout, done.stdout
    cases = {case.get("name"): case for case in ET.parse(tmp_path / "junit.xml").iter("testcase")}
    properties = {p.get("name"): p.get("value")
                  for p in cases["test_the_same_answers_hold"].iter("property")}
    assert properties == {SAME_RULE: SAME_FIGURE}


def test_without_the_plugin_the_fixture_is_not_there(tmp_path):
    write_project(tmp_path)
    done = pytest_in(tmp_path, "-p", "no:freshrag")  # the entry point's name
    assert done.returncode == 1 and "fixture 'freshrag_gate' not found" in done.stdout


def test_the_fixture_runs_a_candidate_from_the_cache_and_checks_it(tmp_path, monkeypatch,
                                                                  fake_server):
    def reply(request):
        if request.get("tool_choice") not in (None, "auto"):
            return discerning_judge(request)
        return {"content": "Town 1 has 4 bridges."}  # right for one town of three

    server = fake_server(reply=reply)
    monkeypatch.chdir(tmp_path)
    write_dataset(tmp_path / "data")
    recorded = []
    gate = FreshragGate(lambda name, value: recorded.append((name, value)), "test_x")
    options = {"systems": ["oracle"], "probe": ProbeSettings(k=3)}
    base = gate.run("results/main", "data", **options)
    server.reset_counts()
    cand = gate.run("results/pr", "data", **options)
    assert server.calls == 0 and cand.resolve() == tmp_path / "results" / "pr"
    rules = [{"kind": "difference", "system": "oracle", "lower_above": -0.2},
             {"kind": "judge_probes"}]
    assert gate.check(base, cand, rules).passed and len(recorded) == 2
    saving = {"kind": "tokens_per_correct", "system": "oracle", "at_most_increase": -0.5}
    with pytest.raises(pytest.fail.Exception, match="at least 50% below the baseline's"):
        gate.check(base, cand, [saving])  # the same answers cost the same: no saving
