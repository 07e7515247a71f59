"""`freshrag build --dry-run` for the stages beyond the recency classifier and the creative and
recent questions (harness/cost/build_estimate.py): each dry run sends nothing and writes nothing, and
counts the calls the real build with the same options then sends to the fake server."""

from pathlib import Path

from freshrag.cli.commands.demo import write_example_dump
from freshrag.cli.main import main
from tests import WIKIRAG
from tests.support.builds import (
    CUTOFF,
    NEEDS,
    needs_build,
    statements_build,
    statements_reply,
    traffic_build,
)
from tests.support.costs import table
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import use_endpoint
from tests.support.wikidump import article_pages, write_dump


def listing(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def dry_run(tmp_path, capsys, *extra) -> str:
    """The builder's uncached calls as printed (a count or a low–high range)."""
    before = listing(tmp_path)
    capsys.readouterr()
    assert needs_build(tmp_path, "--dry-run", *extra) == 0
    assert listing(tmp_path) == before  # nothing written, not even a cache
    return table(capsys.readouterr().out).get("builder", ["", "0"])[1]  # no row: no call


def test_needs_dry_run_counts_each_need_and_chunk_the_build_then_asks(tmp_path, needs_fake,
                                                                      capsys):
    (tmp_path / "needs.txt").write_text(NEEDS)
    needs = ["--needs", str(tmp_path / "needs.txt"), "--per-need", "3"]
    assert needs_build(tmp_path, "--stage", "A_r", *needs) == 0
    assert needs_build(tmp_path, "--stage", "A_d", *needs) == 0
    n_d = len((tmp_path / "dataset" / "A_d.txt").read_text().splitlines())
    # every A_d article classified (A_f is built all the same), then 2 needs x 3 chunks: the
    # questions come from A_d, so whatever the verdicts the count is exact
    assert dry_run(tmp_path, capsys, *needs) == str(n_d + 6)
    assert needs_fake.calls == 0
    assert needs_build(tmp_path, *needs) == 0
    assert needs_fake.calls == n_d + 6
    assert dry_run(tmp_path, capsys, *needs) == "0"  # all answered: recency.jsonl, needs.jsonl
    assert needs_fake.calls == n_d + 6


def test_needs_dry_run_before_classification_spans_none_to_every_article(tmp_path, needs_fake,
                                                                         capsys):
    """Questions from A_f, not classified yet: every A_d article classified, then no article
    after the cutoff (no need asked) up to every one (each need asked about 3 chunks of all)."""
    (tmp_path / "needs.txt").write_text(NEEDS)
    needs = ["--needs", str(tmp_path / "needs.txt"), "--per-need", "3"]
    assert from_a_f(tmp_path, "--stage", "A_r", *needs) == 0
    assert from_a_f(tmp_path, "--stage", "A_d", *needs) == 0
    n_d = len((tmp_path / "dataset" / "A_d.txt").read_text().splitlines())
    before = listing(tmp_path)
    capsys.readouterr()
    assert from_a_f(tmp_path, "--dry-run", *needs) == 0
    assert listing(tmp_path) == before
    assert table(capsys.readouterr().out)["builder"][1] == f"{n_d}–{n_d + 6}"
    assert needs_fake.calls == 0
    # the fake says "after the cutoff" to every article
    assert from_a_f(tmp_path, *needs) == 0
    assert needs_fake.calls == n_d + 6


def from_a_f(tmp_path, *extra):
    """`needs_build` of tests/support/builds.py, with questions from A_f (the default)."""
    if not (tmp_path / "wiki.xml").exists():
        write_dump(tmp_path / "wiki.xml", article_pages(WIKIRAG / "articles.jsonl", 12))
    return main(["build", "--dump", str(tmp_path / "wiki.xml"), "--cutoff", CUTOFF, "--out",
                 str(tmp_path / "dataset"), *extra])


def test_control_dry_run_counts_the_control_questions_and_general_queries_make_none(
        tmp_path, traffic_dump, needs_fake, capsys):
    traffic = ["--control", "3", "--general", "4"]
    assert traffic_build(tmp_path, traffic_dump, "--stage", "A_r", *traffic) == 0
    assert traffic_build(tmp_path, traffic_dump, "--stage", "A_d", *traffic) == 0
    n_d = len((tmp_path / "dataset" / "A_d.txt").read_text().splitlines())
    before = listing(tmp_path)
    capsys.readouterr()
    assert traffic_build(tmp_path, traffic_dump, "--dry-run", *traffic) == 0
    assert listing(tmp_path) == before  # control.txt not chosen for good by a dry run
    # the classifier for every A_d article, a fresh question for none or all, 3 control ones
    assert table(capsys.readouterr().out)["builder"][1] == f"{n_d + 3}–{2 * n_d + 3}"
    assert needs_fake.calls == 0
    # the fake: "after" to every article
    assert traffic_build(tmp_path, traffic_dump, *traffic) == 0
    assert needs_fake.calls == 2 * n_d + 3
    capsys.readouterr()
    assert traffic_build(tmp_path, traffic_dump, "--dry-run", *traffic) == 0
    assert "builder" not in table(capsys.readouterr().out)  # all written: nothing left


def test_label_dry_run_counts_the_labeller_on_questions_to_write_and_written(
        tmp_path, needs_fake, capsys):
    assert needs_build(tmp_path, "--stage", "A_r") == 0
    assert needs_build(tmp_path, "--stage", "A_d") == 0
    n_d = len((tmp_path / "dataset" / "A_d.txt").read_text().splitlines())
    before = listing(tmp_path)
    capsys.readouterr()
    assert needs_build(tmp_path, "--dry-run", "--label") == 0
    assert listing(tmp_path) == before
    rows = table(capsys.readouterr().out)
    # classifier and question writer for every article, the labeller for every question
    assert (rows["builder"][1], rows["labeller"][1]) == (str(2 * n_d), str(n_d))
    assert needs_fake.calls == 0
    assert needs_build(tmp_path, "--stage", "A_f") == 0
    assert needs_build(tmp_path, "--stage", "questions") == 0  # questions without labels
    assert needs_fake.calls == 2 * n_d
    assert dry_run(tmp_path, capsys, "--label") == "0"  # no builder call left ...
    capsys.readouterr()
    assert needs_build(tmp_path, "--dry-run", "--label") == 0
    assert table(capsys.readouterr().out)["labeller"][1] == str(n_d)  # ... but the labels
    assert needs_build(tmp_path, "--label") == 0
    assert needs_fake.calls == 3 * n_d


def test_grounded_dry_run_counts_a_form_per_group_and_criterion(tmp_path, needs_fake, capsys):
    """The fake's default form ("x") is usable: one call per (group, criterion)."""
    example = write_example_dump(tmp_path / "example.xml")
    grounded = ["--dump", str(example), "--cutoff", "2025-12-31", "--out",
                str(tmp_path / "dataset"), "--style", "grounded", "--questions-from", "A_r",
                "--groups", "3", "--criteria", "short,long"]
    assert main(["build", *grounded, "--dry-run"]) == 2
    assert "build --stage A_r and --stage A_d first" in capsys.readouterr().err
    for stage in ("A_r", "A_d"):
        assert main(["build", *grounded, "--stage", stage]) == 0
    assert main(["build", *grounded, "--dry-run"]) == 2
    assert "build --stage facts first" in capsys.readouterr().err
    assert main(["build", *grounded, "--stage", "facts"]) == 0
    n_d = len((tmp_path / "dataset" / "A_d.txt").read_text().splitlines())
    before = listing(tmp_path)
    capsys.readouterr()
    assert main(["build", *grounded, "--dry-run"]) == 0
    assert listing(tmp_path) == before  # queries.jsonl not written by a dry run
    # the classifier for every A_d article (A_f is built all the same), 3 groups x 2 criteria
    assert table(capsys.readouterr().out)["builder"][1] == str(n_d + 6)
    assert needs_fake.calls == 0
    assert main(["build", *grounded]) == 0
    assert needs_fake.calls == n_d + 6
    assert main(["build", *grounded, "--dry-run"]) == 0
    assert "builder" not in table(capsys.readouterr().out)  # all written: nothing left


def test_statements_dry_run_brackets_the_calls_of_the_build(tmp_path, monkeypatch, capsys):
    """Every step (theme, statements, question, critique, the labeller's label) with the
    statements tests' scripted model, malformed replies and their retries included: the build's
    calls lie in the dry run's range (no statement and no article after the cutoff, to every
    article after it and every list a few items long)."""
    with FakeOpenAIServer(reply=statements_reply) as server:
        use_endpoint(monkeypatch, server.base_url, "sk-statements")
        wiki = write_dump(tmp_path / "wiki.xml", article_pages(WIKIRAG / "articles.jsonl", 6))
        for stage in ("A_r", "A_d"):
            assert statements_build(tmp_path, wiki, "--stage", stage) == 0
        before = listing(tmp_path)
        capsys.readouterr()
        assert statements_build(tmp_path, wiki, "--dry-run") == 0
        assert listing(tmp_path) == before
        rows = table(capsys.readouterr().out)
        assert server.calls == 0
        assert statements_build(tmp_path, wiki) == 0
    low, high = (sum(int(rows[role][1].split("–")[k]) for role in ("builder", "labeller"))
                 for k in (0, -1))
    assert low < server.calls <= high
