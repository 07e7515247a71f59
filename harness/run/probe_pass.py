"""A run's judge probes, sized and kept for the judge (docs/running.md#judge-probes).

- Before they start, one line on stderr says how many calls they are, about how long they take
  and that `--no-probe` skips them: the time from their prompt tokens at the embedded model's
  measured pace, or from an earlier probe pass on the same remote endpoint, else "unknown".
- A run of fewer questions than `--probe-k` probes as many questions as it answers
  (scoring/probes.py `scaled`), and says how wide the verdict's interval then is.
- The verdict is the judge's, not the run directory's: it is kept beside the response cache in
  `.judge-probes/KEY.json`, KEY a hash of the probes' first judge requests as the response cache
  keys them (the judge's model and endpoint, its prompt and tool, the probes themselves, the
  seed). Every later run with that judge and probe set reads it instead of asking again, says so
  in one line and records `reused` in its manifest; the threshold is applied anew. A verdict
  with a failed call is not kept, so that the next run asks again. It is the judge's verdict,
  not a reply: `--no-cache` reads and keeps it too (delete the file to probe that judge again).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from freshrag.core.dataset import Dataset
from freshrag.core.errors import FreshragError
from freshrag.core.files import SymlinkError, open_no_follow, write_json
from freshrag.core.jsonl import now
from freshrag.core.runfiles import JUDGE_PROBES
from freshrag.core.types import Article
from freshrag.core.wording import counted
from freshrag.llm.client import LLMClient
from freshrag.llm.tokens import count_messages
from freshrag.scoring import probes
from freshrag.scoring.probes import Probe, ProbeSettings

# The embedded model's pace with its 2 slots on 2 idle cores, and what its judge writes a call
# with the reason (docs/measurements.md#the-demo).
PROMPT_TOKENS_S, OUTPUT_TOKENS_S, JUDGE_OUTPUT = 314.0, 128.8, 72
Request = tuple[dict[str, Any], str]  # a request body and its cache key


def probe_run(llm: LLMClient, dataset: Dataset, settings: ProbeSettings, asked: int,
              results: Path | None, concurrency: int = 4) -> dict[str, Any]:
    """The verdict on the probes of `settings` (`asked`: --probe-k before scaling): this judge's
    kept one, or graded now, announced first, and kept. `results`: the folder beside the run
    directory, where the response cache is (None: nothing read or kept)."""
    try:
        made = probes.make_probes(dataset.questions, dataset.articles, settings.k, settings.seed,
                                   settings.context)
    except probes.ProbeError as err:
        return {"unavailable": str(err), "threshold": settings.threshold, "informative": False}
    requests = [first_request(llm, probe, dataset.articles) for probe in made]
    path = store(results) / f"{store_key(requests)}.json" if results else None
    kept = read_kept(path) if path else None
    if kept is not None:
        _say(f"judge probes: this judge graded these {counted(len(made), 'probe')} before; its "
             f"verdict is "
             f"read from {path}, no call made")
        return for_run({**kept, "reused": str(path)}, settings, asked)
    _say(announcement(llm, requests, settings, asked, results))
    verdict = probes.grade_probes(llm, made, dataset.articles, settings.seed,
                                  settings.threshold, concurrency)
    if path and not _failed(verdict):
        keep(path, llm, verdict)
    return for_run(verdict, settings, asked)


def _failed(verdict: dict[str, Any]) -> bool:
    """Whether a probe's call failed (asked again next time, so not kept)."""
    return any((probe["grade"]["unscored_reason"] or "").startswith(probes.FAILED)
               for probe in verdict["probes"])


def for_run(verdict: dict[str, Any], settings: ProbeSettings, asked: int) -> dict[str, Any]:
    """The verdict as this run reads it: against its threshold, scaled from what it asked, over
    the context it asked for (a kept verdict's requests were the same, so where a passage is
    the whole article, one verdict serves both)."""
    scaled = {"scaled_from": asked} if settings.k < asked else {}
    verdict = {key: value for key, value in verdict.items() if key != "scaled_from"}
    return {**verdict, **scaled, "threshold": settings.threshold, "context": settings.context,
            "informative": probes.informative(verdict["fields"], settings.threshold)}


class _Built(FreshragError):
    """The first request of a probe's grading, built and not sent: how its key is read."""

    def __init__(self, request: Request):
        super().__init__(request[1])
        self.request = request


class _FirstRequest:
    """The LLM as a probe's grading meets it, up to its first call: the client builds the request
    (`LLMClient.prepare`, as a live call would) and the grading stops there."""

    def __init__(self, llm: LLMClient):
        self.llm = llm

    def chat(self, role: str, messages: list[dict[str, Any]], **options: Any) -> NoReturn:
        raise _Built(self.llm.prepare(role, messages, **options))


def first_request(llm: LLMClient, probe: Probe, articles: dict[str, Article]) -> Request:
    """The first judge request of a probe's grading, and its cache key."""
    try:
        probes.grade_probe(_FirstRequest(llm), probe, articles)
    except _Built as built:
        return built.request
    raise AssertionError("a probe's grading made no judge call")


def store_key(requests: list[Request]) -> str:
    return hashlib.sha256("\n".join(key for _, key in requests).encode()).hexdigest()


def store(results: Path) -> Path:
    """The folder of kept verdicts; a link there is refused, as the response cache's would be."""
    folder = results / JUDGE_PROBES
    if folder.is_symlink():
        raise SymlinkError(folder)
    return folder


def read_kept(path: Path) -> dict[str, Any] | None:
    """The kept verdict at `path`; None when there is none, or (said in one line) when the
    file is not one, so that the probes are graded again and the file replaced."""
    try:
        fd = open_no_follow(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, encoding="utf-8") as handle:
        try:
            verdict = json.loads(handle.read())["verdict"]
            if isinstance(verdict, dict) and isinstance(verdict.get("fields"), dict):
                return verdict
        except (ValueError, KeyError, TypeError):
            pass
    _say(f"freshrag: warning: {path}: not a kept judge probe verdict; the probes are graded "
         f"again and the file replaced")
    return None


def keep(path: Path, llm: LLMClient, verdict: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    judge = llm.settings.role("judge")
    write_json(path, {"judge": {"model": judge.model, "base_url": judge.base_url},
                      "graded_at": now(), "verdict": verdict})


def announcement(llm: LLMClient, requests: list[Request], settings: ProbeSettings, asked: int,
                 results: Path | None) -> str:
    """What the probes will cost before they start, and how to skip them."""
    live = [request for request, key in requests if not (llm.cache and llm.cache.get(key))]
    cached = len(requests) - len(live)
    count = counted(len(requests), "call") + (f" ({cached} in the response cache)" if cached else "")
    lines = [f"probing the judge: {count}, {expected_time(llm, live, results)}; "
             f"--no-probe skips"]
    if settings.k < asked:
        lines.append(probes.scaled_lines({"k": settings.k, "scaled_from": asked})[0])
    return "\n".join(lines)


def expected_time(llm: LLMClient, live: list[dict[str, Any]], results: Path | None) -> str:
    """About how long the live calls take: from their prompt tokens at the embedded model's
    measured pace, or at an earlier probe pass's on the same remote endpoint; else unknown."""
    if not live:
        return "no time"
    judge = llm.settings.role("judge")
    if judge.is_local:
        prompt = sum(count_messages(r["messages"], r["model"], r.get("tools")) for r in live)
        seconds = prompt / PROMPT_TOKENS_S + len(live) * JUDGE_OUTPUT / OUTPUT_TOKENS_S
        return f"about {_minutes(seconds)} on the embedded model (2 idle cores)"
    pace = measured_pace(results, judge.model, judge.base_url) if results else None
    if pace is None:
        return "time unknown on this endpoint (no probe pass measured there)"
    return f"about {_minutes(pace * len(live))} at an earlier probe pass's pace on this endpoint"


def measured_pace(results: Path, model: str, base_url: str) -> float | None:
    """Seconds per live call of the newest kept probe pass of this judge model and endpoint."""
    folder = store(results)
    found = sorted(folder.glob("*.json"), key=_modified, reverse=True) if folder.is_dir() else []
    for path in found:
        try:
            kept = json.loads(path.read_text(encoding="utf-8"))
            verdict, live = kept["verdict"], kept["verdict"]["calls"] - kept["verdict"]["cache_hits"]
            if kept["judge"] == {"model": model, "base_url": base_url} and live > 0:
                return float(verdict["seconds"]) / live
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a kept verdict: read_kept says so when a run asks for it
    return None


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _minutes(seconds: float) -> str:
    return f"{round(seconds)} s" if seconds < 90 else f"{round(seconds / 60)} min"


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)  # stdout stays the command's output
