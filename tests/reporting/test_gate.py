"""The gate's verdicts on hand-made run directories, one kind of rule at a time, and what it
writes: the text summary and a JUnit file that the standard library's reader parses (the pull
request's comment: tests/reporting/test_gate_github.py)."""

import re
import xml.etree.ElementTree as ET

import pytest

from freshrag.core.files import SymlinkError
from freshrag.core.outputs import OverwriteError
from freshrag.core.rundir import locked
from freshrag.reporting import gate_report
from freshrag.reporting.gate import GateError, gate
from freshrag.reporting.gate_rules import read_rules, rules_from_tables
from tests import ROOT
from tests.support.gate_runs import PROBED, QUESTIONS, TRUTH, manifest, runs
from tests.support.links import PRECIOUS
from tests.support.runs import sample, write_run


def verdict(tmp_path, rule, **made):
    result = gate(*runs(tmp_path, **made), rules_from_tables([rule]))
    return result.verdicts[0]




@pytest.mark.parametrize("worse, passed", [
    pytest.param(0, True, id="unchanged"),
    pytest.param(6, False, id="worse-on-30-percent"),
])
def test_the_difference_rule_holds_the_interval_lower_end(tmp_path, worse, passed):
    found = verdict(tmp_path, TRUTH, worse=worse)
    # each worse answer drops truthfulness from 5 to 1
    assert found.values["mean_difference"] == pytest.approx(-4 * worse / QUESTIONS)
    low, high = found.values["interval"]
    assert low <= found.values["mean_difference"] <= high
    assert found.passed is passed and found.values["questions"] == QUESTIONS


def test_the_difference_rule_counts_what_it_left_out_and_fails_on_too_little(tmp_path):
    found = verdict(tmp_path, TRUTH, failed=3)
    assert found.passed and found.values["questions"] == QUESTIONS - 3
    assert "(3 of 20 not scored in both, left out)" in found.figure
    found = verdict(tmp_path / "2", TRUTH, failed=QUESTIONS - 1)
    assert not found.passed and "fewer than 2 questions scored in both runs" in found.why


def test_the_relevance_and_score_metrics_read_their_own_grades(tmp_path):
    assert verdict(tmp_path, {**TRUTH, "metric": "relevance"}, worse=10).values[
        "mean_difference"] == 0  # only truthfulness dropped
    assert verdict(tmp_path / "2", {**TRUTH, "metric": "score"}, worse=10).values[
        "mean_difference"] == -2


@pytest.mark.parametrize("failed, missing, at_most, passed", [
    pytest.param(0, 0, 0.0, True, id="none"),
    pytest.param(1, 0, 0.05, True, id="at-the-bound"),
    pytest.param(2, 0, 0.05, False, id="over"),
    pytest.param(0, 2, 0.05, False, id="missing-counts"),
])
def test_the_failed_rule_counts_failed_and_missing_pairs(tmp_path, failed, missing, at_most,
                                                        passed):
    found = verdict(tmp_path, {"kind": "failed", "at_most": at_most}, failed=failed,
                    missing=missing)
    assert (found.values["failed"], found.values["missing"]) == (failed, missing)
    assert found.values["share"] == (failed + missing) / QUESTIONS and found.passed is passed


@pytest.mark.parametrize("probe, passed, why", [
    pytest.param(PROBED, True, "", id="informative"),
    pytest.param({**PROBED, "informative": False}, False, "not informative", id="not-informative"),
    pytest.param({"skipped": True}, False, "--no-probe", id="off"),
    pytest.param({"unavailable": "the judge refused"}, False, "the judge refused",
                 id="unavailable"),
    pytest.param(None, False, "no judge probes recorded", id="never-probed"),
])
def test_the_probe_rule_reads_the_candidate_manifest(tmp_path, probe, passed, why):
    found = verdict(tmp_path, {"kind": "judge_probes"}, probe=probe)
    assert found.passed is passed and why in found.why


@pytest.mark.parametrize("tokens, at_most, passed", [
    pytest.param((100, 10), 0.1, True, id="same"),
    pytest.param((110, 11), 0.1, True, id="ten-percent-more"),
    pytest.param((120, 12), 0.1, False, id="twenty-percent-more"),
    pytest.param((80, 8), -0.1, True, id="a-saving-asked-for"),
])
def test_the_tokens_rule_compares_tokens_per_correct_answer(tmp_path, tokens, at_most, passed):
    found = verdict(tmp_path, {"kind": "tokens_per_correct", "system": "naive",
                               "at_most_increase": at_most}, tokens=tokens)
    assert found.values["baseline"] == 110.0 and found.values["candidate"] == sum(tokens)
    assert found.passed is passed


def test_a_candidate_with_no_correct_answer_fails_the_tokens_rule(tmp_path):
    found = verdict(tmp_path, {"kind": "tokens_per_correct", "system": "naive",
                               "at_most_increase": 0.1}, worse=QUESTIONS)
    assert not found.passed and "the candidate's tokens per correct answer is unknown" in found.why


def test_systems_of_other_names_are_paired_and_a_system_in_neither_run_is_refused(tmp_path):
    base, cand = runs(tmp_path, worse=10, system="naive-v2")
    pair = {"kind": "difference", "baseline_system": "naive", "candidate_system": "naive-v2",
            "lower_above": -0.2}
    assert gate(base, cand, rules_from_tables([pair])).verdicts[0].values[
        "mean_difference"] == -2
    result = gate(base, cand, rules_from_tables([TRUTH]))  # naive is only in the baseline
    assert not result.passed and "has no answers of naive" in result.verdicts[0].why
    with pytest.raises(GateError, match="no answers of rag in .*their systems: naive, naive-v2"):
        gate(base, cand, rules_from_tables([{**TRUTH, "system": "rag"}]))
    with pytest.raises(GateError, match="one directory"):
        gate(base, base, rules_from_tables([TRUTH]))


def test_the_junit_file_parses_with_a_case_per_rule_and_a_failure_per_failing_one(tmp_path):
    rules = rules_from_tables([TRUTH, {"kind": "failed", "at_most": 0.5},
                               {"kind": "judge_probes", "name": "judge <ok> & \x01sound"}])
    result = gate(*runs(tmp_path, worse=8), rules)
    root = ET.fromstring(gate_report.junit(result))
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("3", "1")
    cases = suite.findall("testcase")
    assert [case.get("name") for case in cases] == [v.says for v in result.verdicts[:2]] + [
        "judge <ok> & sound"]  # a control character XML cannot hold is dropped
    assert [case.find("failure") is not None for case in cases] == [True, False, False]
    assert cases[0].find("failure").get("message") == result.verdicts[0].why
    assert cases[1].find("system-out").text == result.verdicts[1].figure


def test_outputs_are_never_written_through_a_link_nor_over_an_input(tmp_path, target):
    base, cand = runs(tmp_path)
    result = gate(base, cand, rules_from_tables([TRUTH]))
    link = tmp_path / "gate.xml"
    link.symlink_to(target)
    with pytest.raises(SymlinkError):
        gate_report.write(result, link)
    assert target.read_text() == PRECIOUS
    rules = tmp_path / "gate.toml"
    with pytest.raises(OverwriteError, match="--junit"):
        gate_report.check_outputs_of({"--junit": rules}, [base, cand], [("--rules", rules)])
    with pytest.raises(OverwriteError, match="inside the run directory"):
        gate_report.check_outputs_of({"--junit": cand / "gate.xml"}, [base, cand], [])


def test_runs_of_other_question_sets_are_refused_naming_both_hashes(tmp_path):
    """The same dataset name and question ids, other questions: nothing to pair."""
    base, cand = runs(tmp_path, questions="a1" * 32)
    with pytest.raises(GateError, match=r"answered other question sets \(questions sha256 "
                                        r"0f0f0f0f0f0f… and a1a1a1a1a1a1…\)") as refused:
        gate(base, cand, rules_from_tables([TRUTH]))
    assert str(base) in str(refused.value) and str(cand) in str(refused.value)


def test_runs_graded_by_other_judges_are_refused_unless_allowed(tmp_path):
    base, cand = runs(tmp_path, judge="judge-2")
    with pytest.raises(GateError, match=r"graded by judge-1 and .* by judge-2: .*"
                                        r"--allow-other-judge"):
        gate(base, cand, rules_from_tables([TRUTH]))
    assert gate(base, cand, rules_from_tables([TRUTH]), allow_other_judge=True).passed


@pytest.mark.parametrize("changed, refused", [
    pytest.param({"finished_at": None}, "has not finished", id="stopped-before-its-end"),
    pytest.param({"finished_at": None, "capped": {"max_cost": 5.0, "spent": 5.1}}, None,
                 id="capped-by-max-cost-has-ended"),
])
def test_a_run_that_has_not_ended_is_refused_unless_allowed(tmp_path, changed, refused):
    base, cand = runs(tmp_path, **changed)
    if refused:
        with pytest.raises(GateError, match=f"{re.escape(str(cand))}: the run {refused}.*"
                                            f"--allow-unfinished"):
            gate(base, cand, rules_from_tables([TRUTH]))
    assert gate(base, cand, rules_from_tables([TRUTH]), allow_unfinished=True).passed


def test_a_run_still_being_written_is_refused_naming_its_writer(tmp_path):
    base, cand = runs(tmp_path)
    with locked(cand):
        with pytest.raises(GateError, match=r"still being written \(by pid \d+\)"):
            gate(base, cand, rules_from_tables([TRUTH]))
        assert gate(base, cand, rules_from_tables([TRUTH]), allow_unfinished=True).passed
    assert gate(base, cand, rules_from_tables([TRUTH])).passed  # the lock released


def test_questions_of_other_text_under_one_id_are_not_paired(tmp_path):
    """Runs without a questions hash (imports) are paired by the question's text too."""
    base, _ = runs(tmp_path)
    manifest_free = write_run(tmp_path / "other", [
        {**sample(f"q{i}", "naive", 1, 5), "question": f"Another {i}?"}
        for i in range(QUESTIONS)], manifest(questions=None))
    found = gate(base, manifest_free, rules_from_tables([TRUTH])).verdicts[0]
    assert not found.passed and "fewer than 2 questions scored in both" in found.why


def test_the_tokens_rule_counts_both_sides_over_the_questions_both_answered(tmp_path):
    """The baseline's cheap answers to the questions the candidate failed are left out."""
    found = verdict(tmp_path, {"kind": "tokens_per_correct", "system": "naive",
                               "at_most_increase": 0.1}, failed=10, base_tokens=(10, 1))
    assert (found.values["baseline"], found.values["candidate"]) == (110.0, 110.0)
    assert found.passed and "over the 10 questions both answered" in found.figure


def test_the_failed_rule_counts_a_renamed_system_under_its_names(tmp_path):
    base, cand = runs(tmp_path, system="naive-v2", failed=1)
    rules = rules_from_tables([
        {"kind": "difference", "baseline_system": "naive", "candidate_system": "naive-v2",
         "lower_above": -0.2}, {"kind": "failed", "at_most": 0.05}])
    found = gate(base, cand, rules).verdicts[1]
    assert (found.values["failed"], found.values["missing"], found.values["pairs"]) == (
        1, 0, QUESTIONS)
    assert found.passed


def test_the_recommended_rules_fail_a_candidate_that_answers_i_dont_know(tmp_path):
    """A judge may call "I don't know" true (it states nothing false) but irrelevant: the
    truthfulness rule alone passes such a candidate, docs/ci.md's rules do not."""
    base, _ = runs(tmp_path)
    idk = write_run(tmp_path / "idk", [
        {**sample(f"q{i}", "naive", 5, 1, tokens=(60, 4)), "answer": "I don't know."}
        for i in range(QUESTIONS)], manifest())
    page = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    recommended = re.search(r"```toml\n(# gate.toml\n.*?)```", page, re.DOTALL).group(1)
    (tmp_path / "gate.toml").write_text(recommended, encoding="utf-8")
    rules = read_rules(tmp_path / "gate.toml")
    assert gate(base, idk, rules_from_tables([TRUTH])).passed  # truthfulness alone is fooled
    result = gate(base, idk, rules)
    assert not result.passed
    assert [v.rule.metric for v in result.failed] == ["score"]


def test_the_text_summary_shows_names_as_written(tmp_path):
    base, cand = runs(tmp_path, worse=8, system="naive-v2")
    rules = rules_from_tables([{"kind": "difference", "baseline_system": "naive",
                                "candidate_system": "naive-v2", "lower_above": -0.2,
                                "name": "naive -> naive-v2 <b>\x1b[2J"}])
    result = gate(base, cand, rules)
    text = gate_report.text(result)
    assert text.startswith("freshrag gate: FAILED (1 of 1 rules fail)\n")
    assert "FAIL  naive -> naive-v2 <b> [2J: -1.60 [" in text and "&gt;" not in text
    assert "\x1b" not in text  # a terminal escape in a name is shown as a space
