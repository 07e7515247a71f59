"""The three cases found by hand, each once in process and once as a user runs it
(`python -m harness` in a subprocess, where any traceback would show on stderr):

- a questions file that is not UTF-8 ended in a UnicodeDecodeError traceback;
- `timeout_s = -5` ended in "Timeout value out of range" from deep inside the HTTP client;
- `FRESHRAG_BASE_URL="not a url"` was retried six times and reported as a connection error.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fuzz.support import (
    ARTICLES,
    QUESTIONS,
    assert_no_calls,
    assert_refused,
    invoke,
    scratch,
)
from tests.support.datasets import write_dataset

ROOT = Path(__file__).resolve().parents[2]
UTF16 = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in QUESTIONS).encode("utf-16")


def run_argv(directory: Path, *extra) -> list:
    questions, articles = directory / "questions.jsonl", directory / "articles.jsonl"
    return ["run", "--questions", questions, "--articles", articles, "--out", directory / "run",
            "--systems", "baseline", *extra]


def test_a_utf16_questions_file_is_refused_naming_its_encoding(server):
    with scratch(server) as (tmp, _):
        write_dataset(tmp)
        (tmp / "questions.jsonl").write_bytes(UTF16)
        result = invoke(*run_argv(tmp))
        assert_refused(result, f"{tmp / 'questions.jsonl'}:1: the file is UTF-16LE (byte-order mark "
                               f"at byte offset 0), not UTF-8", "iconv -f utf-16 -t utf-8")
        assert_no_calls(server)


def test_a_latin1_questions_file_is_refused_at_its_first_non_utf8_byte(server):
    with scratch(server) as (tmp, _):
        write_dataset(tmp)
        rows = [dict(ARTICLES[0], title="Café"), *ARTICLES]
        (tmp / "articles.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                                    for r in rows), encoding="utf-8")
        first = json.dumps(QUESTIONS[0]) + "\n"
        (tmp / "questions.jsonl").write_bytes(
            (first + json.dumps({"title": "Café", "question": "Where?"}, ensure_ascii=False)
             + "\n").encode("latin-1"))
        result = invoke(*run_argv(tmp))
        offset = len(first) + len('{"title": "Caf')
        assert_refused(result, f"{tmp / 'questions.jsonl'}:2: not UTF-8: byte 0xe9 at byte offset "
                               f"{offset}", "iconv -f latin1 -t utf-8")
        assert_no_calls(server)


def test_a_negative_timeout_is_refused_with_the_rule(server):
    with scratch(server) as (tmp, _):
        write_dataset(tmp)
        (tmp / "freshrag.toml").write_text("timeout_s = -5\n")
        result = invoke(*run_argv(tmp))
        assert_refused(result, "freshrag.toml: timeout_s must be a positive number of seconds "
                               "(at most 86,400), got -5")
        assert_no_calls(server)
        assert not (tmp / "run").exists()


def test_a_base_url_that_is_not_a_url_is_refused_at_once(server):
    with scratch(server) as (tmp, mp):
        write_dataset(tmp)
        mp.setenv("FRESHRAG_BASE_URL", "not a url")
        started = time.monotonic()
        result = invoke(*run_argv(tmp))
        assert time.monotonic() - started < 5  # no retries with backoff
        assert_refused(result, "FRESHRAG_BASE_URL: 'not a url' is not a base URL: it does not "
                               "start with http:// or https://")
        assert "attempt" not in result.err
        assert not (tmp / "run").exists()


@pytest.mark.parametrize("case", ["utf16-questions", "negative-timeout", "not-a-url"])
def test_the_known_cases_show_no_traceback_as_a_user_runs_them(tmp_path, case):
    write_dataset(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRESHRAG_")}
    env.update(PYTHONPATH=str(ROOT), FRESHRAG_BASE_URL="http://127.0.0.1:9/v1",
               FRESHRAG_API_KEY="sk-x")
    expected = {"utf16-questions": "not UTF-8", "negative-timeout": "got -5",
                "not-a-url": "FRESHRAG_BASE_URL: 'not a url' is not a base URL"}[case]
    if case == "utf16-questions":
        (tmp_path / "questions.jsonl").write_bytes(UTF16)
    elif case == "negative-timeout":
        (tmp_path / "freshrag.toml").write_text("timeout_s = -5\n")
    else:
        env["FRESHRAG_BASE_URL"] = "not a url"
    argv = [str(arg) for arg in run_argv(tmp_path)]
    done = subprocess.run([sys.executable, "-m", "freshrag", *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert expected in done.stderr.strip().splitlines()[-1]
