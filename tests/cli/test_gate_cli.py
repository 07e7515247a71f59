"""`freshrag gate` end to end on runs made by `freshrag run` against the fake server: an unchanged
candidate passes from the cache alone, and each way a change can make answers worse fails the
rule made for it, with the exit status, the summary and a JUnit file CI reads."""

import json
import re
import xml.etree.ElementTree as ET

import pytest

from freshrag.cli.main import main
from tests.support.datasets import write_dataset
from tests.support.fakes import discerning_judge, grade_call

TOWNS = 10
RULES = """\
[[gate.rule]]
kind = "difference"
system = "{system}"
lower_above = -0.2

[[gate.rule]]
kind = "failed"
at_most = 0.01

[[gate.rule]]
kind = "judge_probes"

[[gate.rule]]
kind = "tokens_per_correct"
system = "{system}"
at_most_increase = 0.1
"""


def town(request):
    return int(re.search(r"Town (\d+)", json.dumps(request["messages"])).group(1))


def reply(request, worse=()):
    """Answers right (the article's sentence) but for model-b on the towns `worse` names; grades
    as a working judge, but for judge-b, which gives every answer 3 and 3."""
    if request.get("tool_choice") not in (None, "auto"):
        return grade_call(3, 3) if request["model"] == "judge-b" else discerning_judge(request)
    wrong = request["model"] == "model-b" and town(request) in worse
    return {"content": f"Town {town(request)} has {99 if wrong else town(request) + 3} bridges."}


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A working directory with a dataset of TOWNS towns and the gate's rules for oracle."""
    monkeypatch.chdir(tmp_path)
    write_dataset(tmp_path / "data", TOWNS)
    (tmp_path / "gate.toml").write_text(RULES.format(system="oracle"), encoding="utf-8")
    return tmp_path


def run(out, *extra, systems="oracle"):
    return main(["run", "--questions", "data/questions.jsonl", "--articles",
                 "data/articles.jsonl", "--out", f"results/{out}", "--systems", systems,
                 "--probe-k", "3", "--concurrency", "2", *extra])


def gate(capsys, *extra):
    capsys.readouterr()
    code = main(["gate", "results/baseline", "results/candidate", "--rules", "gate.toml",
                 "--junit", "gate.xml", *extra])
    out, err = capsys.readouterr()
    cases = ET.parse("gate.xml").getroot().find("testsuite").findall("testcase")
    failing = [case.get("name") for case in cases if case.find("failure") is not None]
    return code, out, err, failing


def test_an_unchanged_candidate_makes_no_call_and_passes(project, fake_server, capsys):
    server = fake_server(reply=reply)
    assert run("baseline") == 0
    server.reset_counts()
    assert run("candidate") == 0
    assert server.calls == 0  # every answer and grade from the response cache
    code, out, err, failing = gate(capsys)
    assert (code, failing) == (0, [])
    assert out.startswith("freshrag gate: passed (4 of 4 rules hold)")
    assert "+0.00 [+0.00, +0.00] over 10 questions" in out and "gate.xml written" in err
    code, body, _, _ = gate(capsys, "--format", "github")
    assert code == 0 and body.startswith("## " + out.splitlines()[0])


def test_a_candidate_worse_on_four_questions_in_ten_fails_the_truthfulness_rule(
        project, fake_server, capsys):
    fake_server(reply=lambda request: reply(request, worse={1, 4, 6, 8}))
    assert run("baseline") == 0
    assert run("candidate", "--model-role", "answer=model-b") == 0
    code, out, _, failing = gate(capsys)
    # 6 correct answers instead of 10 for about the same tokens: tokens per correct rise too
    assert code == 1 and [name.split(":")[1] for name in failing] == [
        " truthfulness, candidate - baseline", " tokens per correct answer at most 10% above the "
                                               "baseline's"]
    assert "-1.60 [" in out  # 4 answers of 10 down from 5 to 1
    assert out.startswith("freshrag gate: FAILED (2 of 4 rules fail)")


def test_a_service_answering_500_fails_the_failed_pairs_rule(project, fake_server, capsys):
    broken = set()

    def service(request, headers):
        number = int(request["question"].split("Town ")[1].split(" ")[0])
        if number in broken:
            return {"status": 500, "body": "Internal Server Error"}
        return {"json": {"answer": f"Town {number} has {number + 3} bridges."}}

    server = fake_server(reply=reply, services={"/rag": service})
    (project / "freshrag.toml").write_text(
        f'[systems.svc]\nurl = "http://127.0.0.1:{server.port}/rag"\nmax_attempts = 1\n')
    # the service reports no tokens: no rule on tokens per correct answer holds it
    without_tokens = RULES.format(system="svc").rsplit("\n[[gate.rule]]", 1)[0]
    (project / "gate.toml").write_text(without_tokens, encoding="utf-8")
    assert run("baseline", systems="svc") == 0
    broken.update({0, 5})
    assert run("candidate", systems="svc") == 1  # failed pairs
    code, out, _, failing = gate(capsys)
    assert code == 1 and failing == ["every system: failed pairs at most 1.0%"]
    assert "20.0% (2 failed, 0 missing, of 10)" in out


def test_a_judge_that_fails_its_probes_fails_its_rule(project, fake_server, capsys):
    fake_server(reply=reply)
    assert run("baseline") == 0
    assert run("candidate", "--model-role", "judge=judge-b") == 0
    code, out, _, failing = gate(capsys, "--allow-other-judge")
    assert code == 1 and "the judge passes its probes (candidate)" in failing
    assert "grades are not informative" in out


def test_runs_of_another_judge_or_other_questions_exit_2_naming_both(project, fake_server,
                                                                    capsys):
    """The same dataset name and question ids: only the manifests' questions hash tells."""
    fake_server(reply=reply)
    assert run("baseline") == 0
    assert run("candidate", "--model-role", "judge=judge-b") == 0
    capsys.readouterr()
    assert main(["gate", "results/baseline", "results/candidate", "--rules", "gate.toml"]) == 2
    err = capsys.readouterr().err
    assert "graded by fake-model and results/candidate by judge-b" in err
    questions = project / "data" / "questions.jsonl"
    rows = [json.loads(line) for line in questions.read_text().splitlines()]
    questions.write_text("".join(json.dumps({**row, "question": row["question"] + " Really?"})
                                 + "\n" for row in rows))
    assert run("other") == 0
    assert main(["gate", "results/baseline", "results/other", "--rules", "gate.toml"]) == 2
    err = capsys.readouterr().err
    assert re.search(r"results/baseline and results/other answered other question sets "
                     r"\(questions sha256 [0-9a-f]{12}… and [0-9a-f]{12}…\)", err), err


def test_a_renamed_system_prints_its_names_as_written(project, fake_server, capsys):
    """The candidate's system under another name (here the built-in answering without
    retrieval): the failed rule pairs it under its names, the terminal shows them as written."""
    fake_server(reply=reply)
    assert run("baseline") == 0 and run("candidate", systems="baseline") == 0
    (project / "gate.toml").write_text(
        '[[gate.rule]]\nkind = "difference"\nbaseline_system = "oracle"\n'
        'candidate_system = "baseline"\nlower_above = -0.2\n\n[[gate.rule]]\nkind = "failed"\n'
        'at_most = 0.0\n')
    code, out, _, failing = gate(capsys)
    assert (code, failing) == (0, [])
    assert "pass  oracle -> baseline: truthfulness" in out and "&gt;" not in out
    assert "0.0% (0 failed, 0 missing, of 10)" in out
    _, body, _, _ = gate(capsys, "--format", "github")
    assert "| `oracle -> baseline: truthfulness," in body


def test_rules_in_freshrag_toml_and_usage_errors_exit_2(project, fake_server, capsys):
    fake_server(reply=reply)
    assert run("baseline") == 0 and run("candidate") == 0
    (project / "freshrag.toml").write_text(RULES.format(system="oracle"))
    capsys.readouterr()
    assert main(["gate", "results/baseline", "results/candidate"]) == 0
    (project / "gate.toml").write_text('[[gate.rule]]\nkind = "failed"\nat_most = "1%"\n')
    assert main(["gate", "results/baseline", "results/candidate", "--rules", "gate.toml"]) == 2
    err = capsys.readouterr().err
    assert err == ("freshrag: error: gate.toml:3: [[gate.rule]] 1 key 'at_most': must be a "
                   "finite number, got '1%'\n")
    assert main(["gate", "results/baseline", "results/nothing", "--config",
                 "freshrag.toml"]) == 2
    assert "results/nothing: no samples.jsonl" in capsys.readouterr().err
    assert main(["gate", "results/baseline", "results/candidate", "--junit",
                 "results/candidate/gate.xml"]) == 2
    assert "inside the run directory" in capsys.readouterr().err
