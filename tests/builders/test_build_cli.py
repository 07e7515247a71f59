"""`freshrag build` end to end on a dump the test writes, with the fake OpenAI-compatible server as
the builder model, then `freshrag run --dataset` on what it built."""

import json
import re
from datetime import date

import pytest

from freshrag.builders.cutoffs import created_after
from freshrag.builders.styles.prompted import QUESTION_TRIES
from freshrag.cli.main import main
from freshrag.core.jsonl import read_jsonl
from freshrag.core.samples import read_samples
from tests import WIKIRAG
from tests.support.builds import CUTOFF, DUMP_ARTICLES, build
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import SECRET, held, use_endpoint
from tests.support.wikidump import article_pages, redirect_page, write_dump

DATA = WIKIRAG


def released(limit=DUMP_ARTICLES):
    with (DATA / "articles.jsonl").open(encoding="utf-8") as lines:
        return [json.loads(line) for _, line in zip(range(limit), lines)]


@pytest.fixture
def dump(tmp_path):
    pages = [*article_pages(DATA / "articles.jsonl", DUMP_ARTICLES),
             redirect_page(900, "Moved page", released()[0]["title"], "2022-05-05T00:00:00Z")]
    return write_dump(tmp_path / "wiki.xml.bz2", pages)


def test_build_from_a_dump_then_run_on_it(tmp_path, dump, fake, capsys):
    assert build(tmp_path, dump) == 0
    out = tmp_path / "dataset"
    manifest = json.loads((out / "manifest.json").read_text())
    funnel = manifest["funnel"]
    rows = released()
    long_enough = [r for r in rows if len(r["content"]) > 1000]
    after = [r["title"] for r in long_enough if r["created"]
             and created_after(r["created"].replace("+00:00", "Z"), date(2021, 9, 30))]
    assert funnel["n_r"] == len(long_enough) and funnel["n_d"] == len(after)
    assert funnel["n_f"] == len(after)  # the fake model says "mostly after the cutoff" to all
    assert funnel["discarded_r"]["redirect"] == 1
    assert funnel["discarded_r"].get("too_short", 0) == len(rows) - len(long_enough)
    assert manifest["source"] == str(dump) and manifest["settings"]["cutoff"] == CUTOFF
    assert SECRET not in (out / "manifest.json").read_text()
    assert [t for t in (out / "A_d.txt").read_text().splitlines()] == after
    questions = list(read_jsonl(out / "questions.jsonl"))
    assert sorted(q["title"] for q in questions) == sorted(after)
    revisions = {r["title"]: r["revision_id"] for r in read_jsonl(out / "articles.jsonl")}
    assert all(q["revision_id"] == revisions[q["title"]] for q in questions)
    assert all(q["question"] and q["generator"] == "fake-model" for q in questions)
    assert "freshrag run --dataset" in capsys.readouterr().out

    calls = fake.calls
    assert build(tmp_path, dump) == 0  # finished: nothing is asked again
    assert fake.calls == calls

    run = tmp_path / "run"
    assert main(["run", "--dataset", str(out), "--systems", "baseline", "--out", str(run)]) == 0
    samples = read_samples(run / "samples.jsonl")
    assert sorted(s["gold_title"] for s in samples) == sorted(after)


def test_one_stage_at_a_time(tmp_path, dump, fake):
    assert build(tmp_path, dump, "--stage", "A_r") == 0
    out = tmp_path / "dataset"
    assert (out / "A_r.txt").exists() and not (out / "A_d.txt").exists()
    assert fake.calls == 0  # sampling and the date filter need no model
    assert build(tmp_path, dump, "--stage", "A_d") == 0
    assert fake.calls == 0 and not (out / "A_f.txt").exists()
    assert build(tmp_path, dump, "--stage", "A_f") == 0
    assert fake.calls == len((out / "A_d.txt").read_text().splitlines())


def test_a_truncated_dump_stops_naming_it_and_keeps_the_complete_pages(tmp_path, fake, capsys):
    pages = article_pages(DATA / "articles.jsonl", DUMP_ARTICLES)
    whole = write_dump(tmp_path / "whole.xml", pages).read_bytes()
    broken = tmp_path / "broken.xml"
    broken.write_bytes(whole[: len(whole) // 2])
    assert build(tmp_path, broken) == 2
    err = capsys.readouterr().err
    assert str(broken) in err and "line" in err
    kept = [row["title"] for row in read_jsonl(tmp_path / "dataset" / "articles.jsonl")]
    assert kept and kept == [r["title"] for r in released() if len(r["content"]) > 1000][: len(kept)]
    assert not (tmp_path / "dataset" / "A_r.txt").exists()  # the stage did not finish
    assert fake.calls == 0


@pytest.mark.parametrize("option, message", [
    (["--cutoff", "2021-13-45"], "2021-13-45"),
    (["--cutoff-model", "no-such-model"], "no-such-model"),
])
def test_a_cutoff_that_is_not_a_date_says_so(tmp_path, dump, option, message, capsys):
    args = ["build", "--dump", str(dump), "--out", str(tmp_path / "d"), *option]
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_a_resumed_build_asks_again_for_the_questions_that_came_back_empty(tmp_path, dump,
                                                                          monkeypatch, capsys):
    from tests.support.fake_openai_server import default_reply

    empty = {"on": True}

    def reply(request):
        if request.get("tools"):
            return default_reply(request)  # the recency verdict: "mostly after the cutoff"
        return {"content": ""} if empty["on"] else {"content": "What did the article say?"}

    with FakeOpenAIServer(reply=reply) as server:
        use_endpoint(monkeypatch, server.base_url, SECRET)
        assert build(tmp_path, dump) == 1  # no question written: a failed build
        out = tmp_path / "dataset"
        a_f = (out / "A_f.txt").read_text().splitlines()
        assert a_f and not list(read_jsonl(out / "questions.jsonl"))
        said = capsys.readouterr()
        assert "freshrag run" not in said.out and "no question was written" in said.err
        funnel = json.loads((out / "manifest.json").read_text())["funnel"]
        assert funnel["dropped_questions"] == {"empty": QUESTION_TRIES * len(a_f)}
        empty["on"] = False
        asked = server.calls
        assert build(tmp_path, dump) == 0
        assert server.calls - asked == len(a_f)  # each missing question asked of the model again
    questions = list(read_jsonl(out / "questions.jsonl"))
    assert sorted(q["title"] for q in questions) == sorted(a_f)
    assert json.loads((out / "manifest.json").read_text())["funnel"]["questions"] == len(a_f)


@pytest.mark.parametrize("option, named", [
    (["--n", "30"], "n 20 (now 30)"),
    (["--n", "20", "--seed", "3"], "seed 0 (now 3)"),
])
def test_building_again_with_another_n_or_seed_is_refused_naming_both_values(
        tmp_path, dump, fake, capsys, option, named):
    assert build(tmp_path, dump, "--n", "20", "--stage", "A_r") == 0
    sampled = (tmp_path / "dataset" / "A_r.txt").read_text()
    assert build(tmp_path, dump, *option) == 2
    assert named in capsys.readouterr().err
    assert (tmp_path / "dataset" / "A_r.txt").read_text() == sampled and fake.calls == 0


def test_split_pages_articles_files_with_stub_dates_build_what_the_history_dump_builds(
        tmp_path, dump, fake):
    from tests.support.wikidump import split_dumps
    pages = [*article_pages(DATA / "articles.jsonl", DUMP_ARTICLES),
             redirect_page(900, "Moved page", released()[0]["title"], "2022-05-05T00:00:00Z")]
    articles, stubs = split_dumps(pages, tmp_path / "split", files=3)
    for stage in ("A_r", "A_d"):  # the stages that read the dump, no LLM call
        assert build(tmp_path, dump, "--stage", stage) == 0
    split_out = tmp_path / "split-dataset"
    for stage in ("A_r", "A_d"):
        assert main(["build", "--dump", str(tmp_path / "split" / "wiki-pages-articles*.xml.bz2"),
                     "--stub-dump", *map(str, stubs), "--dump-processes", "2", "--cutoff",
                     CUTOFF, "--out", str(split_out), "--stage", stage]) == 0
    for name in ("articles.jsonl", "A_r.txt", "A_d.txt"):  # the same rows in the same order
        assert (split_out / name).read_text() == (tmp_path / "dataset" / name).read_text(), name
    assert not list((split_out / ".dump-spool").glob("*.jsonl"))
    # without the stubs a pages-articles dump has no creation dates: nothing passes the filter
    bare = tmp_path / "bare"
    for stage in ("A_r", "A_d"):
        assert main(["build", "--dump", *map(str, articles), "--cutoff", CUTOFF, "--out",
                     str(bare), "--stage", stage]) == 0
    assert (bare / "A_r.txt").read_text() == (split_out / "A_r.txt").read_text()
    assert (bare / "A_d.txt").read_text() == ""


def test_a_build_or_labelling_of_a_directory_another_process_holds_is_refused(tmp_path, dump,
                                                                               fake, capsys):
    out = tmp_path / "dataset"
    with held(out) as holder:
        assert build(tmp_path, dump, "--n", "5") == 2
        assert f"in use by another freshrag process (pid {holder.pid})" in capsys.readouterr().err
        assert not (out / "manifest.json").exists() and not (out / "A_r.txt").exists()
    assert build(tmp_path, dump, "--stage", "A_r") == 0  # released: the build goes ahead
    rows = released(2)
    (out / "articles.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (out / "questions.jsonl").write_text("".join(
        json.dumps({"title": r["title"], "question": f"What is {r['title']}?"}) + "\n"
        for r in rows))
    with held(out) as holder:
        assert main(["label", str(out)]) == 2
        assert f"pid {holder.pid}" in capsys.readouterr().err
    assert fake.calls == 0 and not (out / "labels.jsonl").exists()


def test_the_library_build_writes_what_the_command_writes(tmp_path, dump, fake):
    from freshrag.cli.commands.build import build as library_build

    assert build(tmp_path, dump) == 0
    manifest = library_build(tmp_path / "library", dump=[dump], cutoff=CUTOFF, no_cache=True)
    command = json.loads((tmp_path / "dataset" / "manifest.json").read_text())
    assert manifest["funnel"] == command["funnel"]
    assert (sorted((tmp_path / "library" / "questions.jsonl").read_text().splitlines())
            == sorted((tmp_path / "dataset" / "questions.jsonl").read_text().splitlines()))


@pytest.mark.parametrize("options, message", [
    pytest.param({"sizes": 3}, "unknown option(s) ['sizes']", id="unknown"),
    pytest.param({"cutoff": "soon"}, "--cutoff", id="bad-value"),
])
def test_the_library_build_refuses_what_the_command_refuses(tmp_path, options, message):
    from freshrag.cli.commands.build import build as library_build
    from freshrag.core.errors import UserError

    with pytest.raises(UserError, match=re.escape(message)):
        library_build(tmp_path / "out", **options)
