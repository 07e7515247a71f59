"""The documentation stays true to the code (docs/design.md#documentation): docs/cli.md is what the
parser generates now and docs/design.md's layout what the source tree's docstrings generate,
every relative link of README.md and docs/ reaches a file of the repository (and a heading of
that page, where it names one), every docs/ page the code cites exists with the heading cited,
and the README stays short enough to read at once."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from pathlib import Path

import pytest

from freshrag.cli import reference
from freshrag.cli.main import parser
from tests.support import layout

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCES = sorted(path for folder in ("harness", "builders", "systems", "tests")
                 for path in (ROOT / folder).rglob("*.py")
                 if path != Path(__file__).resolve())  # whose broken links are on purpose
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
CITATION = re.compile(r"\bdocs/[\w-]+\.md(?:#[\w-]+)?")
README_LINES = 200  # what the README leaves out has a page of docs/


def prose(text: str) -> str:
    """The text without fenced blocks and code spans, where nothing is a link or a heading."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, a repeated one numbered as GitHub numbers it."""
    seen: Counter[str] = Counter()
    found = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        base = reference.slug(heading)
        found.add(f"{base}-{seen[base]}" if seen[base] else base)
        seen[base] += 1
    return found


def broken(target: str, page: Path) -> str | None:
    """Why a link from `page` leads nowhere, or None."""
    path, _, anchor = target.partition("#")
    resolved = (page.parent / path).resolve() if path else page
    if not resolved.is_relative_to(ROOT):
        return f"{target}: outside the repository"
    if not resolved.exists():
        return f"{target}: no such file"
    if anchor and anchor not in anchors(resolved):
        return f"{target}: no heading #{anchor} in {resolved.relative_to(ROOT)}"
    return None


def test_cli_reference_is_what_the_parser_generates():
    generated = reference.reference(parser())
    written = (ROOT / reference.DOC).read_text(encoding="utf-8")
    if written != generated:
        diff = difflib.unified_diff(written.splitlines(), generated.splitlines(),
                                    "docs/cli.md", "generated", lineterm="", n=1)
        pytest.fail(f"docs/cli.md is stale: regenerate it from the repository root with "
                    f"`{reference.COMMAND}`\n" + "\n".join(list(diff)[:40]))


def test_design_layout_is_what_the_docstrings_generate():
    page = (ROOT / layout.DOC).read_text(encoding="utf-8")
    written = page[page.find(layout.BEGIN):page.find(layout.END) + len(layout.END)]
    generated = layout.block()
    if written != generated:
        diff = difflib.unified_diff(written.splitlines(), generated.splitlines(),
                                    "docs/design.md", "generated", lineterm="", n=1)
        pytest.fail(f"docs/design.md's layout is stale: regenerate it from the repository root "
                    f"with `{layout.COMMAND}`\n" + "\n".join(list(diff)[:40]))


def test_the_layout_is_made_by_its_rule(tmp_path):
    package = tmp_path / "harness"
    (package / "cli" / "commands").mkdir(parents=True)
    (package / "__init__.py").write_text('"""Tools: what it does (docs/x.md). More."""\n')
    (package / "one.py").write_text('"""The first module (section IV): its detail; more."""\n')
    (package / "cli" / "__init__.py").write_text('"""The command; what it is."""\n')
    (package / "cli" / "commands" / "__init__.py").write_text('"""Its commands. More."""\n')
    (package / "cli" / "commands" / "go_on.py").write_text('"""`freshrag go-on`: goes on."""\n')
    assert layout.tree_of(package, "pkg") == [
        "harness/                    pkg: what it does",
        "│                           one.py (the first module)",
        "└── cli/                    the command",
        "    └── commands/           its commands",
        "                            go_on.py"]
    assert layout.replaced("a\n<!-- layout: x -->\nold\n<!-- /layout -->\nb\n", "NEW") == \
        "a\nNEW\nb\n"


def test_the_readme_reads_at_once():
    lines = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines < README_LINES, (f"README.md has {lines} lines: move detail into the page of "
                                  f"docs/ it belongs to, and link it")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_heading(page):
    targets = LINK.findall(prose(page.read_text(encoding="utf-8")))
    local = [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t)]  # http:, mailto: ...
    assert [problem for t in local if (problem := broken(t, page))] == []


def test_every_docs_citation_in_the_code_reaches_a_heading():
    problems = [f"{source.relative_to(ROOT)}: {problem}"
                for source in SOURCES
                for cited in CITATION.findall(source.read_text(encoding="utf-8"))
                if (problem := broken(cited, ROOT / "README.md"))]
    assert problems == []


def test_the_checks_see_a_broken_link_and_anchor(tmp_path):
    page = ROOT / "README.md"
    assert broken("docs/no-such-page.md", page) == "docs/no-such-page.md: no such file"
    assert "no heading #no-such-heading" in broken("#no-such-heading", page)
    assert broken("../outside.md", page) == "../outside.md: outside the repository"
    twice = tmp_path / "twice.md"
    twice.write_text("# A `b` c\n\n```\n# not a heading\n```\n## A b c\n", encoding="utf-8")
    assert anchors(twice) == {"a-b-c", "a-b-c-1"}
