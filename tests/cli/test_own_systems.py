"""The user's own systems through `freshrag run`, `systems` and `report`, end to end against the
fake server: a class in a file, a service behind HTTP, an answers file in Ragas' columns, beside
a built-in system in one run and one report; their identity, and their failures."""

from __future__ import annotations

import csv
import json

import pytest

from freshrag.cli.main import main
from freshrag.core.manifest import read_manifest
from freshrag.core.samples import read_samples
from freshrag.reporting.identity import group_rows
from freshrag.reporting.loading import load_summaries
from freshrag.reporting.outcomes import decides
from tests.support.datasets import write_dataset
from tests.support.dom import parse, viewer_samples

MY_RAG = '''
"""Answers through the run's answer model, with the question restated."""
from freshrag import SystemAnswer


class MyRag:
    def __init__(self, context):
        self.context = context

    def answer(self, question):
        if "Town 2" in question.text and FAIL_ON_TOWN_2:
            raise KeyError("no index for Town 2")
        reply = self.context.llm.chat("answer", [{"role": "user", "content": question.text}])
        return SystemAnswer(reply.text or "", calls=[reply], retrievals=0,
                            details={"decision": "no-retrieve"})


FAIL_ON_TOWN_2 = False
'''


def rag_service(request, headers):
    """A RAG service that reports its contexts but neither tokens nor a decision."""
    town = request["question"].split("Town ")[1].split(" ")[0]
    return {"json": {"answer": f"Town {town} has bridges.",
                     "contexts": [{"title": f"Town {town}", "text": f"Town {town} has bridges.",
                                   "score": 0.7}]}}


@pytest.fixture
def own(tmp_path, fake_server):
    server = fake_server(services={"/rag": rag_service})
    questions, articles = write_dataset(tmp_path / "data")
    plugin = tmp_path / "my_rag.py"
    plugin.write_text(MY_RAG, encoding="utf-8")
    answers = tmp_path / "ragas.csv"
    texts = [json.loads(line)["question"] for line in questions.read_text().splitlines()]
    with answers.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["user_input", "response", "retrieved_contexts"])
        writer.writerows([[text, "Three bridges.", "['Town 0 has 3 bridges.']"]
                          for text in texts])
    specs = (f"naive,mine={plugin}:MyRag,svc=http://127.0.0.1:{server.port}/rag,"
             f"theirs={answers}")
    command = ["run", "--questions", str(questions), "--articles", str(articles), "--out",
               str(tmp_path / "run"), "--systems", specs, "--no-probe", "--concurrency", "2"]
    return tmp_path, command, plugin, server


def test_own_systems_run_beside_a_built_in_one_with_their_identity(own, capsys):
    tmp_path, command, plugin, _ = own
    assert main(command) == 0
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    by_system = {system: [r for r in rows if r["system"] == system]
                 for system in ("naive", "mine", "svc", "theirs")}
    assert {system: len(found) for system, found in by_system.items()} == dict.fromkeys(
        by_system, 3)
    assert all(row["status"] == "ok" and row["grade"]["truthfulness"] for row in rows)
    assert all(row["usage"]["answer"]["input"] > 0 for row in by_system["mine"])
    service = by_system["svc"][0]
    assert service["retrievals"] == 1 and "answer" not in service["usage"]
    assert service["details"]["unknown"] == ["input_tokens", "output_tokens", "decision"]
    assert all(row["answer"] == "Three bridges." for row in by_system["theirs"])
    # an answers file replays: its latency is unknown (docs/own-system.md), every other's timed
    assert all((row["answer_latency_s"] is None) == (row["system"] == "theirs") for row in rows)
    sources = read_manifest(tmp_path / "run")["system_sources"]
    assert (sources["mine"]["origin"], sources["svc"]["origin"], sources["theirs"]["origin"],
            sources["naive"]["origin"]) == ("file", "http", "answers file", "built-in")

    capsys.readouterr()
    page = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "run"), "--format", "json", "--html", str(page)]) == 0
    summary = {row["system"]: row for row in json.loads(capsys.readouterr().out)["rows"]}
    answers = viewer_samples(parse(page.read_text()))  # the tokens the viewer lists
    assert sorted(a["label"] for a in answers if a["input_tokens"] is None) == [
        "svc"] * 3 + ["theirs"] * 3  # unknown, never 0
    assert summary["svc"]["input_tokens"] is None and summary["svc"]["retrievals"] == 3
    assert summary["theirs"]["input_tokens"] is None  # unknown, never 0
    assert summary["mine"]["input_tokens"] > 0 and summary["naive"]["retrievals"] == 3
    analysis = json.loads((tmp_path / "run" / "analysis.json").read_text())
    # the answers file's replayed answers have no latency: out of the table, never a 0.00
    assert {row["system"] for row in analysis["latency"]} == {"naive", "mine", "svc"}
    cost = {row["system"]: row for row in analysis["cost"]}
    assert cost["svc"]["input_tokens"] is None and cost["svc"]["pareto_input_tokens"] is None


def test_a_resume_with_changed_code_is_refused_naming_the_system(own, capsys):
    tmp_path, command, plugin, _ = own
    assert main(command) == 0
    plugin.write_text(MY_RAG.replace("restated", "restated again"), encoding="utf-8")
    capsys.readouterr()
    assert main(command) == 2
    error = capsys.readouterr().err
    assert "system.mine.sha256: was " in error and "holds a run with other settings" in error


@pytest.mark.parametrize("concurrency", ["2", "1"])
def test_a_system_that_raises_fails_its_pair_and_the_run_goes_on(own, capsys, concurrency):
    tmp_path, command, plugin, _ = own
    plugin.write_text(MY_RAG.replace("FAIL_ON_TOWN_2 = False", "FAIL_ON_TOWN_2 = True"))
    command = [*command[:-1], concurrency]
    assert main(command) == 1  # some pairs failed: exit 1, every other row written
    rows = read_samples(tmp_path / "run" / "samples.jsonl")
    failed = [row for row in rows if row["status"] == "failed"]
    assert [(row["system"], row["gold_title"]) for row in failed] == [("mine", "Town 2")]
    assert failed[0]["error"] == "system 'mine' raised KeyError: 'no index for Town 2'"
    assert len(rows) == 12
    # where in their code: the file and the line that raised, in the row and, one pair at a
    # time, on the terminal as it happens
    raising = MY_RAG.splitlines().index('            raise KeyError("no index for Town 2")')
    # (the file's name: a module of the same text imported before is used again)
    where = f'{plugin.name}", line {raising + 1}, in answer'
    assert where in failed[0]["error_detail"]
    said = capsys.readouterr()
    assert (where in said.err) == (concurrency == "1")
    assert "failed pairs (system: error" in said.out and "unscored answers" not in said.out


def test_a_plugin_that_fails_to_import_is_one_error_with_its_own_traceback(own, capsys):
    tmp_path, command, plugin, _ = own
    plugin.write_text("import json\nSETTINGS = json.loads('{broken')\n")
    assert main(command) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"freshrag: error: system '{plugin}:MyRag': importing {plugin} "
                            f"failed: JSONDecodeError")
    assert error.count("Traceback (most recent call last)") == 1
    assert f'File "{plugin}", line 2' in error
    assert not (tmp_path / "run" / "samples.jsonl").exists()


def test_freshrag_systems_lists_built_in_and_configured_services(tmp_path, capsys):
    config = tmp_path / "freshrag.toml"
    config.write_text('[systems.team-rag]\nurl = "http://127.0.0.1:8000/ask"\n')
    assert main(["systems", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "| naive | built-in | freshrag.systems.naive | Naive RAG" in out
    assert "| team-rag | http | http://127.0.0.1:8000/ask |" in out


def test_an_unknown_system_names_the_valid_ones(own, capsys):
    tmp_path, command, _, _ = own
    command[command.index("--systems") + 1] = "naive,nonsense"
    assert main(command) == 2
    assert "unknown system(s) ['nonsense']; valid systems: baseline, oracle" in \
        capsys.readouterr().err


def test_a_system_that_cannot_be_built_stops_the_run_before_anything_is_written(own, capsys):
    tmp_path, command, plugin, _ = own
    plugin.write_text(MY_RAG.replace("        self.context = context",
                                     "        raise RuntimeError('no API key for my store')"))
    assert main(command) == 2
    error = capsys.readouterr().err
    assert "system 'mine' (" in error and "building it failed: RuntimeError: no API key" in error
    assert error.count("Traceback (most recent call last)") == 1
    assert not (tmp_path / "run" / "manifest.json").exists()


def test_import_turns_an_answers_file_into_a_judged_run(own, capsys):
    tmp_path, command, _, _ = own
    data = ["--questions", command[command.index("--questions") + 1],
            "--articles", command[command.index("--articles") + 1]]
    assert main(["import", str(tmp_path / "ragas.csv"), "--system", "theirs", *data,
                 "--out", str(tmp_path / "imported"), "--no-probe"]) == 0
    rows = read_samples(tmp_path / "imported" / "samples.jsonl")
    assert [(row["system"], row["answer"]) for row in rows] == [("theirs", "Three bridges.")] * 3
    assert all(row["grade"]["truthfulness"] for row in rows)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q00001", "answer": "x"}\n{"id": "q00009", "answer": "y"}\n')
    capsys.readouterr()
    assert main(["import", str(bad), "--system", "bad", *data, "--out",
                 str(tmp_path / "bad-run"), "--no-probe"]) == 2
    assert (f"{bad}:2: matches no question of the dataset: its id 'q00009' is not one of the "
            f"dataset's") in capsys.readouterr().err
    assert not (tmp_path / "bad-run").exists()


def test_a_dry_run_asks_no_service_and_counts_the_judge(own, capsys):
    tmp_path, command, _, server = own
    capsys.readouterr()
    assert main([*command, "--dry-run"]) == 0
    table = capsys.readouterr().out
    assert "judge" in table and server.service_requests == [] and server.calls == 0
    assert not (tmp_path / "run" / "samples.jsonl").exists()


def test_an_own_system_s_declared_kind_is_recorded_and_read_by_the_report(own):
    tmp_path, command, plugin, _ = own
    plugin.write_text(MY_RAG.replace("class MyRag:\n", 'class MyRag:\n    kind = "decides"\n'),
                      encoding="utf-8")
    assert main(command) == 0
    kinds = read_manifest(tmp_path / "run")["system_kinds"]
    assert (kinds["mine"], kinds["naive"]) == ("decides", "fixed")
    groups = group_rows(load_summaries(tmp_path / "run"))
    # a user's decider, which a report took for `fixed` while the manifest did not say
    assert {key.system for key, group in groups.items() if decides(group)} == {"mine"}
