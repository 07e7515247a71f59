"""Every command that reads a dataset or a run, on every kind of question set: generated, one case
per (command, kind), on the fake OpenAI-compatible server (its Batch API too).

The kinds, each built once for the module by `freshrag build` on a dump (a few questions each):
creative (the default build), statements (`--style statements`: references, labels), grounded
(`--style grounded`: references, groups, criteria), mix (`freshrag mix` of a traffic build: one
fresh, one control and one general query, whose `title` is null), imported (the creative set
answered by a file through `freshrag import`, contexts included) and multihop (two-article
questions over the creative set's articles, written by hand: `gold_titles`, `hops`, `multihop`).

Each case runs its command in process and asserts: the exit status is 0, or 2 with the one named
error that EXPECTED says the design gives that pair; no traceback; and that the feature did its
work (rows, scores, counts equal to the questions), so that a feature that silently does
nothing on a kind fails here as surely as one that crashes.
"""

from __future__ import annotations

import contextvars
import itertools
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from freshrag.core.jsonl import read_jsonl
from freshrag.core.samples import read_samples
from freshrag.scoring import SCORERS
from freshrag.scoring.claims import NO_SOURCE
from freshrag.scoring.staleness import NOT_CHANGED
from freshrag.scoring.store import read_scores
from tests import WIKIRAG
from tests.fuzz.support import Result, assert_refused, invoke
from tests.support.builds import CUTOFF, statements_reply, write_traffic_dump
from tests.support.datasets import write_multihop_set
from tests.support.fake_batches import FakeBatches
from tests.support.fake_openai_server import FakeOpenAIServer, forced_tool_name
from tests.support.fakes import discerning_judge, scorers_reply, use_endpoint
from tests.support.wikidump import article_pages, write_dump

N = 3  # questions run per kind
SYSTEMS = "oracle,naive"  # the gold article handed over, and retrieval
SCORER_TOOLS = {"submit_statements", "submit_verdicts", "submit_needed_sentences",
                "submit_questions", "submit_abstention", "submit_grade"}
KINDS = ("creative", "statements", "grounded", "mix", "imported", "multihop")


def reply(request):
    """A judge that tells right from wrong where there is an article (so that its probes pass),
    the scorers' replies (tests/support/fakes.py), the statement and grounded builders'
    (tests/support/builds.py); the default reply for anything else."""
    name = forced_tool_name(request)
    if name == "submit_grade" and "Wikipedia article:" in request["messages"][-1]["content"]:
        return discerning_judge(request)
    if name in SCORER_TOOLS:
        return scorers_reply(request)
    return statements_reply(request)


@dataclass
class Kind:
    name: str
    dataset: Path
    run: Path | None = None  # its base run, made on first use


@dataclass
class World:
    root: Path
    server: FakeOpenAIServer
    batches: FakeBatches
    kinds: dict[str, Kind] = field(default_factory=dict)

    def answered(self, kind: str) -> list[str]:
        """Question ids of the kind's first N questions, as the runs take them."""
        rows = read_jsonl(self.kinds[kind].dataset / "questions.jsonl")
        return [str(row["id"]) for row in rows][:N]


# The named error the case's first command must end in (EXPECTED), if any.
REFUSAL: contextvars.ContextVar[str | None] = contextvars.ContextVar("refusal", default=None)


class Refused(Exception):
    """The case's command ended in the named error EXPECTED gives its pair; the case ends."""


def ok(*argv: str | Path) -> Result:
    """The command's result: exit 0 without a traceback, or the expected refusal (Refused)."""
    result = invoke(*argv)
    assert "Traceback" not in result.err, result.err
    if REFUSAL.get() is not None:
        assert_refused(result, REFUSAL.get())
        raise Refused
    assert result.status == 0, result
    return result


def build(world_root: Path, name: str, dump: Path, *extra: str) -> Path:
    out = world_root / name
    ok("build", "--dump", dump, "--out", out, *extra)
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    root = tmp_path_factory.mktemp("kinds")
    batches = FakeBatches()
    with FakeOpenAIServer(reply=reply, batches=batches) as server, \
            pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)  # the response cache goes into ./results
        use_endpoint(mp, server.base_url, "sk-kinds")
        world = World(root, server, batches)
        dump = write_dump(root / "wiki.xml", article_pages(WIKIRAG / "articles.jsonl", 12))
        creative = build(root, "creative", dump, "--cutoff", CUTOFF, "--questions-from", "A_d")
        statements = build(root, "statements", dump, "--cutoff", CUTOFF, "--questions-from", "A_d",
                           "--style", "statements",
                           "--labels", "fact_single=1,summary=1,reasoning=1,unanswerable=1")
        from freshrag.cli.commands.demo import write_example_dump

        grounded = build(root, "grounded", write_example_dump(root / "example.xml"), "--cutoff",
                         "2025-12-31", "--questions-from", "A_r", "--style", "grounded",
                         "--groups", "2", "--criteria", "short,long")
        (root / "traffic-dump").mkdir()
        traffic = build(root, "traffic", write_traffic_dump(root / "traffic-dump"),
                        "--cutoff", CUTOFF, "--control", "2", "--general", "2")
        ok("mix", traffic, "--fresh", "0.4", "--control", "0.3", "--general", "0.3", "--n", N,
           "--seed", "1", "--out", root / "mix")
        multihop = write_multihop_set(creative, root / "multihop", N)
        for name, dataset in (("creative", creative), ("statements", statements),
                              ("grounded", grounded), ("mix", root / "mix"),
                              ("imported", creative), ("multihop", multihop)):
            world.kinds[name] = Kind(name, dataset)
        write_answers(world)
        assert [len(world.answered(kind)) for kind in KINDS] == [N] * len(KINDS)
        assert {q.get("kind") for q in read_jsonl(root / "mix" / "questions.jsonl")} == \
            {"fresh", "control", "general"}
        yield world


def write_answers(world: World) -> None:
    """The imported kind's answers file: every question answered, with a context."""
    articles = {row["title"]: row["content"]
                for row in read_jsonl(world.kinds["imported"].dataset / "articles.jsonl")}
    rows = [{"question_id": str(q["id"]), "answer": f"{q['title']} has a long history.",
             "contexts": [articles[q["title"]][:300]], "input_tokens": 50, "output_tokens": 9}
            for q in read_jsonl(world.kinds["imported"].dataset / "questions.jsonl")]
    (world.root / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def run_command(world: World, kind: str, out: Path, *extra: str | Path) -> list[str | Path]:
    """`run` of the kind's dataset (`import` of the answers file for the imported kind)."""
    common = ["--dataset", world.kinds[kind].dataset, "--out", out, "--limit", str(N),
              "--probe-k", "2", "--index-dir", world.root / ".index", *extra]
    if kind == "imported":
        return ["import", world.root / "answers.jsonl", "--system", "ext", *common]
    return ["run", "--systems", SYSTEMS, *common]


def systems_of(kind: str) -> list[str]:
    return ["ext"] if kind == "imported" else SYSTEMS.split(",")


def base_run(world: World, kind: str) -> Path:
    """The kind's run, made once; a case that writes into a run works on a copy."""
    if world.kinds[kind].run is None:
        out = world.root / "runs" / kind
        ok(*run_command(world, kind, out))
        world.kinds[kind].run = out
    return world.kinds[kind].run


def copy_run(world: World, kind: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(base_run(world, kind), tmp_path / "run"))


def assert_every_pair_answered(world: World, kind: str, run: Path) -> list[dict]:
    rows = read_samples(run / "samples.jsonl")
    expected = sorted(itertools.product(world.answered(kind), systems_of(kind)))
    assert sorted((r["question_id"], r["system"]) for r in rows) == expected
    assert all(r["status"] == "ok" and r["grade"]["truthfulness"] is not None for r in rows), rows
    return rows


def calls_of(table: str) -> dict[str, tuple[int, int]]:
    """Calls per role in a dry run's markdown table: the least and the most (a range where a
    reply's decisions or lists change them)."""
    rows = re.findall(r"^\| (\w+) \| [^|]+ \| ([\d,]+)(?:–([\d,]+))? \|", table, re.MULTILINE)
    return {role: (int(low.replace(",", "")), int((high or low).replace(",", "")))
            for role, low, high in rows}


# --------------------------------------------------------------------------- the cases


def case_run(world: World, kind: str, tmp_path: Path) -> None:
    ok(*run_command(world, kind, tmp_path / "run"))
    rows = assert_every_pair_answered(world, kind, tmp_path / "run")
    general = [r for r in rows if r.get("kind") == "general"]
    assert len(general) == (len(systems_of(kind)) if kind == "mix" else 0)
    assert all(r["gold_title"] is None for r in general)
    if kind == "multihop":  # every row carries its gold set; the oracle read both articles
        assert all(len(r["gold_titles"]) == r["hops"] == 2 for r in rows)
        assert all([s["title"] for s in r["steps"] if s["kind"] == "read"] == r["gold_titles"]
                   for r in rows if r["system"] == "oracle")


def case_dry_run(world: World, kind: str, tmp_path: Path) -> None:
    """The dry run counts exactly the calls the run then makes (every call a cache miss)."""
    counted = calls_of(ok(*run_command(world, kind, tmp_path / "run", "--dry-run",
                                       "--no-cache")).out)
    assert counted["judge"][0] >= N * len(systems_of(kind)), counted  # a grade per pair
    before = world.server.calls
    ok(*run_command(world, kind, tmp_path / "run", "--no-cache"))
    made = world.server.calls - before
    assert sum(low for low, _ in counted.values()) == made == sum(
        high for _, high in counted.values()), (counted, made)


def case_batch(world: World, kind: str, tmp_path: Path) -> None:
    """Every call through the Batch API: the live pass then finds each in the cache."""
    created, before = world.batches.created, world.server.calls
    ok(*run_command(world, kind, tmp_path / "run", "--batch", "--batch-poll", "0.01",
                    "--no-probe"))
    assert world.batches.created > created and world.server.calls == before
    assert_every_pair_answered(world, kind, tmp_path / "run")


def case_score(name: str) -> Callable[[World, str, Path], None]:
    def case(world: World, kind: str, tmp_path: Path) -> None:
        run = copy_run(world, kind, tmp_path)
        ok("score", run, "--scorers", name)
        rows = [s for s in read_scores(run) if s["scorer"] == name]
        assert len(rows) == N * len(systems_of(kind))  # one per answer
        by_status = {status: [s for s in rows if s["status"] == status]
                     for status in ("scored", "unscored", "not_applicable", "failed")}
        if name == "staleness":  # no kind here is a set of changed facts: none applies
            assert {(s["status"], s["reason"]) for s in rows} == {("not_applicable",
                                                                   NOT_CHANGED)}
            return
        assert by_status["scored"] and not by_status["failed"], rows
        assert all(s["reason"] for s in by_status["unscored"] + by_status["not_applicable"])
        if name == "claims" and kind == "mix":  # the general query: no source, said so
            general = [s for s in rows if s["question_id"] in general_ids(world)]
            assert general and all(s["status"] == "not_applicable" and s["reason"] == NO_SOURCE
                                   for s in general)
    return case


def general_ids(world: World) -> set[str]:
    return {str(q["id"]) for q in read_jsonl(world.kinds["mix"].dataset / "questions.jsonl")
            if q.get("kind") == "general"}


def case_score_dry_run(world: World, kind: str, tmp_path: Path) -> None:
    run = copy_run(world, kind, tmp_path)
    counted = calls_of(ok("score", run, "--scorers", ",".join(SCORERS), "--dry-run",
                          "--no-cache").out)
    pairs = N * len(systems_of(kind))
    assert counted["judge"] == (pairs, pairs), counted  # one grade per answer
    assert counted["scorer"][0] >= pairs, counted  # at least abstention's and relevance's
    assert not (run / "scores.jsonl").exists()


def case_score_batch(world: World, kind: str, tmp_path: Path) -> None:
    run = copy_run(world, kind, tmp_path)
    created = world.batches.created
    ok("score", run, "--scorers", ",".join(SCORERS), "--batch", "--batch-poll", "0.01")
    assert world.batches.created > created
    scores = list(read_scores(run))
    assert len(scores) == N * len(systems_of(kind)) * len(SCORERS)
    assert not [s for s in scores if s["status"] == "failed"]


def case_report(world: World, kind: str, tmp_path: Path) -> None:
    run = copy_run(world, kind, tmp_path)
    ok("report", run, "--out", tmp_path / "report", "--html", tmp_path / "report.html",
       "--by", "kind")
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert sorted(row["system"] for row in summary["rows"]) == sorted(systems_of(kind))
    assert all(row["n"] == N for row in summary["rows"])
    assert (tmp_path / "report.html").stat().st_size > 0


def case_report_mix(world: World, kind: str, tmp_path: Path) -> None:
    run = copy_run(world, kind, tmp_path)
    ok("report", run, "--out", tmp_path / "report", "--mix", "0.5:0.3:0.2", "--mix", "0:0.5:0.5")
    mixes = json.loads((tmp_path / "report" / "analysis.json").read_text())["mixes"]
    labels = ["fresh 0.5, control 0.3, general 0.2", "fresh 0, control 0.5, general 0.5"]
    assert sorted((row["system"], row["mix"]) for row in mixes) == sorted(
        itertools.product(systems_of(kind), labels))
    assert all(row["score"] for row in mixes)


def case_agreement(world: World, kind: str, tmp_path: Path) -> None:
    """The run's grades against a second repeat of its judge, every pair compared."""
    run = copy_run(world, kind, tmp_path)
    ok("score", run, "--scorers", "judge", "--repeats", "2")
    ok("agreement", base_run(world, kind), run, "--repeat-b", "1", "--out",
       tmp_path / "agreement", "--format", "json")
    figures = json.loads((tmp_path / "agreement" / "agreement.json").read_text())
    assert figures["pairs"]["compared"] == N * len(systems_of(kind)), figures["pairs"]


def case_label(world: World, kind: str, tmp_path: Path) -> None:
    """Every question with a gold article labelled; a general query has none to label by."""
    dataset = Path(shutil.copytree(world.kinds[kind].dataset, tmp_path / "dataset"))
    ok("label", dataset)
    questions = list(read_jsonl(dataset / "questions.jsonl"))
    with_article = [q for q in questions if q["title"] is not None]
    assert len(with_article) == len(questions) - (kind == "mix")
    assert len(list(read_jsonl(dataset / "labels.jsonl"))) == len(with_article)
    assert all(q.get("label") for q in with_article)
    assert not [q for q in questions if q["title"] is None and q.get("label")]


def case_mix(world: World, kind: str, tmp_path: Path) -> None:
    ok("mix", world.kinds[kind].dataset, "--fresh", "0.4", "--control", "0.3", "--general", "0.3",
       "--n", N, "--out", tmp_path / "mix")
    assert len(list(read_jsonl(tmp_path / "mix" / "questions.jsonl"))) == N


def case_scan_retrieval(world: World, kind: str, tmp_path: Path) -> None:
    ok("scan-retrieval", world.kinds[kind].dataset, "--limit", N, "--weights", "0,1",
       "--out", tmp_path / "scan", "--index-dir", world.root / ".index")
    scan = json.loads((tmp_path / "scan" / "scan-retrieval.json").read_text())
    general = len(general_ids(world) & set(world.answered(kind))) if kind == "mix" else 0
    assert (scan["questions"], scan["general_queries"]) == (N - general, general), scan


def case_filter(world: World, kind: str, tmp_path: Path) -> None:
    """The questions kept are those the run's first system answered below --known-at; the
    articles stay whole; every question of the set is counted once."""
    run, system = base_run(world, kind), systems_of(kind)[0]
    truths = {r["question_id"]: r["grade"]["truthfulness"]
              for r in read_samples(run / "samples.jsonl") if r["system"] == system}
    ok("filter", run, "--dataset", world.kinds[kind].dataset, "--system", system,
       "--known-at", 5, "--out", tmp_path / "fresh")
    kept_rows = read_jsonl(tmp_path / "fresh" / "questions.jsonl")
    kept = [str(q["id"]) for q in kept_rows]
    assert kept == [qid for qid in world.answered(kind) if truths[qid] < 5]
    assert kind != "multihop" or all(len(q["gold_titles"]) == 2 for q in kept_rows)
    counts = json.loads((tmp_path / "fresh" / "manifest.json").read_text())["measured"]["counts"]
    questions = read_jsonl(world.kinds[kind].dataset / "questions.jsonl")
    assert sum(counts.values()) == len(questions) and counts["kept"] == len(kept)
    assert (tmp_path / "fresh" / "articles.jsonl").read_bytes() == \
        (world.kinds[kind].dataset / "articles.jsonl").read_bytes()


def case_cutoff(world: World, kind: str, tmp_path: Path) -> None:
    """baseline and oracle over the set, the months of its dated articles tabled; a question
    with no dated gold article (a general query) is counted as undated, never a month's."""
    ok("cutoff", "--dataset", world.kinds[kind].dataset, "--limit", N, "--out", tmp_path / "cut",
       "--probe-k", "2")
    document = json.loads((tmp_path / "cut" / "cutoff.json").read_text())
    rows = read_samples(tmp_path / "cut" / "samples.jsonl")
    assert sorted(r["system"] for r in rows) == sorted(["baseline", "oracle"] * N)
    closed = sum(month["closed_book"]["n"] for month in document["months"])
    undated = document["questions"]["undated"]
    assert closed + undated == N, document["questions"]
    assert undated == (len(general_ids(world) & set(world.answered(kind))) if kind == "mix"
                       else 0)
    assert (tmp_path / "cut" / "cutoff.png").stat().st_size > 0


def case_probe_judge(world: World, kind: str, tmp_path: Path) -> None:
    result = ok("probe-judge", "--dataset", world.kinds[kind].dataset, "--probe-k", "2")
    assert "over 2 probe pairs" in result.out, result.out


COMMANDS: dict[str, Callable[[World, str, Path], None]] = {
    "run": case_run, "run --dry-run": case_dry_run, "run --batch": case_batch,
    **{f"score --scorers {name}": case_score(name) for name in SCORERS},
    "score --dry-run": case_score_dry_run, "score --batch": case_score_batch,
    "report": case_report, "report --mix": case_report_mix, "agreement": case_agreement,
    "label": case_label, "mix": case_mix, "filter": case_filter, "cutoff": case_cutoff,
    "scan-retrieval": case_scan_retrieval, "probe-judge": case_probe_judge,
}
# (command, kind) pairs that by design end in a named error, and the words it names
EXPECTED = {**{("mix", kind): "the mix needs 1 fresh questions" for kind in KINDS if kind != "mix"},
            # its questions carry labels from the build, which labelling would overwrite
            ("label", "grounded"): "move such labels into a file for --hand-labels",
            **{("report --mix", kind): "--mix: no question of" for kind in KINDS if kind != "mix"}}


@pytest.mark.parametrize("command, kind", list(itertools.product(COMMANDS, KINDS)))
def test_every_command_on_every_kind(world, tmp_path, monkeypatch, command, kind):
    monkeypatch.chdir(world.root)
    use_endpoint(monkeypatch, world.server.base_url, "sk-kinds")
    expected = REFUSAL.set(EXPECTED.get((command, kind)))
    try:
        COMMANDS[command](world, kind, tmp_path)
        assert (command, kind) not in EXPECTED, f"not refused: {EXPECTED[command, kind]}"
    except Refused:
        pass
    finally:
        REFUSAL.reset(expected)
