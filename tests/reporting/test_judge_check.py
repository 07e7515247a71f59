"""The judge's verdict in every output: the run, its manifest, and the report in markdown, JSON
and HTML; and degenerate grades caught from the rows alone."""

import html
import json

import pytest

from freshrag.cli.main import main
from freshrag.reporting.judge_check import degenerate_fields
from freshrag.scoring.probes import ABSTAIN
from tests.support.datasets import bridges_and_mayor, write_dataset
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import discerning_judge, use_endpoint
from tests.support.rows import summaries
from tests.support.runs import run_cli, sample

NOT_INFORMATIVE = "WARNING: the judge's scores are not informative"


def answers_and_judges(judge):
    """Answers every question with a text; grades with `judge` (forced calls)."""
    def reply(request):
        if request.get("tool_choice") not in (None, "auto"):
            return judge(request)
        return {"content": "Town 1 has 4 bridges"}  # right for one question of three
    return reply


def report(tmp_path, capsys, fmt="markdown"):
    page = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "run"), "--format", fmt, "--html", str(page)]) == 0
    out, err = capsys.readouterr()
    return out, err, html.unescape(page.read_text(encoding="utf-8"))


def test_a_working_judge_is_said_to_tell_right_from_wrong(tmp_path, monkeypatch, capsys):
    write_dataset(tmp_path, 6, content=bridges_and_mayor)  # 12 pairs: three probe questions
    with FakeOpenAIServer(reply=answers_and_judges(discerning_judge)) as server:
        use_endpoint(monkeypatch, server.base_url, "sk-x")
        assert run_cli(tmp_path, "--probe-k", "3") == 0
    said = capsys.readouterr().out
    assert "the judge tells right from wrong" in said and "WARNING" not in said
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["judge_probe"]["informative"] is True and manifest["judge_probe"]["k"] == 3
    graded = json.loads((tmp_path / "run" / "judge-probes.json").read_text())["probes"]
    # each town's answer has a number to change: a near miss for every question, apart
    assert [p["kind"] for p in graded] == ["grounded", "wrong", "abstaining", "near_miss"] * 3
    assert manifest["judge_probe"]["near_miss"]["pairs"] == 3
    out, _, page = report(tmp_path, capsys)
    assert "the judge tells right from wrong" in out and NOT_INFORMATIVE not in out
    assert "near misses (the grounded answer with one number, month or name changed: 3 " \
           "numbers): truthfulness discrimination 1.00 [1.00, 1.00] over 3 pairs" in out
    assert 'class="judge"' in page and "the judge tells right from wrong" in page


def test_a_constant_judge_is_warned_about_in_every_output(tmp_path, fake, capsys):
    assert run_cli(tmp_path, "--probe-k", "3") == 0  # the fake's judge gives 5 and 5 to all
    said = capsys.readouterr().out
    assert NOT_INFORMATIVE in said and "FRESHRAG_JUDGE_MODEL" in said
    assert "WARNING: degenerate truthfulness grades" in said
    out, _, page = report(tmp_path, capsys)
    assert out.index(NOT_INFORMATIVE) < out.index("| dataset |")  # before the tables
    assert 'class="judge warning"' in page and NOT_INFORMATIVE in page
    out, err, _ = report(tmp_path, capsys, fmt="json")
    checks = json.loads(out)["judge"]
    assert checks["informative"] is False and checks["runs"][0]["probe"]["informative"] is False
    assert NOT_INFORMATIVE in err  # stdout stays JSON


def test_probes_turned_off_are_said_to_be_off(tmp_path, fake, capsys):
    assert run_cli(tmp_path, "--no-probe") == 0
    asked = [json.dumps(request) for request in fake.requests]
    assert asked and not any(ABSTAIN in request for request in asked)  # no probe was graded
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["judge_probe"] == {"skipped": True}
    out, _, page = report(tmp_path, capsys)
    assert "judge probes were off (--no-probe)" in out and "--no-probe" in page


@pytest.mark.parametrize("grades, degenerate", [
    pytest.param({"a": [1] * 10, "b": [1] * 9 + [3]}, {"truthfulness": 0.9},
                 id="one-value-everywhere"),
    pytest.param({"a": [2] * 10, "b": [5] * 10}, {}, id="each-row-its-own-value"),
    pytest.param({"a": [1] * 10, "b": [1] * 8 + [3, 4]}, {}, id="one-row-below-90-percent"),
    pytest.param({"a": [1, 2, 3, 4, 5]}, {}, id="spread"),
])
def test_degenerate_grades_are_one_value_for_every_row(grades, degenerate):
    rows = [sample(f"q{i}", system, truth=value, rel=i % 5 + 1)
            for system, values in grades.items() for i, value in enumerate(values)]
    assert degenerate_fields(summaries(rows)) == degenerate
