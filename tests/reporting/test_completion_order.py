"""A report is the same whatever order a run's pairs finished in (core/plan_order.py,
docs/reports.md#how-sure-the-numbers-are): the rows of a real run, written again in another
order as a run at --concurrency above 1 or on Ray leaves them, report byte for byte as the
run's own, printed and in analysis.json, with the dataset where the run read it (answers in its
order) and with the dataset moved away (answers by question id). The example set's questions are
numbered against their order here, so that the two orders differ."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from freshrag.cli.main import main
from freshrag.core.dataset import example_dir
from freshrag.reporting.loading import load_summaries
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import SECRET, use_endpoint

SYSTEMS = ("baseline", "oracle")


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """`plan/run`: the example set's run (questions numbered from the last), by the fake server
    one pair at a time; `shuffled/run`: the same files, samples.jsonl's rows shuffled."""
    root = tmp_path_factory.mktemp("order")
    (root / "dataset").mkdir()
    lines = (example_dir() / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    (root / "dataset/questions.jsonl").write_text("".join(
        json.dumps({**json.loads(line), "id": f"q{len(lines) - place:03d}"}) + "\n"
        for place, line in enumerate(lines)), encoding="utf-8")
    shutil.copy(example_dir() / "articles.jsonl", root / "dataset")
    with FakeOpenAIServer() as server, pytest.MonkeyPatch.context() as patch:
        use_endpoint(patch, server.base_url, SECRET)
        patch.chdir(root)
        assert main(["run", "--questions", str(root / "dataset/questions.jsonl"),
                     "--articles", str(root / "dataset/articles.jsonl"), "--out", "plan/run",
                     "--systems", ",".join(SYSTEMS), "--concurrency", "1",
                     "--today", "2024-06-01"]) == 0
    shutil.copytree(root / "plan", root / "shuffled")
    rows = (root / "plan/run/samples.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    shuffled = random.Random(0).sample(rows, len(rows))
    assert shuffled != rows
    (root / "shuffled/run/samples.jsonl").write_text("".join(shuffled), encoding="utf-8")
    return root


@pytest.fixture
def moved(made):
    """The dataset the run read moved away while the test runs."""
    (made / "dataset").rename(made / "moved")
    yield made
    (made / "moved").rename(made / "dataset")


def report(root: Path, where: str, capsys) -> tuple[str, str]:
    """What `freshrag report run` prints in `root / where`, and its analysis.json."""
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root / where)
        assert main(["report", "run", "--out", "report"]) == 0
    return capsys.readouterr().out, (root / where / "report/analysis.json").read_text()


def questions(run: Path) -> dict[str, list[str]]:
    """Each system's question ids, in the order the report reads its answers."""
    read: dict[str, list[str]] = {}
    for answer in load_summaries(run):
        read.setdefault(answer.system, []).append(answer.question_id)
    return read


def test_shuffled_rows_report_as_the_runs_own_with_the_dataset(made, capsys):
    printed, analysis = report(made, "plan", capsys)
    assert "95%" in printed and '"interval": [' in analysis  # intervals: order would show
    assert report(made, "shuffled", capsys) == (printed, analysis)
    ids = [f"q{40 - place:03d}" for place in range(40)]  # the dataset's order
    assert questions(made / "shuffled/run") == {system: ids for system in SYSTEMS}


def test_shuffled_rows_report_as_the_runs_own_with_the_dataset_moved(moved, capsys):
    assert report(moved, "shuffled", capsys) == report(moved, "plan", capsys)
    ids = [f"q{n:03d}" for n in range(1, 41)]  # by id
    assert questions(moved / "shuffled/run") == {system: ids for system in SYSTEMS}


def test_a_changed_dataset_is_not_read_for_the_order(made, tmp_path):
    shutil.copytree(made / "shuffled", tmp_path / "shuffled")
    questions_file = made / "dataset/questions.jsonl"
    kept = questions_file.read_text(encoding="utf-8")
    try:
        questions_file.write_text(kept + "\n", encoding="utf-8")  # the same ids; another hash
        assert questions(tmp_path / "shuffled/run")["oracle"] == [f"q{n:03d}"
                                                                   for n in range(1, 41)]
    finally:
        questions_file.write_text(kept, encoding="utf-8")
