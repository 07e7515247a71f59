"""The run's plan (harness/run/plan.py): a system and a scorer that only this test defines,
registered as a new file's one line registers them, are answered and scored by the live run,
counted by the dry run and batched by the pre-pass, with no other code; and every built-in system
makes the calls its `call_shape` declares, no more."""

import json

import pytest

from freshrag.cli.main import main
from freshrag.core.config import load_settings
from freshrag.core.dataset import load_dataset, load_dataset_dir
from freshrag.core.samples import read_samples
from freshrag.core.types import (
    LLM,
    CallShape,
    Declarations,
    Question,
    SystemAnswer,
    SystemContext,
)
from freshrag.cost.estimate import MadeUpReply, StandInRetriever, counters
from freshrag.cost.plan import Planner, walk
from freshrag.llm.client import LLMClient
from freshrag.run.config import RunConfig
from freshrag.run.plan import CallShapeExceeded, make_plan, read_plan
from freshrag.scoring import SCORERS
from freshrag.scoring.base import ScoreInput, ScoreResult
from freshrag.scoring.store import read_scores
from freshrag.systems import SYSTEMS
from tests.support.costs import table
from tests.support.datasets import write_dataset
from tests.support.fake_batches import FakeBatches

N = 3  # questions


class Drafter(Declarations):
    """A new system: a draft by the decision role, then the answer role's answer from it."""

    call_shape = CallShape({"decision": (1, 1), "answer": (1, 1)})

    def __init__(self, context: SystemContext):
        self.llm = context.llm

    def answer(self, question: Question) -> SystemAnswer:
        draft = self.llm.chat("decision", [{"role": "user", "content": f"Draft: {question.text}"}],
                              max_tokens=32)
        final = self.llm.chat("answer", [{"role": "user", "content": f"{question.text}\n"
                                          f"Draft: {draft.text}"}], max_tokens=32)
        return SystemAnswer(final.text or "", [draft, final])


class Brevity:
    """A new scorer: one call of the scorer role per answer."""

    name = "brevity"
    role = "scorer"
    needs: tuple[str, ...] = ()
    metrics = ("brevity",)

    def score(self, llm: LLM, item: ScoreInput) -> ScoreResult:
        llm.chat("scorer", [{"role": "user", "content": f"Is this brief? {item.answer}"}],
                 max_tokens=8)
        return ScoreResult("scored", {"brevity": float(len(item.answer) < 200)})


@pytest.fixture
def registered(monkeypatch):
    """Drafter and Brevity beside the built-in ones, as one line in each registry adds them."""
    monkeypatch.setitem(SYSTEMS.targets, "drafter", f"{__name__}:Drafter")
    monkeypatch.setitem(SCORERS.targets, "brevity", f"{__name__}:Brevity")


def run_args(tmp_path, *extra):
    data = tmp_path / "data"
    write_dataset(data, N)
    return ["run", "--dataset", str(data), "--systems", "baseline,drafter", "--scorers",
            "judge,brevity", "--no-probe", "--out", str(tmp_path / "run"), *extra]


def sent_by_role(run_dir) -> dict[str, int]:
    """The calls a run sent (not read from its cache), per role: its pairs' and its scores'."""
    calls = [c for row in read_samples(run_dir / "samples.jsonl") for c in row["calls"]]
    calls += [c for row in read_scores(run_dir) for c in row["calls"]]
    sent: dict[str, int] = {}
    for call in calls:
        if not call["cache_hit"]:
            sent[call["role"]] = sent.get(call["role"], 0) + 1
    return sent


def test_the_plan_holds_a_new_system_s_pairs_and_the_live_run_does_them_all(tmp_path, fake,
                                                                          registered):
    args = run_args(tmp_path)
    dataset = load_dataset_dir(tmp_path / "data")
    config = RunConfig(out=tmp_path / "run", systems=("baseline", "drafter"),
                       scorers=("judge", "brevity"), probe=None)
    plan = make_plan(dataset, config, [], None)
    assert [(q.id, name) for q, name, _ in plan.pairs] == [
        (q.id, name) for q in dataset.questions for name in ("baseline", "drafter")]
    assert [job.name for job in plan.jobs(SYSTEMS, None)] == [
        f"{q.id}/{name}" for q, name, _ in plan.pairs]
    assert main(args) == 0
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert len(rows) == 2 * N and all(row["status"] == "ok" for row in rows)
    assert {s["scorer"] for s in read_scores(tmp_path / "run")} == {"brevity"}
    done = read_plan(dataset, config)  # the run did the whole plan: nothing is left
    assert (done.pairs, done.scores, done.jobs(SYSTEMS, None)) == ([], [], [])


def test_the_dry_run_counts_what_the_live_run_sends_for_a_new_system_and_scorer(
        tmp_path, fake, registered, capsys):
    args = run_args(tmp_path)
    assert main([*args, "--dry-run"]) == 0
    estimated = table(capsys.readouterr().out)
    assert fake.calls == 0
    assert main(args) == 0
    sent = sent_by_role(tmp_path / "run")
    assert sent == {"decision": N, "answer": 2 * N, "judge": 2 * N, "scorer": 2 * N}
    assert {role: int(estimated[role][1]) for role in sent} == sent


def test_the_batch_pre_pass_sends_every_call_of_a_new_system_and_scorer(tmp_path, fake_server,
                                                                       registered):
    batches = FakeBatches(polls=0)
    server = fake_server(batches=batches)
    assert main(run_args(tmp_path, "--batch", "--batch-poll", "0.05")) == 0
    assert server.calls == 0  # every chat call came from a batch, through the cache
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    drafted = [row for row in rows if row["system"] == "drafter"]
    assert [sorted(c["role"] for c in row["calls"]) for row in drafted] == [
        ["answer", "decision", "judge"]] * N
    scores = read_scores(tmp_path / "run")
    assert len(scores) == 2 * N and all(c["cache_hit"] for s in scores for c in s["calls"])
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    # per question: baseline's answer, drafter's draft and answer, two grades, two scores
    assert manifest["batch"]["filled"] == sum(batches.submitted.values()) == 7 * N


def walked_calls(tmp_path, factory, retrieve: bool) -> dict[str, int]:
    """The calls per role (the judge's aside) one answer of `factory` makes in a walk, every
    decision for retrieval (`retrieve`) or against it."""
    write_dataset(tmp_path, 1)
    dataset = load_dataset(tmp_path / "questions.jsonl", tmp_path / "articles.jsonl")
    config = RunConfig(out=tmp_path / "run", systems=("walked",), probe=None,
                       knowledge_cutoff="2021-09-30")
    client = LLMClient(load_settings(None))
    jobs = make_plan(dataset, config, [], None).jobs(
        {"walked": factory}, StandInRetriever(dataset.articles, 1024, 48, 2))
    [walked] = walk(jobs, Planner(client, MadeUpReply(retrieve, {}, counters(client))), 1)
    made: dict[str, int] = {}
    for call in walked.calls:
        if call.role != "judge":
            made[call.role] = made.get(call.role, 0) + 1
    return made


@pytest.mark.parametrize("name", sorted(set(SYSTEMS) - {"drafter"}))
def test_every_built_in_system_makes_the_calls_its_shape_declares(tmp_path, fake, name):
    shape = SYSTEMS[name].call_shape
    low, high = (walked_calls(tmp_path / flag, SYSTEMS[name], flag == "high")
                 for flag in ("low", "high"))
    for role, (fewest, most) in shape.calls.items():  # self-check's made-up rating retrieves
        assert fewest <= low.get(role, 0) <= high.get(role, 0) <= most, role
    assert set(low) | set(high) <= set(shape.calls)


class Runaway(Declarations):
    """A system that makes more calls than it declares."""

    call_shape = CallShape({"answer": (1, 1)})

    def __init__(self, context: SystemContext):
        self.llm = context.llm

    def answer(self, question: Question) -> SystemAnswer:
        calls = [self.llm.chat("answer", [{"role": "user", "content": f"{question.text} {i}"}])
                 for i in range(3)]
        return SystemAnswer(calls[-1].text or "", calls)


def test_a_walk_holds_a_system_to_its_declared_shape(tmp_path, fake):
    with pytest.raises(CallShapeExceeded, match="more than the 1 calls"):
        walked_calls(tmp_path, Runaway, True)
