"""The gate's rules file, read strictly: every rule kind as written in docs/ci.md, and every
mistake named by file, line and key."""

import pytest

from freshrag.reporting.gate_rules import GateRulesError, Rule, read_rules, rules_from_tables

GOOD = """\
[[gate.rule]]
kind = "difference"
system = "naive"
lower_above = -0.2

[[gate.rule]]
kind = "failed"
at_most = 0.01

[[gate.rule]]
kind = "judge_probes"

[[gate.rule]]
kind = "tokens_per_correct"
baseline_system = "naive"
candidate_system = "naive-v2"
at_most_increase = 0.1
name = "cheaper or not much dearer"
"""


def test_every_kind_is_read_with_its_defaults(tmp_path):
    path = tmp_path / "gate.toml"
    path.write_text(GOOD, encoding="utf-8")
    assert read_rules(path) == [
        Rule("difference", "naive", "naive", -0.2, where=f"{path}:1"),
        Rule("failed", None, None, 0.01, where=f"{path}:6"),
        Rule("judge_probes", None, None, None, where=f"{path}:10"),
        Rule("tokens_per_correct", "naive", "naive-v2", 0.1, name="cheaper or not much dearer",
             where=f"{path}:13")]


def test_the_gate_table_of_freshrag_toml_is_read_beside_its_other_tables(tmp_path):
    path = tmp_path / "freshrag.toml"
    path.write_text('max_attempts = 2\n[roles.judge]\nmodel = "gpt-4o"\n\n' + GOOD)
    assert [rule.kind for rule in read_rules(path, from_config=True)] == [
        "difference", "failed", "judge_probes", "tokens_per_correct"]
    assert read_rules(path, from_config=True)[0].where == f"{path}:5"


BAD = [
    pytest.param('[[gate.rule]]\nkind = "differences"\n', ":2: [[gate.rule]] 1 key 'kind': kind "
                 "must be one of difference, failed", id="unknown-kind"),
    pytest.param('[[gate.rule]]\nsystem = "naive"\n', ":1: [[gate.rule]] 1: kind must be one of",
                 id="no-kind"),
    pytest.param('[[gate.rule]]\nkind = "failed"\nat_most = 0.01\n\n[[gate.rule]]\n'
                 'kind = "difference"\nsystem = "naive"\nlower_above = -0.2\nlower = 1\n',
                 ":9: [[gate.rule]] 2 key 'lower': not a key of a difference rule", id="typo-key"),
    pytest.param('[[gate.rule]]\nkind = "difference"\nlower_above = -0.2\n',
                 ":1: [[gate.rule]] 1: a difference rule needs `system`", id="no-system"),
    pytest.param('[[gate.rule]]\nkind = "difference"\nsystem = "naive"\n',
                 ":1: [[gate.rule]] 1: a difference rule needs `lower_above`", id="no-threshold"),
    pytest.param('[[gate.rule]]\nkind = "failed"\nat_most = "1%"\n',
                 ":3: [[gate.rule]] 1 key 'at_most': must be a finite number, got '1%'",
                 id="threshold-text"),
    pytest.param('[[gate.rule]]\nkind = "failed"\nat_most = 1.5\n',
                 ":3: [[gate.rule]] 1 key 'at_most': must be from 0 to 1, got 1.5",
                 id="share-over-one"),
    pytest.param('[[gate.rule]]\nkind = "failed"\nat_most = nan\n',
                 "key 'at_most': must be a finite number, got nan", id="nan"),
    pytest.param('[[gate.rule]]\nkind = "failed"\nat_most = true\n',
                 "key 'at_most': must be a finite number, got True", id="bool"),
    pytest.param('[[gate.rule]]\nkind = "tokens_per_correct"\nsystem = "naive"\n'
                 'at_most_increase = -2\n', "key 'at_most_increase': must be at least -1",
                 id="increase-below-minus-one"),
    pytest.param('[[gate.rule]]\nkind = "difference"\nsystem = "naive"\nmetric = "truth"\n'
                 'lower_above = 0\n', ":4: [[gate.rule]] 1 key 'metric': must be one of "
                 "truthfulness, relevance, score", id="unknown-metric"),
    pytest.param('[[gate.rule]]\nkind = "judge_probes"\nsystem = "naive"\n',
                 ":3: [[gate.rule]] 1 key 'system': a judge_probes rule names no system",
                 id="probes-with-system"),
    pytest.param('[[gate.rule]]\nkind = "judge_probes"\nruns = "baseline"\n',
                 "key 'runs': must be one of candidate, both", id="probes-runs"),
    pytest.param('[[gate.rule]]\nkind = "failed"\nat_most = 0\nbaseline_system = "a"\n',
                 ":4: [[gate.rule]] 1 key 'baseline_system': `baseline_system` and "
                 "`candidate_system` go together", id="half-a-pair"),
    pytest.param('[[gate.rule]]\nkind = "failed"\nat_most = 0\nsystem = "a"\n'
                 'candidate_system = "b"\n', ":5: [[gate.rule]] 1 key 'candidate_system': give "
                 "`system`", id="system-and-pair"),
    pytest.param('[[gate.rule]]\nkind = "failed"\nat_most = 0\nsystem = ""\n',
                 "key 'system': must be a system's name", id="empty-system"),
    pytest.param('[[gate.rule]]\nkind = "failed"\nat_most = 0\nname = 3\n',
                 "key 'name': must be a text", id="name-not-text"),
    pytest.param('[gate]\nrules = 1\n', ":2: [gate]: unknown key 'rules'", id="gate-key"),
    pytest.param('[gate]\n', ": [gate] has no rule", id="no-rule"),
    pytest.param('[prices]\nx = 1\n', ":1: unknown key 'prices'; a rules file holds [gate]",
                 id="other-table"),
    pytest.param('title = "x"\n', ":1: unknown key 'title'", id="other-key"),
    pytest.param('[[gate.rule]]\nkind = "failed"\nat_most = \n',
                 ": not valid TOML: Invalid value (at line 3, column 11)", id="toml-syntax"),
    pytest.param('gate = { rule = [{ kind = "failed" }] }\n',
                 "gate.toml: [[gate.rule]] 1: a failed rule needs `at_most`", id="inline"),
    pytest.param('gate = 3\n', ": no [gate] table", id="gate-not-a-table"),
    pytest.param('gate = { rule = [3] }\n', "[[gate.rule]] 1: must be a table, got 3",
                 id="rule-not-a-table"),
    pytest.param('x = 1' + '0' * 5000 + '\n', ": not readable TOML: Exceeds the limit",
                 id="huge-number"),
]


@pytest.mark.parametrize("text, message", BAD)
def test_a_bad_rules_file_is_named_by_file_line_and_key(tmp_path, text, message):
    path = tmp_path / "gate.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(GateRulesError) as caught:
        read_rules(path)
    assert str(caught.value).startswith(str(path)) and message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_rules_file_that_is_not_there_or_not_text_is_named(tmp_path):
    with pytest.raises(GateRulesError, match="gate.toml"):
        read_rules(tmp_path / "gate.toml")
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(GateRulesError, match="bin.toml"):
        read_rules(tmp_path / "bin.toml")


def test_rules_given_as_dicts_are_checked_alike():
    assert rules_from_tables([{"kind": "failed", "at_most": 0}], "test_x") == [
        Rule("failed", None, None, 0.0, where="test_x")]
    with pytest.raises(GateRulesError, match=r"test_x: \[\[gate.rule\]\] 2 key 'at_most'"):
        rules_from_tables([{"kind": "judge_probes"}, {"kind": "failed", "at_most": 2}], "test_x")
    with pytest.raises(GateRulesError, match="at least one rule"):
        rules_from_tables([], "test_x")
