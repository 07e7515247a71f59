"""`freshrag report --html`: one self-contained page, checked as written and as a real browser
renders it (headless Chromium, Debian's `chromium` package; tests/run.sh installs it).

The run holds a baseline, a naive and a boolean system on two datasets, with an unscored
answer, a failed pair, and model / dataset text carrying markup (a `<script>` answer, an `<img>`
title) that must reach the page as text only.
"""

from __future__ import annotations

import base64
import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Iterator

import pytest

from freshrag.cli.main import main
from freshrag.core.jsonl import JsonlWriter
from freshrag.core.samples import SAMPLES
from freshrag.reporting.render import plots

SCRIPT_ANSWER = "<script>alert(1)</script> The answer is 42."
EVIL_TITLE = '<img src="http://evil.example/x.png">'
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DATA_URI = "data:image/png;base64,"
ANALYSIS_IDS = ("analysis-intervals", "analysis-retrieval", "analysis-attribution",
                "analysis-decisions", "analysis-cost", "analysis-paired")
CHROMIUM_TIMEOUT_S = 120
# Appended to a copy of the page for the browser test only (the report itself has no script):
# once every image has loaded or failed, write what the browser decoded into the DOM.
PROBE = ('<script id="probe">window.addEventListener("load", () => {'
         ' for (const img of document.images) img.dataset.naturalWidth = img.naturalWidth;'
         ' document.body.dataset.probed = "yes"; });</script>')


def row(dataset: str, question: str, system: str, truth: int | None = 5, rel: int = 5,
        retrieved: list[str] | None = None, decision: str | None = None,
        answer: str = "an answer", tokens: tuple[int, int] = (100, 10)) -> dict[str, Any]:
    """A samples.jsonl row (as in test_analysis.py); truth=None is an unscored answer."""
    details: dict[str, Any] = {"decision": decision}
    if retrieved is not None:
        details["retrieved"] = [{"title": t, "index": i, "score": 0.5}
                                for i, t in enumerate(retrieved)]
    scored = truth is not None
    grade = {"truthfulness": truth, "relevance": rel if scored else None,
             "unscored_reason": None if scored else "judge gave no tool call",
             "raw": [f'{{"truthfulness": {truth}, "relevance": {rel}}}'] if scored
             else ["I think it is fine", None]}
    return {"dataset": dataset, "question_id": question,
            "question": f"What happened at Foo & Bar ({question})?",
            "gold_title": f"Gold {question}",
            "system": system, "status": "ok", "answer": answer,
            "retrievals": 0 if retrieved is None else 1,
            "usage": {"answer": {"input": tokens[0], "output": tokens[1], "estimated": False},
                      "judge": {"input": 999, "output": 99, "estimated": False}},
            "grade": grade, "calls": [], "details": details, "error": None}


def failed(dataset: str, question: str, system: str) -> dict[str, Any]:
    return {**row(dataset, question, system), "status": "failed", "answer": None, "grade": None,
            "usage": {}, "retrievals": 0, "details": {}, "error": "HTTP 500 after 6 attempts"}


def sample_rows() -> list[dict[str, Any]]:
    """Questions 1..4 of A_f and 1..2 of A_r (ids unique within the run, as samples.jsonl keys
    rows by question id and system): question 2's baseline answer is the script, question 3's
    boolean answer unscored, question 4's naive pair failed."""
    rows = []
    for dataset, prefix, count in (("A_f", "q", 4), ("A_r", "r", 2)):
        for n in range(1, count + 1):
            q, gold = f"{prefix}{n}", f"Gold {prefix}{n}"
            rows.append(row(dataset, q, "baseline", *{1: (2, 2), 3: (3, 3)}.get(n, (4, 4)),
                            answer=SCRIPT_ANSWER if n == 2 else "from memory", tokens=(50, 5)))
            rows.append(failed(dataset, q, "naive") if n == 4 else
                        row(dataset, q, "naive", 5, 4, retrieved=[gold, EVIL_TITLE, "Other"],
                            tokens=(500, 12)))
            rows.append(row(dataset, q, "boolean", None, decision="none") if n == 3 else
                        row(dataset, q, "boolean", 5, 3, retrieved=["Other", gold],
                            decision="retrieve") if n == 1 else
                        row(dataset, q, "boolean", 4, 4, decision="no-retrieve"))
    return rows


# --------------------------------------------------------------------------- a small DOM


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def iter(self) -> Iterator[Node]:
        for child in self.children:
            if isinstance(child, Node):
                yield child
                yield from child.iter()

    def find_all(self, tag: str, cls: str | None = None) -> list[Node]:
        return [n for n in self.iter() if n.tag == tag
                and (cls is None or cls in (n.attrs.get("class") or "").split())]

    def by_id(self, ident: str) -> Node:
        found = [n for n in self.iter() if n.attrs.get("id") == ident]
        assert len(found) == 1, f"expected one element with id {ident!r}, found {len(found)}"
        return found[0]

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def rows(self) -> list[list[str]]:
        """A table's body rows as cell texts."""
        return [[td.text() for td in tr.find_all("td")]
                for tbody in self.find_all("tbody") for tr in tbody.find_all("tr")]


class TreeBuilder(HTMLParser):
    """Just enough of a DOM from the standard library: elements, attributes, text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Node(tag, dict(attrs), self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.current
        while node is not None and node is not self.root and node.tag != tag:
            node = node.parent
        if node is not None and node is not self.root:
            self.current = node.parent or self.root

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def parse(page: str) -> Node:
    builder = TreeBuilder()
    builder.feed(page)
    builder.close()
    return builder.root


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
    for cells in dom.by_id("analysis-paired").rows():
        assert re.fullmatch(r"\[-?[\d.]+, -?[\d.]+\]", cells[5]), cells

    images = dom.find_all("img")
    assert figures and len(images) == len(figures)
    assert [c.text() for c in dom.find_all("figcaption")] == [f.name for f in figures]
    for img, figure in zip(images, figures):
        src = img.attrs.get("src") or ""
        assert src.startswith(DATA_URI) and len(src) > len(DATA_URI), src[:60]
        data = base64.b64decode(src[len(DATA_URI):], validate=True)
        assert data.startswith(PNG_SIGNATURE) and data == figure.read_bytes(), figure.name

    entries = dom.find_all("details", "question")
    assert len(entries) == len(pairs(rows, "dataset", "question_id"))
    for entry, r in zip(entries, [r for r in rows if r["system"] == "baseline"]):
        text = entry.text()
        assert r["question"] in text and r["gold_title"] in text
        assert [a.attrs["data-system"] for a in entry.find_all("div", "answer")] == [
            "baseline", "naive", "boolean"]
    q2 = entries[1].find_all("div", "answer")[0]
    assert SCRIPT_ANSWER in q2.text()  # shown as text ...
    q3, q4 = entries[2].text(), entries[3].text()
    assert "unscored: judge gave no tool call" in q3 and "(no tool call)" in q3
    assert "failed: HTTP 500 after 6 attempts" in q4
    assert "tokens 500 in / 12 out" in entries[0].text()
    assert EVIL_TITLE in [li.text() for li in entries[0].find_all("li")]
    gold = entries[0].find_all("li", "gold")
    assert [li.text() for li in gold] == ["Gold q1", "Gold q1"]  # naive and boolean hit it


# --------------------------------------------------------------------------- the file


def test_the_command_writes_the_page_and_says_where(report):
    assert report["code"] == 0
    assert f"HTML report written to {report['path']}" in report["stdout"]


def test_the_page_is_self_contained(report):
    page = report["page"]
    assert 'src="http' not in page and "href=\"http" not in page
    assert "<link" not in page and "url(" not in page and "@import" not in page
    assert "<script" not in page.lower()  # ... no script at all, the answer's escaped
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_page_shows_every_table_figure_and_question(report):
    check_page(parse(report["page"]), report)


# --------------------------------------------------------------------------- in a browser


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("no chromium or chromium-browser on PATH: install Debian's chromium "
                    "(apt-get install chromium; tests/run.sh does this)")
    return found


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
    assert [s.attrs.get("id") for s in dom.find_all("script")] == ["probe"]
    widths = [img.attrs.get("data-natural-width") for img in dom.find_all("img")]
    assert widths == [str(png_width(f)) for f in report["figures"]]  # as the PNG header says


def dump_dom(binary: str, page: Path, profile: Path) -> tuple[str, str, int]:
    """`chromium --dump-dom` in its own process group, so that on a timeout the browser and
    every helper process it started are killed, not just the first one."""
    process = subprocess.Popen(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
         "--dump-dom", page.as_uri()],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=CHROMIUM_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"chromium did not finish the page in {CHROMIUM_TIMEOUT_S}s (a script dialog, "
                    "e.g. an unescaped alert(), blocks headless Chromium)")
    return stdout, stderr, process.returncode


def png_width(path: Path) -> int:
    """Width from the IHDR chunk, which directly follows the 8-byte signature."""
    return int.from_bytes(path.read_bytes()[16:20], "big")
