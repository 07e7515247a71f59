"""The registry of question styles (builders/styles/__init__.py): the built-in styles, each an
object the build asks rather than a name it tests; and a third party's style, installed under the
`freshrag.styles` entry point, that `--style` offers and the questions stage, the manifest and the
dry run use without further code."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest

from freshrag.builders.build import WRITES, label_spec, labelling
from freshrag.builders.manifest import update_manifest
from freshrag.builders.sources.pages import BuildError
from freshrag.builders.stages import BuildConfig, generate_questions
from freshrag.builders.styles import NEEDED, STYLES, Choices, style_of
from freshrag.cli.main import parser
from freshrag.core.jsonl import read_jsonl
from freshrag.core.plugins import PluginError
from freshrag.cost.build_estimate import build_jobs
from tests import ROOT
from tests.support.fakes import ScriptedLLM
from tests.support.packages import install_package

BRIEF = '''
"""Brief questions: one per article, of at most five words."""
from freshrag.builders.styles.base import Plain, read_articles
from freshrag.core.jsonl import JsonlWriter, read_jsonl

PROMPT = "Write one question of at most five words about this article."


class Brief(Plain):
    name = "brief"
    description = "questions of at most five words"

    def settings(self, config):
        return {"brief_words": 5}

    def write_questions(self, llm, config, titles):
        articles, path = read_articles(config.out), config.out / "questions.jsonl"
        done = {row["id"] for row in read_jsonl(path)}
        writer = JsonlWriter(path)
        try:
            for position, title in enumerate(titles):
                if f"brief-{position}" not in done:
                    reply = ask(llm, title, articles[title]["content"])
                    writer.write({"id": f"brief-{position}", "title": title,
                                  "question": reply.text, "style": self.name})
        finally:
            writer.close()
        return len(read_jsonl(path))

    def walk(self, config, titles, articles, done, known):
        def run(llm, position, title, label):
            if f"brief-{position}" not in done:
                ask(llm, title, articles[title]["content"])
        return run


def ask(llm, title, content):
    return llm.chat("builder", [{"role": "system", "content": PROMPT},
                                {"role": "user", "content": f"Title: {title}\\n\\n{content}"}],
                    temperature=1.0, max_tokens=20)


BRIEF = Brief()
NOT_A_STYLE = object()
'''


def built_to_a_f(out: Path, titles: tuple[str, ...], **settings) -> BuildConfig:
    """A dataset directory whose stages up to A_f have finished, every article in A_f."""
    out.mkdir()
    (out / "articles.jsonl").write_text("".join(
        f'{{"title": "{title}", "content": "{title} is a town.", "revision_id": 7}}\n'
        for title in titles))
    for stage in ("A_r", "A_d", "A_f"):
        (out / f"{stage}.txt").write_text("".join(f"{title}\n" for title in titles))
    return BuildConfig(out=out, cutoff=date(2021, 9, 30), n=len(titles), **settings)


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """brief_style.py installed as pip would: a dist-info with its entry points."""
    install_package(tmp_path, monkeypatch, "brief_style", BRIEF, "0.1.0", STYLES.group,
                    {"brief": "brief_style:BRIEF", "broken": "brief_style:NOT_A_STYLE"})


def test_every_built_in_style_is_an_object_the_build_can_ask():
    assert list(STYLES) == ["creative", "recent", "statements", "grounded", "multihop",
                            "changed"]
    for name, style in STYLES.items():
        assert style.name == name and all(hasattr(style, key) for key in NEEDED)
        assert set(style.files) <= set(WRITES)
    assert [name for name in STYLES if labelling(False, name)] == ["statements"]
    assert label_spec("grounded", None, ()) is None


def test_the_build_names_no_style():
    """No module of the build tests a style's name: each asks the style object."""
    branch = re.compile(r"""style\s*[!=]=\s*["']|["']\s*[!=]=\s*\w*style\b""")
    for path in ("builders/stages.py", "builders/build.py", "builders/manifest.py",
                 "harness/cost/build_estimate.py", "harness/cli/commands/build.py"):
        assert not branch.findall((ROOT / path).read_text(encoding="utf-8")), path


def test_an_installed_style_is_offered_and_used_without_further_code(tmp_path, installed):
    assert "brief" in Choices() and list(Choices())[:len(STYLES) + 1] == [*STYLES, "brief"]
    args = parser().parse_args(["build", "--out", str(tmp_path / "d"), "--cutoff",
                                "2021-09-30", "--style", "brief"])
    assert args.style == "brief"
    cfg = built_to_a_f(tmp_path / "data", ("One", "Two"), concurrency=1, style="brief")
    jobs = build_jobs(cfg)
    counted = ScriptedLLM(["Why?", "How?"])
    for job in jobs:
        job.run(counted)
    assert [r["max_tokens"] for r in counted.requests] == [20, 20]  # what the dry run counts
    live = ScriptedLLM(["Why One?", "How Two?"])
    assert generate_questions(live, cfg) == 2
    assert live.requests == counted.requests  # the walk asks what the stage asks
    assert [row["question"] for row in read_jsonl(cfg.out / "questions.jsonl")] == [
        "Why One?", "How Two?"]
    manifest = update_manifest(cfg, None, None, None, "questions")
    assert manifest["settings"]["style"] == "brief" and manifest["settings"]["brief_words"] == 5
    with pytest.raises(BuildError, match="--labels and --min-critique go with --style statements"):
        label_spec("brief", None, (("specificity", 3),))


def test_an_unknown_or_broken_style_is_named(installed):
    with pytest.raises(BuildError, match=r"--style 'nope': no such style; valid styles: "
                                         r"creative, recent, statements, grounded, multihop, changed, "
                                         r"brief"):
        style_of("nope")
    with pytest.raises(PluginError, match=r"style .broken. \(brief_style:NOT_A_STYLE \(brief-style "
                                          r"0.1.0\)\): a "
                                          r"object, which has no name, description"):
        style_of("broken")


def test_the_registry_lives_below_the_stages():
    """A style imports none of the stages (which import the registry): no cycle."""
    for path in Path(ROOT / "builders" / "styles").glob("*.py"):
        assert "builders.stages" not in path.read_text(encoding="utf-8"), path
