"""The README's quick start for "I have an API key" is five lines and works as written: its
commands run against the fake OpenAI-compatible server standing in for the provider (its URL in
place of the provider's, 2 questions in place of 20), every chat request carrying the model the
README names, the embeddings on the local model, and the report written where it says.

Integration: the retrieving systems index the example corpus with the real local all-MiniLM-L6-v2
(about a minute and a half on 2 cores)."""

from __future__ import annotations

import os
import re
import shlex

import pytest

from freshrag.cli.main import main
from tests import ROOT
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import scorers_reply

PROVIDER = "https://api.openai.com/v1"


def quick_start() -> list[str]:
    """The lines of the first code block after "I have an API key"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("I have an API key", 1)[1]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1).splitlines()


@pytest.mark.integration
def test_the_quick_start_is_five_lines_that_run(tmp_path, monkeypatch, capsys):
    lines = quick_start()
    assert len(lines) == 5
    assert lines[0].startswith("export FRESHRAG_API_KEY=")
    assert [line.split()[:2] for line in lines[1:4]] == [["freshrag", "run"]] * 2 + [
        ["freshrag", "report"]]
    for name in [name for name in os.environ if name.startswith("FRESHRAG_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    with FakeOpenAIServer(reply=scorers_reply) as server:
        monkeypatch.setenv("FRESHRAG_API_KEY", lines[0].split("=", 1)[1])
        for line in lines[1:4]:
            argv = shlex.split(line.replace(PROVIDER, server.base_url), comments=True)[1:]
            argv = [("2" if part == "20" else part) for part in argv]
            assert main(argv) == 0, line
    model = lines[1].split("--model ", 1)[1].split()[0]
    assert server.requests and {request["model"] for request in server.requests} == {model}
    assert server.embedding_requests == []  # the embeddings stayed local, as the README says
    report = lines[3].split("--html ", 1)[1].split()[0]
    assert (tmp_path / report).is_file() and lines[4].split()[1] == report
    assert "local fallback" in capsys.readouterr().err
