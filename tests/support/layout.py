"""The layout tree of docs/design.md#the-layout, generated from the docstrings of the source tree.

`python -m tests.support.layout --write` (run from the repository root) rewrites the block between
the markers `<!-- layout: ... -->` and `<!-- /layout -->` in docs/design.md and nothing else;
without `--write` it prints the block. tests/test_docs.py fails when the page's block differs
from what this prints, as it does for docs/cli.md.

It is a development tool, so it lives here and not beside `freshrag.cli.reference`: it reads the
repository's folders (harness/, builders/, systems/) as files, which an installed freshrag does
not have, and imports nothing of them.

The rule that makes the tree: a package's line is its role, and under it its modules, each named
with a short summary; both come from the docstring's first sentence. Its asides in parentheses
(citations such as `(docs/...)` or `(section IV)`, examples) are dropped, and its head is kept,
the words before the first colon or semicolon: "The LLM client: every chat call goes through ..."
gives "the LLM client". A head of one word or of the module's own name ("Scoring: everything
that grades ...") says too little, so the words after it stand instead. A command module whose
head only names its command shows its name alone. A summary longer than `LONG` characters is
printed in full, and `--write` names its module: the tree reads better when the head of that
docstring's first sentence is shorter.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = Path("docs") / "design.md"
COMMAND = "python -m tests.support.layout --write"
BEGIN = "<!-- layout:"
END = "<!-- /layout -->"
SOURCES = {"harness": "freshrag", "builders": "freshrag.builders", "systems": "freshrag.systems"}
# The folders that are no package: what they hold, said here since they have no docstring.
OTHERS = {
    "results/": "where runs are written (not committed)",
    "tests/": "mirrors the packages; fakes and fixtures in support/; integration/ (real "
              "llama.cpp, MediaWiki, Qdrant) · fuzz/ · benchmarks/",
    "docs/": "a page per workflow, the run format, methods, measurements, this page",
}
COLUMN = 28  # where the descriptions start
WIDTH = 100
LONG = 60  # a summary longer than this makes the tree hard to scan

ASIDE = re.compile(r"\s+\([^()]*\)")  # a parenthesis, never one in code such as `f(x)`
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"(])")
HEAD_END = re.compile(r":\s|;\s")


@dataclass
class Package:
    """A package folder: its role, its modules' (file name, summary) and its subpackages."""

    name: str
    role: str
    modules: list[tuple[str, str]] = field(default_factory=list)
    children: list[Package] = field(default_factory=list)


def summary(docstring: str, name: str = "") -> str:
    """The short form of a docstring for the tree (the rule is in the module's docstring);
    `name` is the module's or package's own name, which alone makes no summary."""
    paragraph = " ".join(docstring.split("\n\n", 1)[0].split())
    sentence = SENTENCE_END.split(paragraph, 1)[0]
    while (shorter := ASIDE.sub("", sentence)) != sentence:  # the innermost first
        sentence = shorter
    head, rest = _split_head(sentence.rstrip(".:"))
    if rest and _says_nothing(head, name):
        head = _split_head(rest)[0]
    elif _plain(head) == _plain(name):
        return ""
    head = head.strip()
    if re.match(r"[A-Z][a-z]*\b", head):  # a capital that only starts the sentence
        head = head[0].lower() + head[1:]
    return head


def _split_head(text: str) -> tuple[str, str]:
    """`text` at its first colon or semicolon outside backticks: (head, rest)."""
    for match in HEAD_END.finditer(text):
        if text[:match.start()].count("`") % 2 == 0:
            return text[:match.start()], text[match.end():]
    return text, ""


def _plain(text: str) -> str:
    return " ".join(text.strip("` ").lower().replace("_", " ").split())


def _says_nothing(head: str, name: str) -> bool:
    return len(head.split()) <= 1 or _plain(head) == _plain(name)


def _command_name(module: str, text: str) -> bool:
    """True when `text` only names the command that `module` (of cli/commands/) implements."""
    return text.strip("`") == f"freshrag {module.removesuffix('.py').replace('_', '-')}"


def read_package(folder: Path, name: str | None = None) -> Package:
    """The package in `folder`, its modules and subpackages in alphabetical order."""
    role = summary(_docstring(folder / "__init__.py"), folder.name)
    package = Package(f"{folder.name}/", f"{name}: {role}" if name else role)
    for path in sorted(folder.glob("*.py")):
        if path.name == "__init__.py":
            continue
        text = summary(_docstring(path), path.stem)
        if folder.name == "commands" and _command_name(path.name, text):
            text = ""
        package.modules.append((path.name, text))
    package.children = [read_package(sub) for sub in sorted(folder.iterdir())
                        if (sub / "__init__.py").is_file()]
    return package


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def tree(root: Path = ROOT) -> str:
    """The fenced block: the three source folders from their docstrings, then the others."""
    lines = ["```"]
    for folder, name in SOURCES.items():
        lines += tree_of(root / folder, name)
    for folder, text in OTHERS.items():
        lines += _rows(folder, "", text)
    return "\n".join([*lines, "```"])


def tree_of(folder: Path, name: str) -> list[str]:
    """The lines of one source folder's tree, `name` the package it is installed as."""
    return _draw(read_package(folder, name), "", "")


def _draw(package: Package, first: str, rest: str) -> list[str]:
    """A package's lines: `first` before its name, `rest` (the bars of the packages above)
    before its other lines and its children's."""
    modules = " · ".join(f"{file} ({text})" if text else file
                         for file, text in package.modules)
    bar = "│" if package.children else ""
    lines = _rows(first + package.name, rest + bar, package.role)
    if modules:
        lines += _rows(rest + bar, rest + bar, modules)
    for index, child in enumerate(package.children):
        last = index == len(package.children) - 1
        lines += _draw(child, rest + ("└── " if last else "├── "),
                       rest + ("    " if last else "│   "))
    return lines


def _rows(left: str, left_after: str, text: str) -> list[str]:
    """`text` wrapped in the right-hand column, `left` beside its first line."""
    wrapped = textwrap.wrap(text, WIDTH - COLUMN, break_long_words=False,
                            break_on_hyphens=False) or [""]
    lefts = [left, *[left_after] * (len(wrapped) - 1)]
    return [f"{lft:<{COLUMN}}{line}".rstrip() for lft, line in zip(lefts, wrapped)]


def block(root: Path = ROOT) -> str:
    """The markers and the tree between them, as docs/design.md holds them."""
    return f"{BEGIN} generated from the docstrings by `{COMMAND}` -->\n{tree(root)}\n{END}"


def replaced(page: str, new_block: str) -> str:
    """`page` with its generated block (the markers included) replaced by `new_block`."""
    start, end = page.find(BEGIN), page.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{DOC} has no block between `{BEGIN} ...` and `{END}`")
    return page[:start] + new_block + page[end + len(END):]


def long_summaries(root: Path = ROOT) -> list[str]:
    """The modules and packages whose summary is longer than LONG characters."""
    found = []
    for folder in SOURCES:
        for path in sorted((root / folder).rglob("*.py")):
            name = path.parent.name if path.name == "__init__.py" else path.stem
            if len(text := summary(_docstring(path), name)) > LONG:
                found.append(f"{path.relative_to(root)}: {text}")
    return found


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(prog="python -m tests.support.layout",
                                   description="Print docs/design.md's layout block, generated "
                                               "from the source tree's docstrings.")
    args.add_argument("--write", action="store_true",
                      help=f"replace the block in {DOC} instead (run from the repository root)")
    options = args.parse_args(argv)
    if not options.write:
        sys.stdout.write(block() + "\n")
        return 0
    page = ROOT / DOC
    page.write_text(replaced(page.read_text(encoding="utf-8"), block()), encoding="utf-8")
    print(f"wrote {DOC}")
    if long := long_summaries():
        print(f"summaries over {LONG} characters (the tree reads better with a shorter head of "
              f"these docstrings' first sentence):", *long, sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
