"""A user's table plugs in by an entry point in the group `freshrag.tables`
(harness/reporting/table.py, docs/reports.md#your-own-table): one object, shown in the printed
report, on the HTML page and in analysis.json; one that is no table is named and left out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from freshrag.cli.main import main
from freshrag.reporting.table import tables
from tests.support.packages import install_package

GOLDEN_RUN = Path(__file__).resolve().parents[1] / "data" / "golden" / "run"
CODE = '''
from freshrag.reporting.table import Table


def _answers(answers):
    counted = {}
    for answer in answers:
        counted[answer.system] = counted.get(answer.system, 0) + (answer.status == "ok")
    return [{"system": system, "answered": n} for system, n in counted.items()]


ANSWERED = Table("answered", "Answered pairs per system, by a plugged table", ("system", "answered"),
                 short="answered pairs", needs="answers", compute=_answers)
NOT_A_TABLE = "answered"
'''


def test_an_installed_table_shows_in_the_printed_report_the_page_and_the_json(
        tmp_path, monkeypatch, capsys):
    (tmp_path / "site").mkdir()
    install_package(tmp_path / "site", monkeypatch, "answered_table", CODE, "0.3.0",
                    "freshrag.tables", {"answered": "answered_table:ANSWERED",
                                        "broken": "answered_table:NOT_A_TABLE"})
    assert [table.key for table in tables()][-1] == "answered"
    run = shutil.copytree(GOLDEN_RUN, tmp_path / "run")
    page, out = tmp_path / "report.html", tmp_path / "out"
    assert main(["report", str(run), "--out", str(out), "--html", str(page)]) == 0
    printed = capsys.readouterr()
    assert "### Answered pairs per system, by a plugged table" in printed.out
    assert printed.err.count("warning: table 'broken'") == 1  # once per report, not per reader
    assert "not a freshrag" in printed.err
    document = json.loads((out / "analysis.json").read_text())
    answered = {row["system"]: row["answered"] for row in document["answered"]}
    assert answered and sum(answered.values()) > 0
    html = page.read_text()
    assert "Answered pairs per system, by a plugged table" in html
    assert 'id="analysis-answered"' in html
