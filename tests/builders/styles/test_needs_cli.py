"""`freshrag needs` on the shipped query log and `freshrag build --needs` on a dump, end to end
with the fake OpenAI-compatible server (bag-of-words embeddings, calls scripted by `needs_reply`
of tests/support/builds.py); then `freshrag run` on the built set, whose rows carry each
question's need."""

import json

import pytest

from freshrag.builders.styles.needs import NEEDS_FILE, read_needs
from freshrag.cli.main import main
from freshrag.core.jsonl import read_jsonl
from freshrag.core.samples import read_samples
from tests import WIKIRAG
from tests.support.builds import NEEDS, needs_build

LOG = WIKIRAG.parent / "needs" / "queries.jsonl"


def test_needs_from_the_shipped_log_then_a_build_for_them(tmp_path, needs_fake, capsys):
    out = tmp_path / "derived" / "needs.txt"
    assert main(["needs", "--queries", str(LOG), "--out", str(out), "--min-size", "2"]) == 0
    needs = read_needs(out)
    document = json.loads(out.with_suffix(".json").read_text())
    assert len(needs) == sum(n["status"] == "described" for n in document["needs"]) >= 2
    assert document["queries"] == sum(1 for line in LOG.read_text().splitlines() if line.strip())
    assert sum(n["size"] for n in document["needs"]) + document["small_clusters"]["queries"] \
        == document["queries"]
    assert needs_fake.embedding_calls >= 1
    printed = capsys.readouterr().out
    assert "| # | need | queries | example queries |" in printed and str(out) in printed
    calls = needs_fake.calls
    assert main(["needs", "--queries", str(LOG), "--out", str(out), "--min-size", "2"]) == 0
    assert needs_fake.calls == calls  # every description from the response cache


def test_build_with_needs_then_run_rows_carry_the_need(tmp_path, needs_fake):
    (tmp_path / "needs.txt").write_text(NEEDS)
    assert needs_build(tmp_path, "--needs", str(tmp_path / "needs.txt"), "--per-need", "3") == 0
    out = tmp_path / "dataset"
    manifest = json.loads((out / "manifest.json").read_text())
    funnel = manifest["funnel"]["needs"]
    assert [(n["need"], n["asked"], n["questions"], n["blank"]) for n in funnel] == [
        ("Results of local elections", 3, 3, 0), ("Casualties of disasters", 3, 0, 3)]
    assert manifest["funnel"]["questions"] == 3
    assert manifest["settings"]["needs"].startswith("2 needs, sha256 ")
    assert "need_question" in manifest["prompts"]
    questions = list(read_jsonl(out / "questions.jsonl"))
    assert all(q["information_need"] == "Results of local elections" and q["reference"]
               and q["question"] == f"What happened in {q['title']}?" for q in questions)

    calls = needs_fake.calls
    assert needs_build(tmp_path, "--needs", str(tmp_path / "needs.txt"), "--per-need", "3") == 0
    assert needs_fake.calls == calls  # finished: nothing asked again

    run = tmp_path / "run"
    assert main(["run", "--dataset", str(out), "--systems", "baseline", "--no-probe",
                 "--out", str(run)]) == 0
    rows = read_samples(run / "samples.jsonl")
    assert len(rows) == 3
    assert {row["information_need"] for row in rows} == {"Results of local elections"}
    assert {row["reference"] for row in rows} == {"a result"}


def test_a_build_resumed_with_other_needs_is_refused(tmp_path, needs_fake, capsys):
    (tmp_path / "needs.txt").write_text(NEEDS)
    assert needs_build(tmp_path, "--needs", str(tmp_path / "needs.txt"), "--per-need", "1") == 0
    (tmp_path / "other.txt").write_text("Chart positions of albums\n")
    calls = needs_fake.calls
    assert needs_build(tmp_path, "--needs", str(tmp_path / "other.txt"), "--per-need", "1") == 2
    assert "this dataset was built with needs '2 needs, sha256" in capsys.readouterr().err
    assert needs_build(tmp_path) == 2  # nor without needs: one questions file, one way of making it
    assert needs_fake.calls == calls


@pytest.mark.parametrize("args, message", [
    pytest.param(["--per-need", "2"], "--per-need caps the questions of --needs", id="cap-alone"),
    pytest.param(["--needs", "NEEDS"], "NEEDS:2: blank line", id="blank-line"),
    pytest.param(["--needs", "OK", "--style", "recent"], "it takes no --style", id="with-style"),
    pytest.param(["--needs", "OK", "--questions-per-article", "2"],
                 "or --questions-per-article", id="with-questions-per-article"),
    pytest.param(["--needs", "missing.txt"], "missing.txt: cannot open", id="missing-file"),
])
def test_bad_needs_options_are_refused_before_any_call(tmp_path, needs_fake, capsys, args, message):
    (tmp_path / "NEEDS").write_text("Elections\n\nDisasters\n")
    (tmp_path / "OK").write_text("Elections\n")
    args = [str(tmp_path / a) if a in ("NEEDS", "OK", "missing.txt") else a for a in args]
    assert needs_build(tmp_path, *args) == 2
    assert message.replace("NEEDS", str(tmp_path / "NEEDS")).replace(
        "missing.txt", str(tmp_path / "missing.txt")) in capsys.readouterr().err
    assert needs_fake.calls == 0 and not (tmp_path / "dataset" / NEEDS_FILE).exists()


@pytest.mark.parametrize("log, message", [
    pytest.param('{"query": "fine"}\n{"query": ""}\n', "log.jsonl:2: field 'query' is empty",
                 id="empty-query"),
    pytest.param('{"query": "fine"}\n{"query": "x"\n', "log.jsonl:2: not valid JSON",
                 id="torn-line"),
])
def test_a_bad_query_log_is_refused_before_any_call(tmp_path, needs_fake, capsys, log, message):
    (tmp_path / "log.jsonl").write_text(log)
    assert main(["needs", "--queries", str(tmp_path / "log.jsonl"),
                 "--out", str(tmp_path / "needs.txt")]) == 2
    assert message in capsys.readouterr().err
    assert needs_fake.calls == 0 and needs_fake.embedding_calls == 0
    assert not (tmp_path / "needs.txt").exists()


def test_needs_out_may_not_be_a_directory(tmp_path, needs_fake, capsys):
    assert main(["needs", "--queries", str(LOG), "--out", str(tmp_path)]) == 2
    assert "not a regular file but a directory" in capsys.readouterr().err
