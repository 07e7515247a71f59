"""Sets dated by month (builders/dated.py): the month range as `--created` reads it, the windows
of its months, and A_r stratified by month from a wiki's creation log (a scripted source) and
from a dump (one reservoir a month); the funnel per month adds up."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from freshrag.builders.dated import (
    OUTSIDE_MONTH,
    OUTSIDE_RANGE,
    MonthError,
    MonthRange,
    SampleFiles,
    default_cutoff,
    month_funnel,
    parse_months,
    sample_dump_by_month,
    sample_wiki_by_month,
)
from freshrag.builders.sources.dump import DumpSource
from freshrag.builders.sources.pages import REDIRECT, BuildError, Page
from freshrag.cli.main import main
from freshrag.core.dates import utc_today
from freshrag.core.jsonl import read_jsonl
from tests.support.wikidump import dated_pages, write_dump

TEXT = "A long article about a place. " * 50  # more than 1,000 characters


def files(directory: Path) -> SampleFiles:
    """The sample files of a dataset directory, made."""
    directory.mkdir(parents=True, exist_ok=True)
    return SampleFiles(directory / "sample.jsonl", directory / "articles.jsonl",
                       directory / "sample.jsonl.partial")


def next_month() -> str:
    today = utc_today()
    return (today.replace(day=28) + timedelta(days=5)).strftime("%Y-%m")


def test_a_month_range_reads_start_and_end():
    months = parse_months("2023-11:2024-02")
    assert months.months() == ["2023-11", "2023-12", "2024-01", "2024-02"]
    assert parse_months("2024-05:2024-05").months() == ["2024-05"]
    assert default_cutoff(months).isoformat() == "2023-10-31"


@pytest.mark.parametrize("text, message", [
    pytest.param("2025-13:2024-01", "2025-13 is not a month", id="month-13"),
    pytest.param("2024-03:2024-01", "the end 2024-01 is before the start 2024-03", id="reversed"),
    pytest.param("2024-1:2024-02", "expected a month range written YYYY-MM:YYYY-MM", id="form"),
    pytest.param("2024-01", "expected a month range", id="one-month"),
    pytest.param("1989-12:1990-02", "1989-12 is before 1990-01", id="too-early"),
])
def test_a_bad_range_names_the_option(text, message):
    with pytest.raises(MonthError, match=re.escape(message)) as raised:
        parse_months(text)
    assert str(raised.value).startswith(f"--created {text!r}")


def test_a_month_in_the_future_is_refused():
    with pytest.raises(MonthError, match="is in the future"):
        parse_months(f"2024-01:{next_month()}")
    this_month = utc_today().strftime("%Y-%m")
    assert parse_months(f"{this_month}:{this_month}").months() == [this_month]


def test_a_window_starts_after_the_parents_newest_article():
    months = MonthRange("2024-02", "2024-03", after="2024-02-10T08:00:00Z")
    start, end = months.window("2024-02")
    assert start == datetime(2024, 2, 10, 8, 0, 1, tzinfo=timezone.utc)
    assert end == datetime(2024, 3, 1, tzinfo=timezone.utc)
    assert not months.holds("2024-02", "2024-02-10T08:00:00Z")
    assert months.holds("2024-02", "2024-02-10T08:00:01Z")
    assert months.window("2024-03")[0] == datetime(2024, 3, 1, tzinfo=timezone.utc)
    assert MonthRange("2024-12", "2024-12").window("2024-12")[1].year == 2025


@pytest.mark.parametrize("argv, message", [
    pytest.param(["--created", "2025-13:2024-01", "--per-month", "2"],
                 "--created '2025-13:2024-01': 2025-13 is not a month", id="bad-range"),
    pytest.param(["--created", "2024-01:2024-02", "--per-month", "0"],
                 "argument --per-month: expected a whole number from 1", id="per-month-0"),
    pytest.param(["--created", "2024-01:2024-02"], "--created needs --per-month N",
                 id="no-per-month"),
    pytest.param(["--per-month", "3"], "--per-month goes with --created", id="no-created"),
    pytest.param(["--created", "2024-01:2024-02", "--per-month", "2", "--n", "5"],
                 "replaces --n", id="with-n"),
    pytest.param(["--created", "2024-01:2024-02", "--per-month", "2", "--cutoff", "2024-03-01"],
                 "--cutoff 2024-03-01 is not before the last day of --created", id="late-cutoff"),
])
def test_bad_dated_options_are_one_line_errors(tmp_path, capsys, argv, message):
    try:
        code = main(["build", "--wiki-api", "http://127.0.0.1:9/api.php", "--out",
                     str(tmp_path / "set"), *argv])
    except SystemExit as exit:  # argparse's own refusal of a value
        code = exit.code
    error = capsys.readouterr().err.strip()
    assert code == 2 and message in error
    assert error.splitlines()[-1].startswith(("freshrag: error:", "usage:", "freshrag build:"))
    assert not (tmp_path / "set").exists()


class LoggedWiki:
    """A wiki's creation log and pages, scripted: `created_titles` answers from `log` (title ->
    logged moment), `fetch_titles` from `pages` (title -> Page as fetched today)."""

    random_order = True
    description = "http://wiki.test/api.php"

    def __init__(self, log: dict[str, str], pages: dict[str, Page]):
        self.log, self.pages, self.fetched = log, pages, []

    def created_titles(self, start: datetime, end: datetime) -> list[str]:
        return [title for title, stamp in self.log.items()
                if start <= datetime.fromisoformat(stamp.replace("Z", "+00:00")) < end]

    def fetch_titles(self, titles):
        for title in titles:
            self.fetched.append(title)
            yield self.pages[title]


def logged_wiki(per_month: dict[str, int]) -> LoggedWiki:
    log, pages = {}, {}
    for month, count in per_month.items():
        for i in range(count):
            title, stamp = f"Page {month} {i}", f"{month}-{i + 1:02d}T10:00:00Z"
            log[title], pages[title] = stamp, Page(title, TEXT, stamp, 1)
    return LoggedWiki(log, pages)


def test_the_log_gives_n_a_month_in_seeded_order(tmp_path):
    wiki = logged_wiki({"2024-01": 6, "2024-02": 6, "2024-03": 1})
    months = MonthRange("2024-01", "2024-03")
    kept = sample_wiki_by_month(wiki, files(tmp_path / "a"), months, 2, seed=0)
    by_month = Counter(row["month"] for row in read_jsonl(tmp_path / "a" / "articles.jsonl"))
    assert by_month == {"2024-01": 2, "2024-02": 2, "2024-03": 1}  # March has only one
    assert len(wiki.fetched) == 5  # nothing fetched beyond what a month needs
    again = sample_wiki_by_month(logged_wiki({"2024-01": 6, "2024-02": 6, "2024-03": 1}),
                                 files(tmp_path / "b"), months, 2, seed=0)
    assert again == kept
    others = [sample_wiki_by_month(logged_wiki({"2024-01": 6, "2024-02": 6, "2024-03": 1}),
                                   files(tmp_path / f"s{seed}"), months, 2, seed=seed)
              for seed in range(1, 4)]
    assert any(set(other) != set(kept) for other in others)


def test_a_logged_page_that_moved_or_became_a_redirect_is_discarded(tmp_path):
    wiki = logged_wiki({"2024-01": 3})
    moved, redirect = "Page 2024-01 0", "Page 2024-01 1"
    wiki.pages[moved] = Page(moved, TEXT, "2023-06-01T00:00:00Z", 1)  # first revision elsewhen
    wiki.pages[redirect] = Page(redirect, "", "2024-01-02T10:00:00Z", 1, discard=REDIRECT)
    out = tmp_path / "set"
    kept = sample_wiki_by_month(wiki, files(out), MonthRange("2024-01", "2024-01"), 3, seed=0)
    assert kept == ["Page 2024-01 2"]
    discards = {row["title"]: row["discard"] for row in read_jsonl(out / "sample.jsonl")}
    assert discards == {moved: OUTSIDE_MONTH, redirect: REDIRECT, "Page 2024-01 2": None}


class Killed(Exception):
    """The build stopped mid-way (a kill, a lost connection)."""


def test_a_stopped_month_sample_resumes_without_fetching_again(tmp_path):
    wiki = logged_wiki({"2024-01": 4, "2024-02": 4})
    months = MonthRange("2024-01", "2024-02")
    fetch = wiki.fetch_titles

    def stopping(titles):
        for page in fetch(titles):
            if len(wiki.fetched) == 3:
                raise Killed
            yield page

    wiki.fetch_titles = stopping
    with pytest.raises(Killed):
        sample_wiki_by_month(wiki, files(tmp_path / "set"), months, 2, seed=0)
    before = list(wiki.fetched)
    sample = tmp_path / "set" / "sample.jsonl"  # as if killed between the article and its line
    sample.write_text("".join(sample.read_text().splitlines(keepends=True)[:-1]))
    wiki.fetch_titles = fetch
    kept = sample_wiki_by_month(wiki, files(tmp_path / "set"), months, 2, seed=0)
    assert kept == sample_wiki_by_month(logged_wiki({"2024-01": 4, "2024-02": 4}),
                                        files(tmp_path / "whole"), months, 2, seed=0)
    assert len(kept) == len(set(kept)) == 4
    assert wiki.fetched[len(before):] == [t for t in wiki.fetched[len(before):]
                                          if t not in before[:2]]  # the kept are not asked again
    samples = [row["title"] for row in read_jsonl(tmp_path / "set" / "sample.jsonl")]
    assert len(samples) == len(set(samples)) == 4


def test_an_empty_creation_log_is_a_clear_error(tmp_path):
    with pytest.raises(BuildError, match="creation log names no main-namespace page created in "
                                         "2024-01:2024-02.*<logitem>"):
        sample_wiki_by_month(logged_wiki({"2023-05": 2}), files(tmp_path), MonthRange("2024-01",
                                                                              "2024-02"), 2, 0)


def dated_dump(path: Path) -> tuple[Path, dict[str, str]]:
    stamps = [f"2024-{month:02d}-{day:02d}T09:00:00Z" for month in (1, 2, 3)
              for day in (2, 9, 16, 23, 27)] + ["2023-12-30T00:00:00Z", "2024-04-02T00:00:00Z"]
    pages = dated_pages(stamps)
    write_dump(path, pages)
    return path, {page.title: page.revisions[0].timestamp for page in pages}


def test_a_dump_gives_one_seeded_reservoir_a_month(tmp_path):
    dump, created = dated_dump(tmp_path / "wiki.xml")
    months = MonthRange("2024-01", "2024-03")
    out = tmp_path / "set"
    kept = sample_dump_by_month(DumpSource(dump), files(out), months, 2, seed=0)
    assert Counter(created[title][:7] for title in kept) == {"2024-01": 2, "2024-02": 2,
                                                             "2024-03": 2}
    samples = list(read_jsonl(out / "sample.jsonl"))
    assert Counter(row["discard"] for row in samples) == {None: 6, "not_sampled": 9,
                                                          OUTSIDE_RANGE: 2}
    assert all(row["month"] == created[row["title"]][:7] for row in samples
               if row["discard"] != OUTSIDE_RANGE)
    funnel = month_funnel(samples, read_jsonl(out / "articles.jsonl"), [], {"n_r": set(kept)})
    assert {month: counts["sampled"] for month, counts in funnel.items()} == {
        "2024-01": 5, "2024-02": 5, "2024-03": 5}
    assert sum(counts["n_r"] for counts in funnel.values()) == len(kept)
    again = tmp_path / "again"
    assert sample_dump_by_month(DumpSource(dump), files(again), months, 2, seed=0) == kept
    seeds = []
    for seed in range(1, 4):
        seeds.append(sample_dump_by_month(DumpSource(dump), files(tmp_path / f"s{seed}"), months, 2,
                                          seed))
    assert any(set(other) != set(kept) for other in seeds)


def test_a_dated_build_from_a_dump_then_its_next_version(tmp_path, fake, capsys):
    dump, created = dated_dump(tmp_path / "wiki.xml")
    first = tmp_path / "sets" / "monthly"
    assert main(["build", "--dump", str(dump), "--created", "2024-01:2024-03", "--per-month",
                 "2", "--out", str(first)]) == 0
    manifest = json.loads((first / "manifest.json").read_text())
    questions = list(read_jsonl(first / "questions.jsonl"))
    assert Counter(q["month"] for q in questions) == {"2024-01": 2, "2024-02": 2, "2024-03": 2}
    assert all(q["created"] == created[q["title"]] for q in questions)
    months = manifest["funnel"]["months"]
    assert sum(m["sampled"] for m in months.values()) + manifest["funnel"]["discarded_r"][
        OUTSIDE_RANGE] == manifest["funnel"]["sampled"]
    printed = capsys.readouterr().out  # the printed funnel shows a line per month
    assert "by creation month:" in printed and "    2024-02: sampled 5, n r 2" in printed

    # --since with a dump takes the newer dump; the next version holds what came after
    newer = [*dated_pages([f"2024-04-{day:02d}T09:00:00Z" for day in (5, 6)], first_id=100)]
    newer_dump = write_dump(tmp_path / "newer.xml", newer)
    code = main(["build", "--since", str(first)])
    assert code == 2 and "give the newer dump with --dump" in capsys.readouterr().err
    old_dump = write_dump(tmp_path / "old.xml", dated_pages(["2024-02-01T00:00:00Z"], 300))
    code = main(["build", "--since", str(first), "--dump", str(old_dump)])  # nothing newer
    assert code == 2 and "no article of it was created in 2024-03:" in capsys.readouterr().err
    assert main(["build", "--since", str(first), "--dump", str(newer_dump),
                 "--created", "2024-01:2024-04"]) == 0
    second = tmp_path / "sets" / "monthly-v2"
    assert {row["title"] for row in read_jsonl(second / "articles.jsonl")} == {
        page.title for page in newer}
    version = json.loads((second / "manifest.json").read_text())["version"]
    assert version["number"] == 2 and version["parent"]["id"] == manifest["version"]["id"]


def test_a_since_build_refuses_options_that_contradict_its_parent(tmp_path, fake, capsys):
    dump, _ = dated_dump(tmp_path / "wiki.xml")
    first = tmp_path / "monthly"
    assert main(["build", "--dump", str(dump), "--created", "2024-01:2024-03", "--per-month",
                 "1", "--out", str(first)]) == 0
    capsys.readouterr()
    for option in (["--per-month", "3"], ["--seed", "7"], ["--cutoff", "2020-01-01"],
                   ["--style", "recent"]):
        assert main(["build", "--since", str(first), "--dump", str(dump), *option]) == 2
        error = capsys.readouterr().err
        assert f"{option[0]} contradict the settings" in error, error
    assert not (tmp_path / "monthly-v2").exists()
