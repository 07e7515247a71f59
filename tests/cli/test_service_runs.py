"""A service behind HTTP through `freshrag run`, against the fake server's service route: OpenAI's
usage fields counted with no configuration and the reply's fields nothing read named once in the
run's output; a deadline raised on resume answers the pairs it failed and keeps the others
(docs/own-system.md#identity-resume-failures)."""

from __future__ import annotations

import threading

from freshrag.cli.main import main
from freshrag.core.manifest import read_manifest
from freshrag.core.samples import read_samples
from tests.support.datasets import write_dataset


def openai_style(request, headers):
    """A service answering with OpenAI's usage names and two fields freshrag does not read."""
    return {"json": {"answer": "Bridges.", "trace_id": request["id"], "debug": {"ms": 3},
                     "usage": {"prompt_tokens": 120, "completion_tokens": 7,
                               "total_tokens": 127}}}


def run_command(tmp_path, config):
    questions, articles = write_dataset(tmp_path / "data")
    return ["run", "--questions", str(questions), "--articles", str(articles), "--out",
            str(tmp_path / "run"), "--systems", "svc", "--no-probe", "--concurrency", "1",
            "--config", str(config)]


def write_config(path, port, timeout_s):
    path.write_text(f'[systems.svc]\nurl = "http://127.0.0.1:{port}/rag"\n'
                    f"timeout_s = {timeout_s}\nmax_attempts = 1\n", encoding="utf-8")


def test_openai_usage_is_counted_and_unread_fields_named_once(tmp_path, fake_server, capsys):
    server = fake_server(services={"/rag": openai_style})
    config = tmp_path / "freshrag.toml"
    write_config(config, server.port, 10)
    assert main(run_command(tmp_path, config)) == 0
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert [row["usage"]["answer"]["input"] for row in rows] == [120] * 3
    assert all(row["details"]["unknown"] == ["retrievals", "decision"] for row in rows)
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "reply fields not read" in line]
    assert len(lines) == 1 and lines[0].startswith("svc: reply fields not read: debug, trace_id ")


def test_raising_the_deadline_on_resume_answers_the_failed_pairs_only(tmp_path, fake_server,
                                                                      capsys):
    slow_town = threading.Event()  # set: Town 2's answer takes a second

    def service(request, headers):
        slow = "Town 2" in request["question"] and slow_town.is_set()
        return {"json": {"answer": "Bridges.", "usage": {"input_tokens": 5, "output_tokens": 1}},
                "delay": 1.0 if slow else 0}

    server = fake_server(services={"/rag": service})
    slow_town.set()
    config = tmp_path / "freshrag.toml"
    write_config(config, server.port, 0.2)
    command = run_command(tmp_path, config)
    assert main(command) == 1  # a pair failed
    first = read_samples(tmp_path / "run" / "samples.jsonl")
    ids = {row["gold_title"]: row["question_id"] for row in first}
    failed = [row for row in first if row["status"] == "failed"]
    assert [row["question_id"] for row in failed] == [ids["Town 2"]]
    assert "no complete reply within 0.2 s" in failed[0]["error"]
    asked = [request["id"] for _, request, _ in server.service_requests]
    assert sorted(asked) == sorted(ids.values()) and len(ids) == 3

    write_config(config, server.port, 5)
    capsys.readouterr()
    judged = server.calls
    assert main(command) == 0, capsys.readouterr().err  # not refused: the deadline is no identity
    asked_again = [request["id"] for _, request, _ in server.service_requests][len(asked):]
    assert asked_again == [ids["Town 2"]]  # the finished pairs are kept, not asked again
    assert server.calls - judged == 1  # and not judged again: one judge call, Town 2's
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    assert sorted((row["question_id"], row["status"]) for row in rows) == sorted(
        (qid, "ok") for qid in ids.values())
    source = read_manifest(tmp_path / "run")["system_sources"]["svc"]
    assert source["settings"] == {"timeout_s": 5.0, "max_attempts": 1}
