"""Versions of a dataset (builders/versions.py): the id changes with any question, article or
setting and with nothing else; what a --since build needs of its parent; the default name of the
next version; `freshrag datasets` in lineage order; a run names the version it ran on."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from freshrag.builders.sources.pages import BuildError
from freshrag.builders.versions import (
    find_datasets,
    next_out,
    parent_of,
    version_id,
    version_record,
)
from freshrag.cli.main import main
from freshrag.core.dataset import DatasetError, load_dataset_dir
from freshrag.core.manifest import write_manifest

SETTINGS = {"cutoff": "2023-12-31", "seed": 0, "created": "2024-01:2024-02", "per_month": 2}


def write_set(directory: Path, titles=("Alpha", "Beta"), created=("2024-01-05T00:00:00Z",
                                                                "2024-02-07T00:00:00Z"),
              question="What is {}?") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "articles.jsonl").write_text("".join(
        json.dumps({"title": t, "content": f"{t} is a place.", "created": c,
                    "month": c[:7]}) + "\n" for t, c in zip(titles, created)))
    (directory / "questions.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "title": t, "question": question.format(t),
                    "created": c, "month": c[:7]}) + "\n"
        for i, (t, c) in enumerate(zip(titles, created))))
    return directory


def versioned(directory: Path, parent: dict | None = None, **kwargs) -> dict:
    write_set(directory, **kwargs)
    version = version_record(directory, SETTINGS, parent)
    write_manifest(directory, {"settings": SETTINGS, "version": version,
                               "source": "http://wiki.test/api.php"})
    return version


def test_the_id_is_stable_and_changes_with_a_question_an_article_or_a_setting(tmp_path):
    first = version_id(write_set(tmp_path / "a"), SETTINGS)
    assert re.fullmatch(r"[0-9a-f]{12}", first)
    assert version_id(write_set(tmp_path / "a"), SETTINGS) == first  # written again, the same
    assert version_id(write_set(tmp_path / "b"), SETTINGS) == first  # where it lies: no matter
    assert version_id(write_set(tmp_path / "c", question="Where is {}?"), SETTINGS) != first
    assert version_id(write_set(tmp_path / "d", titles=("Alpha", "Gamma")), SETTINGS) != first
    assert version_id(write_set(tmp_path / "e"), {**SETTINGS, "seed": 1}) != first


def test_a_record_holds_number_parent_and_creation_range(tmp_path):
    version = versioned(tmp_path / "wiki")
    assert version["number"] == 1 and version["parent"] is None
    assert version["created"] == {"first": "2024-01-05T00:00:00Z", "last": "2024-02-07T00:00:00Z"}
    settings, parent = parent_of(tmp_path / "wiki")
    assert settings == SETTINGS and parent["newest"] == "2024-02-07T00:00:00Z"
    child = versioned(tmp_path / "wiki-v2", parent, titles=("Delta",),
                      created=("2024-03-01T00:00:00Z",))
    assert child["number"] == 2
    assert child["parent"] == {"path": str(tmp_path / "wiki"), "id": version["id"]}
    assert version_record(tmp_path / "nothing", SETTINGS, None) is None


def test_the_next_version_is_a_sibling_named_for_its_number(tmp_path):
    assert next_out(tmp_path / "wiki", 1) == tmp_path / "wiki-v2"
    assert next_out(tmp_path / "wiki-v2", 2) == tmp_path / "wiki-v3"
    assert next_out(tmp_path / "wiki-v9", 9) == tmp_path / "wiki-v10"


@pytest.mark.parametrize("manifest, message", [
    pytest.param(None, "not a dataset directory (no manifest.json)", id="no-manifest"),
    pytest.param({"settings": SETTINGS}, "records no version", id="no-version"),
    pytest.param({"settings": SETTINGS, "version": {"id": "abc", "number": 1,
                                                    "created": {"first": None, "last": None}}},
                 "none of its articles has a creation date", id="no-dates"),
    pytest.param({"settings": {"cutoff": "2021-09-30"}, "version": {
        "id": "abc", "number": 1, "created": {"last": "2024-01-01T00:00:00Z"}}},
        "not a set dated by month", id="not-dated"),
])
def test_a_since_parent_must_have_a_version_and_dated_articles(tmp_path, manifest, message):
    write_set(tmp_path / "set")
    if manifest is not None:
        write_manifest(tmp_path / "set", manifest)
    with pytest.raises(BuildError, match=re.escape(message)):
        parent_of(tmp_path / "set")
    assert main(["build", "--since", str(tmp_path / "set")]) == 2


def test_datasets_lists_versions_in_lineage_order(tmp_path, capsys):
    root = tmp_path / "sets"
    first = versioned(root / "b-wiki")
    _, parent = parent_of(root / "b-wiki")
    second = versioned(root / "a-later" / "wiki-v2", parent, titles=("Delta",),
                       created=("2024-03-01T00:00:00Z",))
    write_set(root / "old")  # a set from before versions
    (root / "notes").mkdir()  # not a dataset
    rows = find_datasets(root)
    # the child lies first in path order, but comes after its parent
    assert [(row["path"], row["number"]) for row in rows] == [
        ("b-wiki", 1), ("a-later/wiki-v2", 2), ("old", None)]
    assert rows[0]["id"] == first["id"] and rows[1]["parent"]["id"] == first["id"]
    assert [row["articles"] for row in rows] == [2, 1, 2]
    assert rows[1]["created"] == second["created"]
    assert rows[2]["created"]["last"] == "2024-02-07T00:00:00Z"  # read from the articles

    assert main(["datasets", str(root), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(rows))
    assert main(["datasets", str(root)]) == 0
    table = capsys.readouterr().out
    assert f"v2 {second['id']}" in table and first["id"] in table and "none" in table
    assert main(["datasets", str(tmp_path / "absent")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_a_versioned_set_loads_with_its_number_in_its_name(tmp_path):
    version = versioned(tmp_path / "wiki")
    dataset = load_dataset_dir(tmp_path / "wiki")
    assert dataset.name == "wiki v1" and dataset.version == version
    plain = load_dataset_dir(write_set(tmp_path / "plain"))
    assert plain.name == "plain" and plain.version is None


@pytest.mark.parametrize("row, message", [
    pytest.param({"month": "2024-13"}, "field 'month' must be YYYY-MM or null", id="bad-month"),
    pytest.param({"month": "2024-02"}, "field 'month' is 2024-02, but 'created'",
                 id="wrong-month"),
    pytest.param({"created": "yesterday"}, "field 'created'", id="bad-created"),
])
def test_a_question_with_a_bad_date_names_its_line(tmp_path, row, message):
    directory = write_set(tmp_path / "set")
    lines = (directory / "questions.jsonl").read_text().splitlines()
    lines[1] = json.dumps({**json.loads(lines[0]), "id": "q9", **row})
    (directory / "questions.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=re.escape(f"questions.jsonl:2: {message}")):
        load_dataset_dir(directory)


def test_runs_on_two_versions_are_two_rows_of_the_report(tmp_path, fake, capsys):
    first = versioned(tmp_path / "wiki")
    _, parent = parent_of(tmp_path / "wiki")
    second = versioned(tmp_path / "wiki-v2", parent, titles=("Delta",),
                       created=("2024-03-01T00:00:00Z",))
    runs = []
    for name, version in (("wiki", first), ("wiki-v2", second)):
        out = tmp_path / "runs" / name
        assert main(["run", "--dataset", str(tmp_path / name), "--systems", "baseline",
                     "--no-probe", "--out", str(out)]) == 0
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["dataset"]["version"] == version
        label = f"{name.removesuffix('-v2')} v{version['number']}"
        rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
        assert {row["dataset"] for row in rows} == {label}
        runs.append(str(out))
    capsys.readouterr()
    assert main(["report", *runs, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    text = json.dumps(report)
    assert "wiki v1" in text and "wiki v2" in text


def test_a_versioned_sets_default_run_directory_has_no_space(tmp_path, fake, monkeypatch):
    versioned(tmp_path / "wiki")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--dataset", "wiki", "--systems", "baseline", "--no-probe"]) == 0
    assert (tmp_path / "results" / "wiki-v1" / "samples.jsonl").is_file()
    assert not list((tmp_path / "results").glob("* *"))
