"""Chaos benchmark: `freshrag run` against an endpoint, a user's own system and a service that all
misbehave at random, stopped by a signal, then resumed with all three healthy (docs/faults.md).

    python tests/benchmarks/bench_chaos.py [--pairs 1000] [--fault-rate 0.3] [--seed 0]
                                           [--burst 3x48] [--crowd 10000x2000]

A dataset of pairs/4 invented questions; systems baseline and oracle (the endpoint's: two calls a
pair, answer and judge), `own` (tests/support/chaos_system.py, a user's Python system) and `svc`
(a service of freshrag.toml whose headers carry secrets); concurrency 32, `timeout_s = 2`,
`max_attempts = 2`, probes off. In the first run a seeded draw sends, at `--fault-rate`:

- for a request to the endpoint, one of ENDPOINT_FAULTS instead of a completion;
- for a pair of `own`, one of OWN_FAULTS (wrong kinds in fields, SystemExit, details JSON cannot
  hold, a lone surrogate, an answer that blocks forever) instead of its answer;
- for a request to `svc`, one of SERVICE_FAULTS (a redirect to another origin, its header echoed
  in the answer and in an error, 500s, slow replies, a lone surrogate) instead of its reply.

Since the pairs that block never end, the first run is stopped by SIGINT once every other pair has
its row; the resume sends no fault. Printed (and written as JSON to stdout's last line): pairs ok
and failed after the first run, the failures by reason or by the fault drawn, the seconds the stop
took, tracebacks (0), hangs (0), rows lost or unreadable (0), rows written twice and finished
pairs asked again (0), requests that reached the other origin (0), files and terminal lines
holding a secret (0: every file the run, the resume and the report wrote), and every pair ok
after the resume.

First, the endpoint burst: `--burst` sessions of the run's endpoint for agent frameworks at
once, each firing its parallel requests at once (tests/support/burst.py), from raw HTTP that
never retries and from openai's client with its default retries: answered, reset, retries and
lost (144, 0, 0, 0 for 3x48). Then the crowd of labellers: `freshrag agreement --human` on
`--crowd` labels by so many labellers, once spread (each labeller's labels on answers of their
own, a few people to an answer) and once dense (every labeller on the same few answers, millions
of pairs of labels): its seconds, exit, output and the pairs of labels counted or sampled
(crowd_of_labellers). It never fails because a figure is off; it says so in the JSON (`ok`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # `tests.` is importable when run as a script

from freshrag.core.dataset import load_dataset  # noqa: E402
from freshrag.core.row_check import sample_problem  # noqa: E402
from freshrag.core.samples import SAMPLES, read_samples  # noqa: E402
from freshrag.llm.replies import MAX_REPLY_CHARS  # noqa: E402
from freshrag.scoring.judge import JUDGE_PROMPT  # noqa: E402
from tests.support.burst import burst  # noqa: E402
from tests.support.chaos_system import OWN_FAULTS, draw  # noqa: E402
from tests.support.datasets import write_dataset  # noqa: E402
from tests.support.fake_openai_server import FakeOpenAIServer, default_reply  # noqa: E402
from tests.support.fakes import is_call_of  # noqa: E402

COMPLETION = {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
              "choices": [{"index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": "fine"}}]}
SECRETS = {"FRESHRAG_API_KEY": "sk-canary-chaos-api-5j2Wq", "CHAOS_SVC_KEY": "canary-chaos-svc-8f3K"}
# name -> the raw reply (tests/support/fake_openai_server.py `_send_raw`), and the words of the
# reason a failed row gives for it
ENDPOINT_FAULTS = {
    "html page": ({"raw": {"body": "<html><h1>502 Bad Gateway</h1></html>"}},
                  "not a chat completion"),
    "cut JSON": ({"raw": {"body": json.dumps(COMPLETION)[:50],
                          "content_type": "application/json"}}, "not an OpenAI response"),
    "body shorter than its length": ({"raw": {"json": COMPLETION, "length": 5000}},
                                     "APIConnectionError"),
    "5,000-digit number": ({"raw": {"body": '{"choices": [], "created": ' + "9" * 5000 + "}",
                                    "content_type": "application/json"}},
                           "not an OpenAI response"),
    "no choices": ({"raw": {"json": {**COMPLETION, "choices": []}}}, "no choices"),
    "text is a number": ({"raw": {"json": {**COMPLETION, "choices": [
        {"index": 0, "message": {"role": "assistant", "content": 7}}]}}}, "text is int"),
    "over-long text": ({"content": "x" * (MAX_REPLY_CHARS + 1)}, "more than the 1,000,000"),
    "a byte at a time": ({"raw": {"json": COMPLETION, "drip": 0.05}}, "APITimeoutError"),
    "no reply": ({"raw": {"json": COMPLETION, "delay": 60}}, "APITimeoutError"),
    "HTTP 500": ({"error": {"status": 500, "message": "boom", "type": "server_error"}},
                 "HTTP 500"),
    "HTTP 429": ({"error": {"status": 429, "message": "slow down", "type": "rate_limit_error"}},
                 "HTTP 429"),
    "the key in an error": ({"error": {"status": 400, "type": "invalid_request_error",
                                       "message": f"bad key {SECRETS['FRESHRAG_API_KEY']}"}},
                            "HTTP 400"),
}
SERVICE_FAULTS = ("redirect to another origin", "header echoed in the answer",
                  "header echoed in an error", "HTTP 500", "slow reply", "a byte at a time",
                  "a lone surrogate")
CONFIG = """timeout_s = 2
max_attempts = 2

[systems.svc]
url = "http://127.0.0.1:{port}/rag"
timeout_s = 2
max_attempts = 2
headers = {{ "X-Chaos-Key" = "CHAOS_SVC_KEY", "X-Model-Key" = "FRESHRAG_API_KEY" }}
"""
STOP_BOUND_S = 10.0  # a stop that takes longer is a hang


def log(message: str) -> None:
    print(f"[chaos] {message}", file=sys.stderr, flush=True)


def chaotic(rate: float, seed: int, on: dict[str, bool], sent: Counter):
    """The endpoint's reply function: a fault for a seeded share of requests while faults are on."""
    names = sorted(ENDPOINT_FAULTS)

    def reply(request: dict) -> dict:
        digest = hashlib.sha256((json.dumps(request, sort_keys=True) + str(seed)).encode())
        chance = random.Random(digest.digest())
        if on["faults"] and chance.random() < rate:
            name = chance.choice(names)
            sent[name] += 1
            return ENDPOINT_FAULTS[name][0]
        return default_reply(request)

    return reply


def service(rate: float, seed: int, on: dict[str, bool], sent: Counter, other_port: int):
    """The service's route: its answer, or the fault drawn for the question while faults are on."""
    def route(request: dict, headers: dict) -> dict:
        fault = draw("svc", request["id"], seed, rate, SERVICE_FAULTS) if on["faults"] else None
        sent[fault or "none"] += 1
        echoed = f"{headers.get('x-chaos-key')} {headers.get('x-model-key')}"
        good = {"json": {"answer": f"svc: {request['question']} Four."}}
        return {
            None: good,
            "redirect to another origin": {"status": 307, "body": "", "headers": {
                "Location": f"http://127.0.0.1:{other_port}/steal/{headers.get('x-chaos-key')}"
                            f"?key={headers.get('x-model-key')}"}},
            "header echoed in the answer": {"json": {"answer": f"svc: you sent {echoed}",
                                                     "contexts": [echoed]}},
            "header echoed in an error": {"status": 502, "body": f"upstream refused {echoed}"},
            "HTTP 500": {"status": 500, "body": "boom"},
            "slow reply": {**good, "delay": 60},
            "a byte at a time": {**good, "drip": 0.05},
            "a lone surrogate": {"body": '{"answer": "svc: \\ud800 four"}',
                                 "content_type": "application/json"},
        }[fault]

    return route


def reason_of(error: str) -> str:
    """The words of freshrag's reason for an endpoint's fault (two faults may share them: a cut
    body and a huge number are both unreadable), or "other"."""
    return next((words for _, words in ENDPOINT_FAULTS.values() if words in error), "other")


def first_run(command: list[str], env: dict[str, str], samples: Path,
              expected: int) -> dict[str, Any]:
    """The first run, stopped by SIGINT once `expected` rows are written (the pairs that block
    never end) or nothing was written for 30 s: its exit, stderr and the stop's seconds."""
    started = time.monotonic()
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    count, grew = 0, time.monotonic()
    while process.poll() is None and count < expected and time.monotonic() - grew < 30:
        time.sleep(0.2)
        now = len(samples.read_bytes().splitlines()) if samples.exists() else 0
        count, grew = now, (time.monotonic() if now > count else grew)
    ran = time.monotonic() - started
    stop_s, hang = None, False
    if process.poll() is None:
        time.sleep(1.0)  # the blocked pairs are now inside the system's wait
        process.send_signal(signal.SIGINT)
        sent = time.monotonic()
        try:
            process.wait(timeout=STOP_BOUND_S)
        except subprocess.TimeoutExpired:
            hang = True
            process.kill()
        stop_s = round(time.monotonic() - sent, 2)
    out, err = process.communicate()
    return {"exit": process.returncode, "seconds": round(ran, 1), "stop_seconds": stop_s,
            "hang": hang, "terminal": out + err}


def run(command: list[str], env: dict[str, str], bound_s: float) -> dict[str, Any]:
    """A command to its end: its exit (None if it had to be killed), terminal and seconds."""
    started = time.monotonic()
    try:
        done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=bound_s)
        return {"exit": done.returncode, "terminal": done.stdout + done.stderr,
                "seconds": round(time.monotonic() - started, 1)}
    except subprocess.TimeoutExpired as err:
        said = [part.decode() if isinstance(part, bytes) else part or ""
                for part in (err.stdout, err.stderr)]
        return {"exit": None, "terminal": "".join(said),
                "seconds": round(time.monotonic() - started, 1)}


def unreadable(samples: Path) -> int:
    """Lines of samples.jsonl that are no row a reader accepts (read_samples skips them)."""
    bad = 0
    for line in samples.read_bytes().splitlines():
        try:
            row = json.loads(line)
            bad += sample_problem(row) is not None
        except ValueError:
            bad += 1
    return bad


def secrets_in(work: Path, inputs: set[Path], terminal: str) -> list[str]:
    """Every file under `work` freshrag wrote, and the terminal, that holds a secret (or its
    JSON escape)."""
    forms = [form.encode() for secret in SECRETS.values()
             for form in (secret, json.dumps(secret)[1:-1])]
    found = [str(path.relative_to(work)) for path in sorted(work.rglob("*"))
             if path.is_file() and path not in inputs
             and any(form in path.read_bytes() for form in forms)]
    return found + (["terminal"] if any(form.decode() in terminal for form in forms) else [])


def failures(rows: list[dict[str, Any]], seed: int, rate: float) -> dict[str, Any]:
    """The first run's failed pairs: the endpoint's by reason, own's and svc's by the fault drawn
    where the system failed them, else as the judge's."""
    by: dict[str, Counter] = {"endpoint": Counter(), "own": Counter(), "svc": Counter()}
    for row in rows:
        if row["status"] != "failed":
            continue
        name = row["system"]
        if name in ("own", "svc") and f"system {name!r}" in (row["error"] or ""):
            faults = OWN_FAULTS if name == "own" else SERVICE_FAULTS
            by[name][draw(name, row["question_id"], seed, rate, faults) or "none drawn"] += 1
        elif name in ("own", "svc"):
            by[name]["the judge's call (the endpoint's fault)"] += 1
        else:
            by["endpoint"][reason_of(row["error"] or "")] += 1
    return {name: dict(sorted(counts.items())) for name, counts in by.items()}


def setup(work: Path, args: argparse.Namespace, port: int) -> tuple[list[str], dict[str, str],
                                                                     set[Path], Counter]:
    """The command, its environment, the input files and the faults `own` will draw."""
    questions, articles = write_dataset(work, n=args.pairs // 4)
    (work / "chaos.toml").write_text(CONFIG.format(port=port))
    own = Counter(draw("own", question.id, args.seed, args.fault_rate, OWN_FAULTS)
                  for question in load_dataset(questions, articles).questions)
    own.pop(None, None)
    (work / "faults-on").touch()
    env = {**os.environ, **SECRETS, "CHAOS_SEED": str(args.seed),
           "CHAOS_RATE": str(args.fault_rate), "CHAOS_FAULTS": str(work / "faults-on"),
           "CHAOS_ASKED": str(work / "asked-first")}
    command = [sys.executable, "-m", "freshrag", "run", "--questions", str(questions),
               "--articles", str(articles), "--out", str(work / "run"), "--systems",
               f"baseline,oracle,own={ROOT}/tests/support/chaos_system.py:Chaotic,svc",
               "--concurrency", "32", "--no-probe", "--config", str(work / "chaos.toml")]
    return command, env, {questions, articles, work / "chaos.toml"}, own


def asked_again(finished: list[dict[str, Any]], requests: list[dict], service_ids: list[str],
                own_asked: list[str]) -> int:
    """Calls, service requests and own answers of the resume that belong to finished pairs."""
    endpoint = sum(1 for request in requests for row in finished if is_call_of(request, row)
                   and (row["system"] in ("baseline", "oracle")
                        or request["messages"][0]["content"] == JUDGE_PROMPT))
    done = {(row["system"], row["question_id"]) for row in finished}
    return (endpoint + sum(("svc", qid) in done for qid in service_ids)
            + sum(("own", qid) in done for qid in own_asked))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--fault-rate", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--burst", default="3x48", help="sessions x parallel requests")
    parser.add_argument("--crowd", default="10000x2000", help="labels x labellers")
    args = parser.parse_args()
    sessions, parallel = (int(n) for n in args.burst.split("x"))
    log(f"endpoint burst: {sessions} sessions x {parallel} parallel requests")
    bursts = {client: endpoint_burst(sessions, parallel, sdk=client == "openai")
              for client in ("raw", "openai")}
    work = Path(tempfile.mkdtemp(prefix="freshrag-chaos-"))
    labels, labellers = (int(n) for n in args.crowd.split("x"))
    crowd = {shape: crowd_of_labellers(work, labels, labellers, shape, args.seed)
             for shape in ("spread", "dense")}
    on, sent = {"faults": True}, {"endpoint": Counter(), "svc": Counter()}
    samples = work / "run" / SAMPLES
    with FakeOpenAIServer(services={"/steal": lambda request, headers: {"json": {}}}) as other, \
            FakeOpenAIServer(reply=chaotic(args.fault_rate, args.seed, on,
                                           sent["endpoint"])) as server:
        server.services["/rag"] = service(args.fault_rate, args.seed, on, sent["svc"], other.port)
        command, env, inputs, sent["own"] = setup(work, args, server.port)
        env["FRESHRAG_BASE_URL"] = server.base_url
        pairs, blocking = 4 * (args.pairs // 4), sent["own"]["blocks forever"]
        log(f"first run: {pairs} pairs, faults at {args.fault_rate:.0%}, {blocking} blocking")
        first = first_run(command, env, samples, pairs - blocking)
        rows = read_samples(samples) if samples.exists() else []
        finished = [row for row in rows if row["status"] == "ok"]
        on["faults"] = False
        (work / "faults-on").unlink()
        server.reset_counts()
        asked = len(server.service_requests)
        log(f"resume: {pairs - len(finished)} pairs to ask again")
        second = run(command, {**env, "CHAOS_ASKED": str(work / "asked-resume")}, 600.0)
        second["asked_again"] = asked_again(
            finished, list(server.requests),
            [request["id"] for _, request, _ in server.service_requests[asked:]],
            _lines(work / "asked-resume"))
        second["calls"], other_origin = server.calls, len(other.service_requests)
    report = run([sys.executable, "-m", "freshrag", "report", str(work / "run"), "--format",
                  "json", "--out", str(work / "report"), "--html",
                  str(work / "report" / "report.html")], env, 600.0)
    figures = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
               "pairs": pairs, "fault_rate": args.fault_rate, "seed": args.seed,
               "faults_sent": {name: dict(sorted((k, v) for k, v in counts.items() if k != "none"))
                               for name, counts in sent.items()},
               **outcome(work, inputs, args, rows, first, second, report),
               "requests_to_other_origin": other_origin, "endpoint_burst": bursts,
               "crowd_of_labellers": crowd}
    figures["ok"] = all(figures[name] == 0 for name in (
        "tracebacks", "hangs", "rows_lost", "rows_unreadable", "rows_written_twice",
        "finished_pairs_asked_again", "requests_to_other_origin")) and (
        figures["secrets_in"] == [] and figures["resume"]["ok"] == pairs
        and second["exit"] == 0 and report["exit"] == 0) and all(
        burst["answered"] == sessions * parallel for burst in bursts.values()) and all(
        found["exit"] == 0 and found["labels"] == labels for found in crowd.values())
    for key, value in figures.items():
        print(f"{key}: {value}")
    print(json.dumps(figures))
    return 0


def outcome(work: Path, inputs: set[Path], args: argparse.Namespace, rows: list[dict[str, Any]],
            first: dict[str, Any], second: dict[str, Any],
            report: dict[str, Any]) -> dict[str, Any]:
    """What the runs came to: the first run's rows, the faults' marks, the resume's rows."""
    samples = work / "run" / SAMPLES
    pairs, ok = 4 * (args.pairs // 4), sum(row["status"] == "ok" for row in rows)
    after = read_samples(samples)
    terminal = first["terminal"] + second["terminal"] + report["terminal"]
    return {
        "first_run": {"exit": first["exit"], "seconds": first["seconds"],
                      "stop_seconds": first["stop_seconds"], "ok": ok, "failed": len(rows) - ok,
                      "without_row": pairs - len(rows),
                      "failed_by": failures(rows, args.seed, args.fault_rate)},
        "tracebacks": terminal.count("Traceback"),
        "hangs": first["hang"] + (second["exit"] is None) + (report["exit"] is None),
        "rows_lost": pairs - len(after),
        "rows_unreadable": unreadable(samples),
        # the first run's rows, then one more for each pair that had not finished
        "rows_written_twice": len(samples.read_bytes().splitlines()) - len(rows) - (pairs - ok),
        "finished_pairs_asked_again": second["asked_again"],
        "secrets_in": secrets_in(work, inputs, terminal),
        "resume": {"exit": second["exit"], "seconds": second["seconds"],
                   "calls": second["calls"], "ok": sum(row["status"] == "ok" for row in after)},
        "report_exit": report["exit"],
    }


def endpoint_burst(sessions: int, parallel: int, sdk: bool) -> dict[str, int]:
    """The burst's figures: requests answered, reset, refused, retried and lost."""
    outcome = burst(sessions, parallel, sdk=sdk)
    return {name: outcome[name] for name in ("answered", "reset", "refused", "retries", "lost")}


def crowd_of_labellers(work: Path, labels: int, labellers: int, shape: str,
                       seed: int) -> dict[str, Any]:
    """`agreement --human` on `labels` labels (seeded grades) by `labellers` people, each labelling
    labels/labellers answers: `spread`, answers of their own, 20 people to an answer; `dense`,
    the same answers for all. Its exit, seconds, output and pairs of labels counted."""
    from freshrag.reporting.labels import FORMAT, page_key

    draw, salt, each = random.Random(seed), "5a17" * 8, labels // labellers
    answers = max(each, labels // 20) if shape == "spread" else each
    path = work / f"crowd-{shape}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for person, k in ((p, k) for p in range(labellers) for k in range(each)):
            question = f"q{(person * each + k) % answers}"
            text = hashlib.sha256(f"answer to {question}".encode()).hexdigest()
            out.write(json.dumps({
                "freshrag_labels": FORMAT, "key": page_key(salt, "A_f", question, text),
                "salt": salt, "dataset": "A_f", "question_id": question, "answer_sha256": text,
                "truthfulness": draw.randint(1, 5), "relevance": draw.randint(1, 5), "note": "",
                "labeller": f"person-{person:05d}", "labelled_at": "2026-11-29T08:00:00Z",
                "seed": 0}) + "\n")
    log(f"crowd of labellers ({shape}): {labellers * each:,} labels by {labellers:,}")
    done = run([sys.executable, "-m", "freshrag", "agreement", "--human", str(path), "--format",
                "json", "--out", str(work / f"agreement-{shape}")], dict(os.environ), 600.0)
    printed = done["terminal"].split("\n\n")[0] if done["exit"] == 0 else "{}"
    people = json.loads(printed).get("people", {})
    return {"exit": done["exit"], "seconds": done["seconds"], "labels": labellers * each,
            "answers": answers, "output_chars": len(done["terminal"]),
            **{name: people.get(name) for name in ("pairs", "counted", "sampled",
                                                   "labeller_pairs")},
            "rows_listed": len(people.get("table", []))}


def _lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


if __name__ == "__main__":
    sys.exit(main())
