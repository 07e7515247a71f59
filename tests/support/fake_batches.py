"""The OpenAI Files and Batch APIs for the fake server (tests/support/fake_openai_server.py).

``POST /v1/files`` (multipart, purpose ``batch``), ``GET /v1/files/{id}/content``,
``POST /v1/batches``, ``GET /v1/batches/{id}`` and ``GET /v1/batches``, shaped for the official
``openai`` SDK. A batch stays ``in_progress`` for ``polls`` retrievals, then each line is answered
by the server's own reply function, or, by a seeded draw per submitted line, written to the
error file as failed (HTTP 500) or expired (``batch_expired``); a batch with an expired line ends
``expired``, as OpenAI's do. Every submission is counted, and every ``custom_id`` submitted, so a
test can prove that nothing was sent twice.
"""

from __future__ import annotations

import email.parser
import itertools
import json
import random
import signal
import subprocess
import threading
import time
from collections import Counter
from typing import Any, Callable


class FakeBatches:
    def __init__(self, failed: float = 0.0, expired: float = 0.0, polls: int = 1, seed: int = 0,
                 stuck: str | None = None, age_s: float = 0.0,
                 results: Callable[[list[dict[str, Any]]], str] | None = None):
        # stuck: a status every batch keeps; age_s: how long ago batches say they were created;
        # results: the text of the output file from its rows (a damaged file)
        self.stuck, self.age_s, self.results = stuck, age_s, results
        self.failed = failed
        self.expired = expired
        self.polls = polls
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.created = 0                   # batches created
        self.retrieves = 0                 # polls answered
        self.submitted: Counter = Counter()  # custom_id -> batches it was sent in
        self.outcomes: dict[str, list[str]] = {}  # custom_id -> "ok" | "failed" | "expired", in order
        self._rng = random.Random(seed)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # -- routing: (method, path, body, content type) -> (status, payload or bytes) or None
    def handle(self, server: Any, method: str, path: str, body: bytes,
               content_type: str) -> tuple[int, Any] | None:
        parts = path.strip("/").split("/")
        if parts[:1] == ["v1"]:
            parts = parts[1:]
        with self._lock:
            if method == "POST" and parts == ["files"]:
                return 200, self._upload(body, content_type)
            if method == "GET" and len(parts) == 3 and parts[0] == "files" and parts[2] == "content":
                found = self.files.get(parts[1])
                return (200, found["data"]) if found else (404, _error("no such file"))
            if method == "POST" and parts == ["batches"]:
                return self._create(json.loads(body))
            if method == "GET" and parts == ["batches"]:
                data = [b["object"] for b in self.batches.values()]
                return 200, {"object": "list", "data": data, "has_more": False}
            if method == "GET" and len(parts) == 2 and parts[0] == "batches":
                return self._retrieve(server, parts[1])
        return None

    def _upload(self, body: bytes, content_type: str) -> dict[str, Any]:
        message = email.parser.BytesParser().parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
        fields = {part.get_param("name", header="content-disposition"): part
                  for part in message.get_payload()}
        data = fields["file"].get_payload(decode=True)
        purpose = fields["purpose"].get_payload(decode=True).decode()
        return self._store(data, fields["file"].get_filename() or "upload.jsonl", purpose)

    def _store(self, data: bytes, filename: str, purpose: str) -> dict[str, Any]:
        file_id = f"file-{next(self._ids)}"
        obj = {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
               "filename": filename, "purpose": purpose, "status": "processed"}
        self.files[file_id] = {"data": data, "object": obj}
        return obj

    def _create(self, request: dict[str, Any]) -> tuple[int, Any]:
        source = self.files.get(request.get("input_file_id"))
        if source is None:
            return 404, _error("no such input file")
        self.created += 1
        batch_id = f"batch_{next(self._ids)}"
        lines = [json.loads(line) for line in source["data"].decode().splitlines() if line.strip()]
        for line in lines:
            self.submitted[line["custom_id"]] += 1
        obj = {"id": batch_id, "object": "batch", "endpoint": request["endpoint"],
               "input_file_id": request["input_file_id"], "completion_window": "24h",
               "status": self.stuck or "in_progress",
               "created_at": int(time.time() - self.age_s),
               "output_file_id": None, "error_file_id": None, "metadata": request.get("metadata"),
               "request_counts": {"total": len(lines), "completed": 0, "failed": 0}}
        self.batches[batch_id] = {"object": obj, "lines": lines, "polls": 0}
        return 200, obj

    def _retrieve(self, server: Any, batch_id: str) -> tuple[int, Any]:
        batch = self.batches.get(batch_id)
        if batch is None:
            return 404, _error("no such batch")
        self.retrieves += 1
        batch["polls"] += 1
        if batch["object"]["status"] == "in_progress" and batch["polls"] > self.polls:
            self._finish(server, batch)
        return 200, batch["object"]

    def _finish(self, server: Any, batch: dict[str, Any]) -> None:
        output, errors = [], []
        for line in batch["lines"]:
            draw = self._rng.random()
            outcome = "expired" if draw < self.expired else \
                "failed" if draw < self.expired + self.failed else "ok"
            self.outcomes.setdefault(line["custom_id"], []).append(outcome)
            if draw < self.expired:
                errors.append({"id": f"req_{next(self._ids)}", "custom_id": line["custom_id"],
                               "response": None, "error": {"code": "batch_expired",
                                                           "message": "not done within 24h"}})
            elif draw < self.expired + self.failed:
                errors.append({"id": f"req_{next(self._ids)}", "custom_id": line["custom_id"],
                               "response": {"status_code": 500, "request_id": "r",
                                            "body": _error("fake batch line failure")},
                               "error": None})
            else:
                body = server.batch_reply(line["body"])
                output.append({"id": f"req_{next(self._ids)}", "custom_id": line["custom_id"],
                               "response": {"status_code": 200, "request_id": "r", "body": body},
                               "error": None})
        obj = batch["object"]
        for name, rows in (("output_file_id", output), ("error_file_id", errors)):
            if rows:
                data = "".join(json.dumps(row) + "\n" for row in rows).encode()
                if self.results and name == "output_file_id":
                    data = self.results(rows).encode()
                obj[name] = self._store(data, f"{name}.jsonl", "batch_output")["id"]
        obj["status"] = "expired" if any(e["error"] for e in errors) else "completed"
        obj["request_counts"] = {"total": len(batch["lines"]), "completed": len(output),
                                 "failed": len(errors)}


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None,
                      "code": None}}


def kill_while_polling(command: list[str], env: dict[str, str], cwd: Any,
                       fake: FakeBatches) -> None:
    """Start `command` and SIGKILL it once it has polled the fake's batches three times (within
    60 s): a process killed mid-poll, for the resume tests."""
    first = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while fake.retrieves < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()
