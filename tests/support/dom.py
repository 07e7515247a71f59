"""The HTML report as the tests read it: a small DOM from the standard library's parser
(`parse`), the viewer's answers read back from the page's JSON (`viewer_samples`), the page as
headless Chromium builds it (`dump_dom`), and a browser to click through it (`browser`: Playwright
driving Debian's `chromium` package, which tests/run.sh installs; nothing downloads a browser)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Iterator

import pytest

CHROMIUM_TIMEOUT_S = 120
# Playwright's launch of the system Chromium: nothing of Google's services, no update, no download
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

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


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("no chromium or chromium-browser on PATH: install Debian's chromium "
                    "(apt-get install chromium; tests/run.sh does this)")
    return found


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


def viewer_samples(dom: Node) -> list[dict[str, Any]]:
    """Every answer of the page's viewer, in the viewer's order, from its JSON elements: the
    list's columns by name, plus `label` (the run identity's), `q` (the question's entry:
    dataset, id, text, gold title, label, kind) and `record` (the block's record, shared strings
    resolved as the viewer's script resolves them)."""
    data = json.loads(dom.by_id("viewer-data").text())
    blocks: dict[int, dict[str, Any]] = {}
    samples = []
    for entry in data["samples"]:
        sample = dict(zip(data["columns"], entry))
        n = sample["block"]
        if n not in blocks:
            blocks[n] = json.loads(dom.by_id(f"viewer-block-{n}").text())
        block = blocks[n]
        sample.update(label=data["systems"][sample["system"]],
                      q=data["questions"][sample["question"]],
                      record=_resolve(block["samples"][sample["slot"]], block["strings"]))
        samples.append(sample)
    return samples


def _resolve(value: Any, strings: list[str]) -> Any:
    if isinstance(value, str) and value.startswith("\x00"):
        return value[1:] if value.startswith("\x00\x00") else strings[int(value[1:])]
    if isinstance(value, dict):
        return {key: _resolve(item, strings) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve(item, strings) for item in value]
    return value


@contextlib.contextmanager
def browser() -> Iterator[Any]:
    """A Playwright browser on the system Chromium; fails (never skips) naming what to install."""
    binary = chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("no playwright: pip install -e '.[test]' (the PyPI wheel; never "
                    "`playwright install`, the test drives Debian's chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=binary, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@contextlib.contextmanager
def viewer_tab(page_url: str) -> Iterator[Any]:
    """The report at `page_url` in Chromium, its answer list drawn; at the end no request beyond
    its own file was made, no script error raised and no dialog opened (offline, and no data
    ever ran as code)."""
    with browser() as chromium:
        tab = chromium.new_page(viewport={"width": 1400, "height": 1000})
        tab.requests, tab.errors = [], []
        tab.on("request", lambda r: tab.requests.append(r.url)
               if not r.url.startswith(("file:", "data:")) else None)
        tab.on("pageerror", lambda e: tab.errors.append(str(e)))
        tab.on("dialog", lambda d: (tab.errors.append(f"dialog {d.message}"), d.dismiss()))
        tab.goto(page_url)
        tab.wait_for_selector("#viewer-spacer .vrow")
        yield tab
        assert tab.requests == [] and tab.errors == []


def report_url(run_dir: Path) -> str:
    """`freshrag report RUN --html` of `run_dir`, written into it, as a file URL."""
    from freshrag.cli.main import main

    html = run_dir / "report.html"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", str(run_dir), "--html", str(html)]) == 0
    return html.as_uri()
