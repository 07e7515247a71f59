"""What a build decides before any stage runs (builders/build.py): the options that do not go
together, the labels of the statements style, which stages run, and the source a resumed facts
stage reads. Each refusal is a user error: `freshrag build` prints it as one line, exit 2."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest

from freshrag.builders.build import (
    Source,
    check_options,
    label_spec,
    labelling,
    stages_to_run,
)
from freshrag.builders.sources.pages import BuildError
from freshrag.builders.stages import STAGES, BuildConfig
from freshrag.builders.styles.statements import parse_label_spec
from freshrag.cli.main import main
from freshrag.core.manifest import write_manifest


@pytest.mark.parametrize("source, needs, per_need, style, per_article, refusal", [
    pytest.param(Source(dump=("a.xml",), wiki_api="https://w.test/api.php"), None, None,
                 "creative", 1, "give either --dump or --wiki-api, not both", id="dump-and-wiki"),
    pytest.param(Source(), None, 3, "creative", 1, "--per-need caps the questions of --needs",
                 id="per-need-alone"),
    pytest.param(Source(), Path("needs.txt"), None, "statements", 1,
                 "it takes no --style or --questions-per-article", id="needs-and-style"),
    pytest.param(Source(), Path("needs.txt"), None, "creative", 2,
                 "it takes no --style or --questions-per-article", id="needs-and-more-questions"),
    pytest.param(Source(stub_dump=("stub.xml",)), None, None, "creative", 1,
                 "--stub-dump gives creation dates to the pages of a --dump", id="stub-alone"),
])
def test_options_that_do_not_go_together_are_refused(source, needs, per_need, style, per_article,
                                                     refusal):
    with pytest.raises(BuildError, match=re.escape(refusal)):
        check_options(source, needs, per_need, style, per_article)


def test_options_that_go_together_pass():
    check_options(Source(dump=("a.xml",), stub_dump=("stub.xml",)), Path("needs.txt"), 2,
                  "creative", 1)


def test_the_statements_style_labels_equal_shares_unless_asked():
    assert label_spec("statements", None, ()).text() == parse_label_spec(
        "fact_single=0.25,summary=0.25,reasoning=0.25,unanswerable=0.25").text()
    asked = parse_label_spec("summary=1")
    assert label_spec("statements", asked, ()) is asked
    assert label_spec("creative", None, ()) is None
    with pytest.raises(BuildError, match="go with --style statements"):
        label_spec("creative", None, (("specificity", 3),))
    assert labelling(False, "statements") and labelling(True, "creative")
    assert not labelling(False, "grounded")


def config(out: Path, n: int | None = None) -> BuildConfig:
    return BuildConfig(out=out, cutoff=date(2021, 9, 30), n=n)


def test_every_stage_runs_by_default_and_labels_only_when_labelling(tmp_path):
    dump = Source(dump=("a.xml",))
    assert stages_to_run(config(tmp_path), None, True, dump) == STAGES
    assert "labels" not in stages_to_run(config(tmp_path), None, False, dump)
    assert stages_to_run(config(tmp_path), "A_d", False, dump) == ("A_d",)
    with pytest.raises(BuildError, match=re.escape("--stage labels needs --label")):
        stages_to_run(config(tmp_path), "labels", False, dump)


def test_sampling_a_wiki_needs_n_until_a_r_has_been_sampled(tmp_path):
    with pytest.raises(BuildError, match="--n is required when sampling a wiki"):
        stages_to_run(config(tmp_path), None, False, Source())
    assert stages_to_run(config(tmp_path, n=5), None, False, Source())[0] == "A_r"
    (tmp_path / "A_r.txt").write_text("Velmora\n")
    assert stages_to_run(config(tmp_path), None, False, Source())[0] == "A_r"


def test_a_resumed_facts_stage_reads_the_source_a_r_was_sampled_from(tmp_path):
    first, other = tmp_path / "first.xml", tmp_path / "other.xml"
    for dump in (first, other):
        dump.write_text("<mediawiki/>")
    out = tmp_path / "dataset"
    out.mkdir()
    write_manifest(out, {"source": str(first)})
    assert Source().recorded(out).description == str(first)
    with pytest.raises(BuildError, match=f"sampled from {re.escape(str(first))}, not"):
        Source(dump=(str(other),)).recorded(out)
    write_manifest(out, {"source": f"{first}, {other}"})
    with pytest.raises(BuildError, match="give the same --dump"):
        Source().recorded(out)


def test_a_refusal_is_one_error_line_and_exit_2(tmp_path, capsys):
    status = main(["build", "--out", str(tmp_path / "d"), "--cutoff", "2021-09-30",
                   "--dump", "a.xml", "--wiki-api", "https://w.test/api.php"])
    err = capsys.readouterr().err
    assert status == 2
    assert err == "freshrag: error: give either --dump or --wiki-api, not both\n"
    assert not (tmp_path / "d").exists()


class Opened:
    """Stands in for MediaWikiSource: records the wiki it would sample, contacts none."""

    def __init__(self, api_url: str, **options):
        self.description, self.options = api_url, options


@pytest.mark.parametrize("table, given, sampled", [
    pytest.param("", None, "https://en.wikipedia.org/w/api.php", id="wikipedia-by-default"),
    pytest.param("wiki_api = 'http://127.0.0.1:8/w/api.php'", None,
                 "http://127.0.0.1:8/w/api.php", id="the-config-files"),
    pytest.param("wiki_api = 'http://127.0.0.1:8/w/api.php'", "https://w.test/api.php",
                 "https://w.test/api.php", id="--wiki-api-wins"),
])
def test_the_wiki_sampled_is_wiki_api_else_the_config_files_else_wikipedia(
        tmp_path, monkeypatch, table, given, sampled):
    monkeypatch.setattr("freshrag.builders.sources.mediawiki.MediaWikiSource", Opened)
    config = tmp_path / "freshrag.toml"
    config.write_text(f"[build]\n{table}\n", encoding="utf-8")
    assert Source(wiki_api=given, config_file=config).open(tmp_path).description == sampled
    dump = tmp_path / "a.xml"
    dump.write_text("<mediawiki/>")
    assert Source(dump=(str(dump),), config_file=config).open(tmp_path).description == str(dump)


@pytest.mark.parametrize("value, problem", [
    pytest.param("'ftp://w.test/api.php'", "it does not start with http:// or https://",
                 id="not-http"),
    pytest.param("3", "3 is no text", id="a-number"),
])
def test_a_bad_wiki_in_the_config_file_is_refused_naming_it(tmp_path, capsys, value, problem):
    (tmp_path / "freshrag.toml").write_text(f"[build]\nwiki_api = {value}\n", encoding="utf-8")
    assert main(["build", "--config", str(tmp_path / "freshrag.toml"), "--n", "5",
                 "--cutoff", "2021-09-30", "--out", str(tmp_path / "d")]) == 2
    assert capsys.readouterr().err == (f"freshrag: error: {tmp_path / 'freshrag.toml'}: [build] "
                                       f"wiki_api: {problem}\n")


def test_each_kind_of_source_says_which_options_select_it(tmp_path):
    from freshrag.builders.sources import SOURCES

    one, two = tmp_path / "a1.xml", tmp_path / "a2.xml"
    for dump in (one, two):
        dump.write_text("<mediawiki/>")
    chosen = {name: next(kind.name for kind in SOURCES.values() if kind.recognises(given))
              for name, given in [("wiki", Source()), ("one", Source(dump=(str(one),))),
                                  ("glob", Source(dump=(str(tmp_path / "a*.xml"),))),
                                  ("stubs", Source(dump=(str(one),), stub_dump=(str(two),)))]}
    assert chosen == {"wiki": "mediawiki", "one": "dump", "glob": "split-dump",
                      "stubs": "split-dump"}
    assert [kind.name for kind in SOURCES.values() if kind.reopens("https://w.test/api.php")] == [
        "mediawiki"]
