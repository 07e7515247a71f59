"""`--batch`: a run's calls through the OpenAI Batch API (half price, answered within 24 hours),
as a pre-pass that fills the response cache; the runner then finds every call cached.

Round by round: every job (pair or judge probe) is walked with a `freshrag.cost.plan.Planner` up to
its first call the cache lacks; those calls, one batch per role, are uploaded as JSON Lines
(`custom_id` = the call's cache key, `body` = the request `LLMClient.prepare` builds), created as
batches on `/v1/chat/completions`, polled with a growing wait, and their results stored in the
cache by `custom_id`, marked `"batch": true` (every call record made from them says so, and
reports price them at the batch rate). Multi-step systems thus advance stage by stage: all first
calls, then all second calls, then the judge. A line that failed with a retryable status (429,
5xx) or expired goes into the next round's batch, `TRIES` times in all; one refused as a bad
request (4xx) or tried that often is left to the live run that follows, which halves articles
too long for the window and records what still fails.

`batches.jsonl` in the run directory records each upload (its role and keys), each batch created
from it, and each batch collected, so a killed process resumes: it polls the batches it had
created, creates the batch of an uploaded file that has none (after asking the endpoint whether
one exists, so none is created twice), and submits nothing the cache or an open batch holds.
A budget (`--max-cost`) reserves each request before it is uploaded. docs/costs.md#batch.

A batch has a deadline: its 24-hour window and an hour's grace from when the endpoint created it.
One still open after that, or in a status the Batch API does not document, stops the command with
a `BatchError` naming the batch and its status (a resume polls it again; a run without --batch
answers the same calls live). A results file is read line by line: a line that is not JSON, or
names no request, is counted as failed, never a traceback.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Final

from openai.types.chat import ChatCompletion

from freshrag.core.errors import UserError
from freshrag.core.files import dumps
from freshrag.core.jsonl import JsonlWriter, loads, read_jsonl
from freshrag.core.runfiles import BATCHES
from freshrag.cost.budget import BudgetExceeded
from freshrag.cost.plan import Pending, PlannedCall, Planner, walk
from freshrag.llm import deadline
from freshrag.llm.client import EndpointError, LLMClient
from freshrag.llm.replies import completion_value

TRIES = 3  # batches a request is sent in before the live run takes it
POLL_S = 5.0  # first wait between polls (--batch-poll)
MAX_POLL_S = 60.0
ENDPOINT: Final = "/v1/chat/completions"
TERMINAL = ("completed", "failed", "expired", "cancelled")
OPEN = ("validating", "in_progress", "finalizing", "cancelling")  # the Batch API's other statuses
DEADLINE_S = 25 * 3600  # the 24 h completion window and an hour's grace, from its creation


class BatchError(UserError, RuntimeError):
    """A batch freshrag cannot wait for: a status it does not know, or past its deadline."""


def pending(role: str, request: dict[str, Any], key: str) -> dict[str, Any]:
    """The planner's answer to a miss in a batch round: the pair waits for this call."""
    raise Pending(PlannedCall(role, request, key, False, {}))


class BatchLog:
    """What `batches.jsonl` says: uploads, the batches created from them, those collected."""

    def __init__(self, path: Path):
        self.path = path
        self.events = read_jsonl(path) if path.exists() else []

    def write(self, event: dict[str, Any]) -> None:
        writer = JsonlWriter(self.path)
        try:
            writer.write(event)
        finally:
            writer.close()
        self.events.append(event)

    def open_uploads(self) -> list[dict[str, Any]]:
        """Uploads whose batch was not collected, each with its batch id (None: not created)."""
        created = {e["file_id"]: e["batch_id"] for e in self.events if e["event"] == "created"}
        collected = {e["batch_id"] for e in self.events if e["event"] == "collected"}
        return [{**e, "batch_id": created.get(e["file_id"])} for e in self.events
                if e["event"] == "uploaded" and created.get(e["file_id"]) not in collected]

    def tries(self) -> Counter:
        return Counter(key for e in self.events if e["event"] == "uploaded" for key in e["keys"])

    def live(self) -> set[str]:
        return {key for e in self.events if e["event"] == "collected" for key in e["left_live"]}


def prefill(llm: LLMClient, out: Path, jobs: list, poll_s: float,
            concurrency: int = 8) -> dict[str, Any]:
    """Fill the cache with batch results for every call of `jobs`; what the manifest keeps."""
    log = BatchLog(out / BATCHES)
    for upload in log.open_uploads():  # a killed process's batches: poll them, never resubmit
        batch_id = upload["batch_id"] or _create(llm, log, upload["role"], upload["file_id"])
        _collect(llm, log, upload["role"], batch_id, upload["keys"], {}, poll_s)
    rounds = 0
    while True:
        todo = _pending_calls(llm, log, jobs, concurrency, rounds + 1)
        if not todo:
            break
        rounds += 1
        tickets, capped = _reserve(llm, todo)
        submitted = {role: _submit(llm, log, role, calls, rounds)
                     for role, calls in _by_role(todo).items() if calls}
        for role, (batch_id, keys) in submitted.items():
            _collect(llm, log, role, batch_id, keys, tickets, poll_s)
        if capped:
            raise capped
    collected = [e for e in log.events if e["event"] == "collected"]
    return {"file": BATCHES, "rounds": rounds, "batches": len(collected),
            "filled": sum(e["filled"] for e in collected),
            "failed_lines": sum(e["failed"] for e in collected),
            "expired_lines": sum(e["expired"] for e in collected),
            "left_live": len(log.live())}


def _pending_calls(llm: LLMClient, log: BatchLog, jobs: list, concurrency: int,
                   round_: int) -> dict[str, PlannedCall]:
    """The first uncached call of every job, once per key, unless left to the live run."""
    tries, live = log.tries(), log.live()
    walked = walk(jobs, Planner(llm, pending), concurrency, desc=f"batch round {round_}")
    return {w.pending.key: w.pending for w in walked
            if w.pending and w.pending.key not in live and tries[w.pending.key] < TRIES}


def _by_role(todo: dict[str, PlannedCall]) -> dict[str, list[PlannedCall]]:
    groups: dict[str, list[PlannedCall]] = defaultdict(list)
    for call in todo.values():
        groups[call.role].append(call)
    return groups


def _reserve(llm: LLMClient, todo: dict[str, PlannedCall]
             ) -> tuple[dict[str, Any], BudgetExceeded | None]:
    """Budget tickets for the calls to submit; calls the budget refuses are dropped from `todo`."""
    tickets: dict[str, Any] = {}
    if llm.gate is None:
        return tickets, None
    for key, call in list(todo.items()):
        try:
            tickets[key] = llm.gate.reserve(call.role, call.request)
        except BudgetExceeded as err:
            for rest in list(todo)[list(todo).index(key):]:
                del todo[rest]
            return tickets, err
    return tickets, None


def _submit(llm: LLMClient, log: BatchLog, role: str, calls: list[PlannedCall],
            round_: int) -> tuple[str, list[str]]:
    """Upload one role's calls and create their batch; both steps logged as they happen."""
    lines = "".join(dumps({"custom_id": c.key, "method": "POST", "url": ENDPOINT,
                                "body": c.request}, ensure_ascii=False) + "\n" for c in calls)
    uploaded = llm.sdk_call(role, "batch file upload", lambda client: client.files.create(
        file=(f"freshrag-{role}-round{round_}.jsonl", lines.encode("utf-8")), purpose="batch"))
    keys = [c.key for c in calls]
    log.write({"event": "uploaded", "file_id": uploaded.id, "role": role, "round": round_,
               "keys": keys})
    return _create(llm, log, role, uploaded.id), keys


def _create(llm: LLMClient, log: BatchLog, role: str, file_id: str) -> str:
    """The batch of an uploaded file: one the endpoint already has for it (a process killed
    between creating and logging it), else a new one."""
    existing = llm.sdk_call(role, "batch list", lambda client: client.batches.list(limit=100))
    batch = next((b for b in existing.data if b.input_file_id == file_id), None)
    if batch is None:
        batch = llm.sdk_call(role, "batch create", lambda client: client.batches.create(
            input_file_id=file_id, endpoint=ENDPOINT, completion_window="24h",
            metadata={"source": "freshrag"}))
    log.write({"event": "created", "file_id": file_id, "batch_id": batch.id})
    return batch.id


def _collect(llm: LLMClient, log: BatchLog, role: str, batch_id: str, keys: list[str],
             tickets: dict[str, Any], poll_s: float) -> None:
    """Poll until the batch ends, store every usable result in the cache, log the outcome."""
    wait = poll_s
    while True:
        batch = llm.sdk_call(role, f"batch {batch_id} poll",
                             lambda client: client.batches.retrieve(batch_id))
        status = getattr(batch, "status", None)
        if status in TERMINAL:
            break
        where = f"batch {batch_id} on {llm.base_url(role)} ({role})"
        if status not in OPEN:
            raise BatchError(f"{where} has the status {status!r}, which the Batch API does not "
                             f"document: freshrag stops polling it; cancel it there, or run "
                             f"without --batch (the same calls, live)")
        created = getattr(batch, "created_at", None)
        if isinstance(created, (int, float)) and time.time() - created > DEADLINE_S:
            raise BatchError(f"{where} is still {status} {(time.time() - created) / 3600:.0f} h "
                             f"after it was created, past its 24 h window: run the same command "
                             f"to poll it again, or cancel it there and run without --batch")
        deadline.sleep(wait)  # a stop (Ctrl-C, SIGTERM) cuts the wait short
        wait = min(wait * 1.5, MAX_POLL_S)
    outcome = {"filled": 0, "failed": 0, "expired": 0}
    asked = set(keys)
    left_live: list[str] = []
    values: dict[str, dict[str, Any] | None] = {}
    for file_id in (batch.output_file_id, batch.error_file_id):
        if file_id:
            text = llm.sdk_call(role, f"batch {batch_id} results",
                                lambda client: client.files.content(file_id).text)
            for line in _lines(text):
                if line is None or line["custom_id"] not in asked:  # none of this batch's
                    outcome["failed"] += 1
                    continue
                key, value, kind = _result(line)
                values[key] = value
                outcome[kind] += 1
                if kind == "failed" and _refused(line):
                    left_live.append(key)
    for key, value in values.items():
        if value is not None and not llm.store(key, role, value):
            outcome["filled"] -= 1  # an empty reply: not cached, asked again
    for key in keys:
        if key in tickets and llm.gate is not None:  # tickets come from the gate
            llm.gate.settle(tickets.pop(key), values.get(key))
    log.write({"event": "collected", "batch_id": batch_id, "status": batch.status, **outcome,
               "left_live": left_live})


def _lines(text: str) -> list[dict[str, Any] | None]:
    """The results file's lines: each a JSON object with a `custom_id`, or None."""
    lines = []
    for raw in text.splitlines():
        if raw.strip():
            try:
                line = loads(raw)
            except (json.JSONDecodeError, RecursionError):
                line = None
            ok = isinstance(line, dict) and isinstance(line.get("custom_id"), str)
            lines.append(line if ok else None)
    return lines


def _result(line: dict[str, Any]) -> tuple[str, dict[str, Any] | None, str]:
    """(custom_id, the reply as the cache stores it or None, "filled" | "failed" | "expired")."""
    key = line["custom_id"]
    error = line.get("error")
    if isinstance(error, dict) and error.get("code") == "batch_expired":
        return key, None, "expired"
    response = line.get("response") or {}
    if not isinstance(response, dict) or response.get("status_code") != 200:
        return key, None, "failed"
    try:
        body = response["body"]
        ChatCompletion.model_validate(body)  # the Batch API's lines are the SDK's to check
        value = completion_value(body, {"model": body.get("model"), "messages": []}, 0.0)
        return key, {**value, "batch": True}, "filled"  # priced at the batch rate in reports
    except (ValueError, KeyError, TypeError, AttributeError, EndpointError):
        return key, None, "failed"


def _refused(line: dict[str, Any]) -> bool:
    """A 4xx other than 429: the same request would be refused again in a batch."""
    response = line.get("response")
    status = response.get("status_code") if isinstance(response, dict) else None
    return isinstance(status, int) and 400 <= status < 500 and status != 429
