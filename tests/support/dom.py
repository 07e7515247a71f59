"""The HTML report as the tests read it: a small DOM from the standard library's parser
(`parse`), and the page as headless Chromium builds it (`dump_dom`; Debian's `chromium` package,
which tests/run.sh installs)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Iterator

import pytest

CHROMIUM_TIMEOUT_S = 120

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
