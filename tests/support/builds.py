"""`freshrag build` as the builder tests run it, on dumps of the released articles with the fake
server as every model: the plain build (`build`), and the builds for needs, statements and
traffic, each with the scripted replies it needs."""

from __future__ import annotations

import json
import re
from pathlib import Path

from freshrag.builders.build import WRITES
from freshrag.cli.main import main
from tests import WIKIRAG
from tests.support.fake_openai_server import default_reply
from tests.support.wikidump import article_pages, write_dump

CUTOFF = "2021-09-30"
DUMP_ARTICLES = 40  # released articles in the plain build's dump
NEEDS = "Results of local elections\nCasualties of disasters\n"
LABELS = "fact_single=2,summary=1,reasoning=1,unanswerable=1"
FRESH, OLD = 6, 8  # released articles created after the cutoff / of the random sample


def listed_build(argv: list[str]) -> int:
    """`freshrag build` with `argv` (after "build"); then every file in its --out must be one
    that builders/build.py's WRITES lists, since `build` refuses an input at those paths only
    (harness/core/outputs.py)."""
    code = main(["build", *argv])
    out = Path(argv[argv.index("--out") + 1])
    unlisted = sorted(p.name for p in out.iterdir() if p.is_file() and p.name not in WRITES) \
        if out.is_dir() else []
    assert not unlisted, f"the build wrote files its WRITES does not list: {unlisted}"
    return code


def build(tmp_path: Path, dump_path: Path, *extra: str) -> int:
    """`freshrag build` of `dump_path` into `tmp_path / "dataset"`."""
    return listed_build(["--dump", str(dump_path), "--cutoff", CUTOFF,
                         "--out", str(tmp_path / "dataset"), *extra])


# --------------------------------------------------------------------------- needs


def needs_reply(request):
    """describe_need: a sentence made from the first query shown; submit_question: a question
    naming the chunk's article, or BLANK for the second need; anything else: the default."""
    tool = request.get("tool_choice") or {}
    name = tool.get("function", {}).get("name") if isinstance(tool, dict) else None
    user = request["messages"][-1]["content"]
    if name == "describe_need":
        first = user.splitlines()[0].removeprefix("- ")
        return {"tool_call": {"name": name, "arguments": json.dumps(
            {"description": f"What users ask when they ask: {first}"})}}
    if name == "submit_question":
        title = user.splitlines()[0].removeprefix("Title: ")
        blank = "Casualties" in request["messages"][0]["content"]
        question = "BLANK" if blank else f"What happened in {title}?"
        return {"tool_call": {"name": name, "arguments": json.dumps(
            {"question": question, "answer": "" if blank else "a result"})}}
    return default_reply(request)


def needs_build(tmp_path: Path, *extra: str) -> int:
    """`freshrag build` with questions from A_d, on a dump of 12 released articles in
    `tmp_path` (written on the first call)."""
    dump = tmp_path / "wiki.xml"
    if not dump.exists():
        write_dump(dump, article_pages(WIKIRAG / "articles.jsonl", 12))
    return listed_build(["--dump", str(dump), "--cutoff", CUTOFF, "--out",
                         str(tmp_path / "dataset"), "--questions-from", "A_d", *extra])


# --------------------------------------------------------------------------- statements


def tool(name, arguments):
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"tool_call": {"name": name, "arguments": text}}


def statements_reply(request):
    """Statements that name their kind, a question writer that breaks on summaries, a critique
    that finds reasoning questions ungrounded, a labeller that cannot label unanswerable ones."""
    name = request.get("tool_choice", {}).get("function", {}).get("name") \
        if isinstance(request.get("tool_choice"), dict) else None
    user = request["messages"][-1]["content"]
    system = request["messages"][0]["content"]
    if name == "report_statements":
        kind = "Summary" if "summary" in system else \
            "Conclusion" if "reasoning" in system else "Fact"
        return tool(name, {"statements": [f"{kind} one.", f"{kind} two."]})
    if name == "write_question":
        if "Statement: Summary" in user:
            return tool(name, '{"question": "broken')
        statement = re.search(r"Statement: (\w+)", user)
        about = statement.group(1) if statement else "later"
        return tool(name, {"question": f"What about {about}?"})
    if name == "rate_question":
        low = "Conclusion" in user or "later" in user
        return tool(name, {"stand_alone": 5, "specificity": 4,
                           "question_grounding": 1 if low else 5, "answer_grounding": 5})
    if name == "assign_label":
        return tool(name, {"label": "maybe" if "later" in user else "fact_single"})
    return default_reply(request)  # theme, recency


def statements_build(tmp_path: Path, dump: Path, *extra: str) -> int:
    """`freshrag build --style statements` with LABELS into `tmp_path / "d"`."""
    return listed_build(["--dump", str(dump), "--cutoff", CUTOFF, "--out", str(tmp_path / "d"),
                         "--style", "statements", "--labels", LABELS, "--concurrency", "2",
                         *extra])


# --------------------------------------------------------------------------- traffic


def write_traffic_dump(tmp_path: Path) -> Path:
    """A dump of the first FRESH post-cutoff released articles and the first OLD without a
    creation date, which the test dump gives its stand-in date (2015), long before the cutoff."""
    rows = [json.loads(line) for line in (WIKIRAG / "articles.jsonl").open(encoding="utf-8")]
    chosen = [r for r in rows if r["created"] and len(r["content"]) > 1000][:FRESH] + \
             [r for r in rows if not r["created"] and len(r["content"]) > 1000][:OLD]
    subset = tmp_path / "subset.jsonl"
    subset.write_text("".join(json.dumps(r) + "\n" for r in chosen), encoding="utf-8")
    return write_dump(tmp_path / "wiki.xml.bz2", list(article_pages(subset)))


def traffic_build(tmp_path: Path, dump_path: Path, *extra: str) -> int:
    """`freshrag build` with seed 3 (it draws the control articles) into `tmp_path / "dataset"`."""
    return listed_build(["--dump", str(dump_path), "--cutoff", CUTOFF, "--seed", "3",
                         "--out", str(tmp_path / "dataset"), *extra])
