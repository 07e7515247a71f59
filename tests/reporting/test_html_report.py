"""`freshrag report --html`: one self-contained page, checked as written and as a real browser
renders it (headless Chromium, Debian's `chromium` package; tests/run.sh installs it). The
viewer's interactions are tested in test_html_viewer.py.

The run holds a baseline, a naive and a boolean system on two datasets, with an unscored
answer, a failed pair, and model / dataset text carrying markup (a `<script>` answer, an `<img>`
title) that must reach the page as text only (`sample_rows` of tests/support/runs.py): the
page's one script is its own viewer's.
"""

from __future__ import annotations

import base64
import contextlib
import fnmatch
import io
import re
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from freshrag.cli.main import main
from freshrag.core.jsonl import JsonlWriter
from freshrag.core.samples import SAMPLES
from freshrag.reporting.render import html, plots, viewer
from tests.support import runs
from tests.support.dom import Node, chromium, dump_dom, parse, viewer_samples
from tests.support.runs import EVIL_TITLE, SCRIPT_ANSWER, sample_rows, write_run

ROOT = Path(__file__).resolve().parents[2]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DATA_URI = "data:image/png;base64,"
ANALYSIS_IDS = ("analysis-intervals", "analysis-retrieval", "analysis-attribution",
                "analysis-decisions", "analysis-cost", "analysis-paired")
# The analysis tables this run has nothing for (no latency recorded, no traffic kinds, ...)
EMPTY = ("Answer latency", "Threshold sweep over the recorded decision scores", "Savings curve")
# Appended to a copy of the page for the browser test only: once every image has loaded or
# failed, write what the browser decoded into the DOM.
PROBE = ('<script id="probe">window.addEventListener("load", () => {'
         ' for (const img of document.images) img.dataset.naturalWidth = img.naturalWidth;'
         ' document.body.dataset.probed = "yes"; });</script>')


# --------------------------------------------------------------------------- the report, once


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Runs `freshrag report RUN_DIR --html PATH` once, recording the figures the plots made."""
    run_dir = tmp_path_factory.mktemp("run")
    html_path = run_dir / "site" / "report.html"
    rows = sample_rows()
    writer = JsonlWriter(run_dir / SAMPLES)
    for r in rows:
        writer.write(r)
    writer.close()
    made: list[Path] = []
    real = plots.write_figures

    def recording(*args: Any, **kwargs: Any) -> list[Path]:
        made.extend(real(*args, **kwargs))
        return made

    stdout = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(stdout):
        mp.setattr(plots, "write_figures", recording)
        code = main(["report", str(run_dir), "--html", str(html_path)])
    return {"code": code, "stdout": stdout.getvalue(), "path": html_path, "rows": rows,
            "figures": made, "page": html_path.read_text(encoding="utf-8")}


def pairs(rows: list[dict[str, Any]], *keys: str) -> list[tuple[str, ...]]:
    return list(dict.fromkeys(tuple(r[k] for k in keys) for r in rows))


def check_page(dom: Node, report: dict[str, Any]) -> None:
    """What the page must show, whether parsed from the file or from the browser's DOM."""
    rows, figures = report["rows"], report["figures"]
    systems = pairs(rows, "dataset", "system")
    summary = dom.by_id("summary-table").rows()
    assert [tuple(cells[:2]) for cells in summary] == systems
    # the paper's columns: n, scored, unscored ...; boolean on A_f has 4 answers, 1 unscored
    boolean = next(cells for cells in summary if cells[:2] == ["A_f", "boolean"])
    assert boolean[2:5] == ["4", "3", "1"]

    for ident in ANALYSIS_IDS:
        assert dom.by_id(ident).tag == "table", f"{ident} is not a table"
    decisions = dom.by_id("analysis-decisions").rows()
    assert [cells[0] for cells in decisions if cells[1] == "oracle-router"] == ["A_f", "A_r"]
    for cells in dom.by_id("analysis-intervals").rows():
        assert re.fullmatch(r"[\d.,]+ \[[\d.,]+, [\d.,]+\]", cells[2]), cells  # truthfulness
    for cells in dom.by_id("analysis-paired").rows():  # a few questions each: no test, why
        assert re.fullmatch(r"n = \d, below 10", cells[5]) and cells[6] == cells[5], cells

    images = dom.find_all("img")
    assert figures and len(images) == len(figures)
    assert [c.text() for c in dom.find_all("figcaption")] == [f.name for f in figures]
    for img, figure in zip(images, figures):
        src = img.attrs.get("src") or ""
        assert src.startswith(DATA_URI) and len(src) > len(DATA_URI), src[:60]
        data = base64.b64decode(src[len(DATA_URI):], validate=True)
        assert data.startswith(PNG_SIGNATURE) and data == figure.read_bytes(), figure.name

    empty = dom.by_id("analysis-empty").text()
    assert empty.startswith("Nothing to show: ") and all(name in empty for name in EMPTY)
    assert "nothing to show" not in dom.text()  # one line, not a section per table

    check_answers(viewer_samples(dom), rows)


def check_answers(samples: list[dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    """The viewer holds every answer, question by question in the order of the rows, each with
    its record: status, scores, tokens, retrieved titles, judge output, text kept as text."""
    by_question = sorted(rows, key=lambda r: pairs(rows, "dataset", "question_id").index(
        (r["dataset"], r["question_id"])))  # stable: systems keep the rows' order
    assert [(s["q"][0], s["q"][1], s["label"]) for s in samples] == [
        (r["dataset"], r["question_id"], r["system"]) for r in by_question]
    for sample, r in zip(samples, by_question):
        assert sample["q"][2:4] == [r["question"], r["gold_title"]]
        assert sample["record"]["answer"] == r["answer"]  # the script answer, byte for byte
        assert sample["record"]["grade"] == r["grade"]
        assert sample["record"]["details"] == r["details"]
        grade = r["grade"] or {}
        expected = ("failed" if r["status"] == "failed" else
                    "unscored" if grade.get("truthfulness") is None else "scored")
        assert sample["status"] == expected
        if expected == "scored":
            assert sample["score"] == grade["truthfulness"] + grade["relevance"]
        else:
            assert sample["score"] is None
    by_key = {(s["q"][1], s["label"]): s for s in samples}
    assert (by_key["q1", "naive"]["input_tokens"], by_key["q1", "naive"]["output_tokens"]) == (
        500, 12)  # the system's tokens, the judge's 999 left out
    assert by_key["q3", "boolean"]["record"]["grade"]["raw"] == ["I think it is fine", None]
    assert by_key["q4", "naive"]["record"]["error"] == "HTTP 500 after 6 attempts"
    titles = [c["title"] for c in by_key["q1", "naive"]["record"]["details"]["retrieved"]]
    assert EVIL_TITLE in titles and by_key["q2", "baseline"]["answer"] == SCRIPT_ANSWER


# --------------------------------------------------------------------------- the file


def test_the_command_writes_the_page_and_says_where(report):
    assert report["code"] == 0
    assert f"HTML report written to {report['path']}" in report["stdout"]


def test_the_page_is_self_contained(report):
    page = report["page"]
    assert 'src="http' not in page and "href=\"http" not in page
    assert "<link" not in page and "url(" not in page and "@import" not in page
    assert "<script src" not in page.lower() and "fetch(" not in page
    scripts = parse(page).find_all("script")
    assert [s.attrs.get("type") for s in scripts] == ["application/json", None, "application/json"]
    # no data can end its element or open one: the answer's markup is \u003c-escaped JSON
    assert page.lower().count("<script") == page.lower().count("</script>") == 3
    assert "alert(1)" not in page.replace("\\u003cscript\\u003ealert(1)", "")


def test_the_page_shows_every_table_figure_and_question(report):
    check_page(parse(report["page"]), report)


# --------------------------------------------------------------------------- in a browser


@pytest.mark.integration
def test_chromium_renders_the_page(report, tmp_path):
    """The page as Chromium builds its DOM, with a probe script (in a copy) recording each
    image's decoded width: a broken data URI would load as width 0."""
    probed = tmp_path / "probed.html"
    probed.write_text(report["page"].replace("</body>", PROBE + "</body>"), encoding="utf-8")
    started = time.monotonic()
    stdout, stderr, code = dump_dom(chromium(), probed, tmp_path / "profile")
    elapsed = time.monotonic() - started
    assert code == 0, f"chromium exited {code}:\n{stderr[-2000:]}"
    dom = parse(stdout)
    assert dom.find_all("body")[0].attrs.get("data-probed") == "yes", (
        f"the load event never ran ({elapsed:.1f}s):\n{stdout[:500]}")

    check_page(dom, report)
    n = len(report["rows"])
    assert dom.by_id("viewer-count").text() == f"{n} of {n} answers"
    listed = [row.attrs["data-i"] for row in dom.by_id("viewer-spacer").find_all("div", "vrow")]
    assert listed and listed == [str(i) for i in range(len(listed))]  # the first rows, in order
    widths = [img.attrs.get("data-natural-width") for img in dom.find_all("img")]
    assert widths == [str(png_width(f)) for f in report["figures"]]  # as the PNG header says


def png_width(path: Path) -> int:
    return html.png_width(path.read_bytes())


# --------------------------------------------------------------------------- the viewer's data


def test_no_string_of_the_data_can_end_its_element_and_every_one_comes_back():
    """Data that closes a script, a JavaScript line separator, a string that starts with NUL
    (the mark of a shared string) and a long string met twice in a block (stored once) all
    read back as they were written."""
    rows = sample_rows()[:3]
    long = "A long system prompt, " * 10
    rows[0]["answer"] = "</script><script>alert(2)</script><!-- \u2028\u2029 & ]]>"
    rows[1]["answer"] = "\x00" + "3 not a reference"
    rows[1]["details"]["note"] = rows[2]["details"]["note"] = long
    page = viewer.viewer_section(rows)
    assert page.count("<script") == page.count("</script>") == 3
    assert "\u2028" not in page and "alert(2)</script>" not in page
    samples = viewer_samples(parse(page))
    assert [s["record"]["answer"] for s in samples] == [r["answer"] for r in rows]
    assert [s["record"]["details"].get("note") for s in samples] == [None, long, long]
    assert page.count("A long system prompt") == 10  # once, in the block's shared strings


def test_the_viewer_assets_ship_as_package_data():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = setuptools["package-data"]["freshrag.reporting.render"]
    shipped = [p.name for p in viewer.ASSETS.iterdir()]
    assert {"viewer.html", "viewer.css", "viewer.js"} <= set(shipped)
    assert all(any(fnmatch.fnmatch(f"assets/{name}", pattern) for pattern in patterns)
               for name in shipped)


@pytest.mark.parametrize("answer_models, said_once", [
    pytest.param(("model-a", "model-a"), True, id="one-models-value"),
    pytest.param(("model-a", "model-b"), False, id="two-answer-models"),
])
def test_models_every_row_shares_are_said_once_not_in_a_column_of_each_table(
        tmp_path, answer_models, said_once):
    rows = [runs.sample(f"q{q}", system, 4, 4, answer=model)
            for q in range(3) for system, model in zip(("baseline", "naive"), answer_models)]
    run = write_run(tmp_path / "run", rows)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", str(run), "--html", str(tmp_path / "page.html")]) == 0
    page = parse((tmp_path / "page.html").read_text(encoding="utf-8"))
    headers = [th.text() for th in page.find_all("th")]
    if said_once:
        assert "models" not in headers
        assert page.by_id("models").text() == "Models of every row: answer: model-a; judge: judge-1"
    else:
        assert "models" in headers  # told apart by their models: the column stays
        assert all(p.attrs.get("id") != "models" for p in page.find_all("p", "meta"))
