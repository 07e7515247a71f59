"""Run directories: garbage and torn lines in samples.jsonl, rows of the wrong shape, manifests
from a newer freshrag or of another kind, a read-only directory, a full disk. `report`, `run`
(resuming) and `import-legacy` refuse each naming the file (and line), exit status 2, before any
call, leaving every file byte for byte as it was; a row of the wrong shape (an older freshrag's)
is skipped with a warning naming file, line and field, and the resume asks its pair again; a full
disk keeps every row written before it."""

import json
import pickle
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freshrag.builders.sources.export import DumpPage, Revision, write_dump
from freshrag.core.row_check import REQUIRED, SAMPLE_FIELDS
from freshrag.core.samples import read_samples
from tests.fuzz.support import (
    assert_no_calls,
    assert_refused,
    budget,
    full_disk,
    invoke,
    read_only,
    scratch,
    snapshot,
    use_fake,
)
from tests.support.datasets import write_dataset

SYSTEMS = "baseline,oracle"


@pytest.fixture(scope="module")
def finished(server, tmp_path_factory):
    """A finished run of 3 questions x 2 systems on the fake server, and its dataset."""
    base = tmp_path_factory.mktemp("finished")
    questions, articles = write_dataset(base / "data")
    with pytest.MonkeyPatch.context() as mp:
        use_fake(server, mp)
        result = invoke("run", "--questions", questions, "--articles", articles,
                        "--out", base / "run", "--systems", SYSTEMS, "--no-cache")
    assert result.status == 0, result
    return base


def copy_of(finished: Path, tmp: Path) -> Path:
    shutil.copytree(finished, tmp / "copy")
    return tmp / "copy"


def every_command_refuses(base: Path, server, *names) -> None:
    """report, run (a resume) and import-legacy on base/run: each refused naming `names`, no
    call, the run directory unchanged byte for byte."""
    run_dir = base / "run"
    before = snapshot(run_dir)
    legacy = base / "paper.pkl"
    legacy.write_bytes(pickle.dumps([LEGACY_ROW]))
    for argv in (["report", run_dir, "--out", base / "report"],
                 ["run", "--questions", base / "data" / "questions.jsonl", "--articles",
                  base / "data" / "articles.jsonl", "--out", run_dir, "--systems", SYSTEMS]):
        assert_refused(invoke(*argv), *names)
        assert snapshot(run_dir) == before, argv[0]
    # import-legacy refuses a run's directory for what it is, before reading its rows
    assert_refused(invoke("import-legacy", legacy, "--dataset", "A_f", "--system", "naive",
                          "--out", run_dir), str(run_dir))
    assert snapshot(run_dir) == before, "import-legacy"
    assert not (base / "report").exists()
    assert_no_calls(server)


def every_reader_skips(base: Path, line: int, said: str) -> None:
    """report and run (a resume) on base/run: the row at `line` skipped with one warning naming
    the file, the line and `said`, every other row kept; the resume asks that pair again."""
    run_dir = base / "run"
    samples = run_dir / "samples.jsonl"
    warning = f"freshrag: warning: {samples}:{line}: skipped"
    reported = invoke("report", run_dir, "--out", base / "report")
    resumed = invoke("run", "--questions", base / "data" / "questions.jsonl", "--articles",
                     base / "data" / "articles.jsonl", "--out", run_dir, "--systems", SYSTEMS)
    for result in (reported, resumed):
        assert result.status == 0 and "Traceback" not in result.err, result
        assert [text for text in result.err.splitlines()
                if text.startswith(warning) and said in text], result.err
    assert len(samples.read_text().splitlines()) == 7  # the pair answered again, appended
    assert [row["status"] for row in read_samples(samples)] == ["ok"] * 6


LEGACY_ROW = {"title": "Town 0", "question": "?", "answer": "a", "n_input_tokens": 1,
              "n_output_tokens": 1}


def garbage_lines():
    text = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=20).filter(
        lambda t: t.strip() and not any(c in t for c in "\n\r\x00\ufeff") and not _is_json(t))
    return st.one_of(
        st.binary(max_size=10).map(lambda b: b"\x80" + b.replace(b"\n", b"").replace(b"\x00", b""))
        .map(lambda b: (b, "not UTF-8")),  # 0x80 starts no character (nor a byte-order mark)
        st.binary(max_size=10).map(lambda b: (b"\x00" + b).replace(b"\n", b"")).map(
            lambda b: (b, "NUL byte")),
        text.map(lambda t: (t.encode(), "not valid JSON")),
        st.one_of(st.integers(), st.text(max_size=4), st.lists(st.integers(), max_size=3),
                  st.none(), st.booleans()).map(lambda v: (json.dumps(v).encode(),
                                                           "expected a JSON object")))


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


@settings(max_examples=budget(40))
@given(bad=garbage_lines(), at=st.integers(0, 6))
def test_a_garbage_line_in_samples_is_named_by_every_reader(server, finished, bad, at):
    line, message = bad
    with scratch(server) as (tmp, _):
        base = copy_of(finished, tmp)
        samples = base / "run" / "samples.jsonl"
        lines = samples.read_bytes().splitlines(keepends=True)
        samples.write_bytes(b"".join(lines[:at] + [line + b"\n"] + lines[at:]))
        every_command_refuses(base, server, f"{samples}:{at + 1}:", message)


WRONG = st.one_of(st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=3), st.none(),
                  st.booleans(), st.lists(st.integers(), max_size=2))
OPTIONAL = sorted(set(SAMPLE_FIELDS) - set(REQUIRED))


def allowed(field: str, value) -> bool:
    """Whether `value` in `field` still makes a row the readers can use (those are skipped)."""
    types = SAMPLE_FIELDS[field]
    ok_type = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    if field == "status":
        return value in ("ok", "failed")
    if field == "retrievals":  # null: a system outside freshrag did not say
        return ok_type and (value is None or value >= 0)
    if field == "epoch":  # null: a run of one epoch
        return ok_type and (value is None or value >= 1)
    if field == "calls":
        return value == []
    return ok_type


@settings(max_examples=budget(80))
@given(field=st.sampled_from(sorted(SAMPLE_FIELDS)), value=WRONG | st.just("<deleted>"),
       row=st.integers(0, 5))
def test_a_row_with_a_field_of_the_wrong_shape_is_skipped_naming_line_and_field(server, finished,
                                                                               field, value, row):
    if value != "<deleted>" and allowed(field, value):
        return
    with scratch(server) as (tmp, _):
        base = copy_of(finished, tmp)
        samples = base / "run" / "samples.jsonl"
        rows = [json.loads(line) for line in samples.read_text().splitlines()]
        if value == "<deleted>":
            rows[row].pop(field, None)  # an optional field a run may not write (epoch)
        else:
            rows[row][field] = value
        samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
        if value == "<deleted>" and field in OPTIONAL:
            assert len(read_samples(samples)) == 6  # rows made by hand may lack it
            return
        every_reader_skips(base, row + 1, field)


@pytest.mark.parametrize("field, value, message", [
    pytest.param("usage", {"answer": {"input": -1, "output": 2}}, "usage of 'answer'", id="count"),
    pytest.param("usage", {"answer": 5}, "usage of 'answer'", id="usage-not-object"),
    pytest.param("grade", {"truthfulness": None, "relevance": 3, "unscored_reason": None},
                 "grade 'truthfulness' must be a number from 1 to 5", id="scored-without-score"),
    pytest.param("grade", {"truthfulness": 1e999, "relevance": 3, "unscored_reason": None},
                 "grade 'truthfulness'", id="infinite"),
    pytest.param("grade", {"truthfulness": 1e308, "relevance": 3, "unscored_reason": None},
                 "grade 'truthfulness' must be a number from 1 to 5 (or null when unscored), got 1e+308",
                 id="out-of-the-scale"),
    pytest.param("grade", {"truthfulness": 4, "relevance": 0, "unscored_reason": None},
                 "(or null when unscored), got 0", id="below-the-scale"),
    pytest.param("grade", {"truthfulness": 1, "relevance": 3, "unscored_reason": 7},
                 "grade must hold unscored_reason", id="reason-not-text"),
    pytest.param("details", {"retrieved": ["Town 0"]}, "details.retrieved", id="titles-bare"),
    pytest.param("details", {"decision": 1}, "details.decision", id="decision"),
    pytest.param("details", {"unknown": 5}, "details.unknown must be null or a list of field names",
                 id="unknown-a-number"),
    pytest.param("details", {"p_retrieve": "high"}, "details.p_retrieve must be a number",
                 id="sweep-score-text"),
    pytest.param("calls", [{"model": "m"}], "calls must be", id="call-without-role"),
    pytest.param("steps", [{"kind": "answer"}, {"kind": "search", "query": 3}],
                 "steps[1].query must be text or null", id="step-query"),
    pytest.param("models", {"answer": 3}, "field 'models'", id="models"),
    pytest.param("question_id", 12, "field 'question_id' must be text", id="id-number"),
])
def test_a_row_with_a_nested_value_of_the_wrong_shape_is_skipped(server, finished, field, value,
                                                                 message):
    with scratch(server) as (tmp, _):
        base = copy_of(finished, tmp)
        samples = base / "run" / "samples.jsonl"
        rows = [json.loads(line) for line in samples.read_text().splitlines()]
        rows[3][field] = value
        samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
        every_reader_skips(base, 4, message)


@settings(max_examples=budget(20))
@given(version=st.integers(2, 10**12) | st.text(max_size=3) | st.floats() | st.integers(-5, 0)
       | st.lists(st.integers(), max_size=1) | st.booleans())
def test_a_manifest_from_a_newer_freshrag_is_refused_by_every_command(server, finished, version):
    with scratch(server) as (tmp, _):
        base = copy_of(finished, tmp)
        path = base / "run" / "manifest.json"
        manifest = json.loads(path.read_text())
        path.write_text(json.dumps({**manifest, "format_version": version}))
        newer = isinstance(version, int) and not isinstance(version, bool) and version >= 2
        every_command_refuses(base, server, path, "written by a newer freshrag" if newer
                              else "format_version must be a whole number >= 1")


def _json_object(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data.decode("utf-8-sig")), dict)
    except (ValueError, RecursionError):
        return False


@settings(max_examples=budget(20))
@given(data=st.one_of(st.binary(min_size=1, max_size=12),
                      st.one_of(st.integers(), st.lists(st.integers(), max_size=2), st.none(),
                                st.text(max_size=4)).map(lambda v: json.dumps(v).encode()),
                      st.just(b'{"dataset": [1]}')).filter(lambda d: not _json_object(d)
                                                             or d == b'{"dataset": [1]}'))
def test_a_garbage_manifest_is_refused(server, finished, data):
    with scratch(server) as (tmp, _):
        base = copy_of(finished, tmp)
        path = base / "run" / "manifest.json"
        path.write_bytes(data)
        every_command_refuses(base, server, path)


def test_a_run_into_a_directory_of_imported_rows_is_refused(server, finished, tmp_path):
    """A directory import-legacy wrote has no dataset hashes: run refuses it instead of failing
    on the missing key, and writes nothing."""
    with scratch(server) as (tmp, _):
        base = copy_of(finished, tmp)
        legacy = tmp / "paper.pkl"
        legacy.write_bytes(pickle.dumps([LEGACY_ROW]))
        assert invoke("import-legacy", legacy, "--dataset", "A_f", "--system", "naive",
                      "--out", tmp / "imported").status == 0
        before = snapshot(tmp / "imported")
        result = invoke("run", "--questions", base / "data" / "questions.jsonl", "--articles",
                        base / "data" / "articles.jsonl", "--out", tmp / "imported")
        assert_refused(result, tmp / "imported", "holds runs imported by `freshrag import-legacy`")
        assert snapshot(tmp / "imported") == before
        assert_no_calls(server)


@settings(max_examples=budget(20))
@given(cut=st.integers(1, 300))
def test_a_torn_last_row_is_ignored_by_the_readers(finished, cut):
    with scratch() as (tmp, _):
        base = copy_of(finished, tmp)
        samples = base / "run" / "samples.jsonl"
        data = samples.read_bytes()
        last = data.rstrip(b"\n").rfind(b"\n") + 1
        samples.write_bytes(data[:last + min(cut, len(data) - last - 2)])
        rows = read_samples(samples)
        assert len(rows) == 5 and [json.dumps(r) for r in rows] == [
            json.dumps(json.loads(line)) for line in data[:last].splitlines()]


def test_report_on_a_torn_run_reports_the_whole_rows(finished):
    with scratch() as (tmp, _):
        base = copy_of(finished, tmp)
        samples = base / "run" / "samples.jsonl"
        data = samples.read_bytes()
        samples.write_bytes(data[:-40])
        result = invoke("report", base / "run", "--format", "json", "--out", tmp / "r")
        assert result.status == 0 and "Traceback" not in result.err
        assert "ignoring an unfinished last row" in result.err
        assert sum(row["n"] for row in json.loads(result.out)["rows"]) == 5


@pytest.mark.parametrize("command", ["run-new", "run-resume", "report", "import-legacy", "build"])
def test_a_read_only_directory_is_named_and_left_as_it_was(server, finished, command):
    with scratch(server) as (tmp, _):
        base = copy_of(finished, tmp)
        data = base / "data"
        legacy = tmp / "paper.pkl"
        legacy.write_bytes(pickle.dumps([LEGACY_ROW]))
        write_dump(tmp / "wiki.xml", [DumpPage(1, "Town 0", [Revision(1, "2024-01-01T00:00:00Z",
                                                                      "Town 0 has bridges. " * 80)])])
        run = ["run", "--questions", data / "questions.jsonl", "--articles", data / "articles.jsonl",
               "--systems", SYSTEMS, "--no-cache"]
        argv = {"run-new": [*run, "--out", base / "new"], "run-resume": [*run, "--out", base / "run"],
                "report": ["report", base / "run"],
                "import-legacy": ["import-legacy", legacy, "--dataset", "A_f", "--system", "naive",
                                  "--out", base / "run"],
                "build": ["build", "--dump", tmp / "wiki.xml", "--cutoff", "2020-01-01",
                          "--out", base / "built"]}[command]
        before = snapshot(base)
        with read_only(base):
            result = invoke(*argv)
        assert_refused(result, base, "choose a directory you can write to")
        assert snapshot(base) == before
        assert_no_calls(server)


@settings(max_examples=budget(12))
@given(room=st.integers(0, 11_000))
def test_a_full_disk_stops_the_run_keeping_every_row_written(server, room):
    with scratch(server) as (tmp, _):
        questions, articles = write_dataset(tmp / "data")
        argv = ["run", "--questions", questions, "--articles", articles, "--out", tmp / "run",
                "--systems", SYSTEMS, "--concurrency", "1", "--no-cache"]
        with full_disk(room):
            result = invoke(*argv)
        samples = tmp / "run" / "samples.jsonl"
        written = samples.read_bytes()
        if result.status == 0:  # all of it fitted
            assert len(written) <= room
            return
        assert_refused(result, samples, "No space left on device", "what was written before is kept")
        whole = written[:written.rfind(b"\n") + 1]
        assert len(written) == room  # it wrote right up to the end of the space
        assert invoke(*argv).status == 0  # space freed: the same command resumes
        after = samples.read_bytes()
        assert after.startswith(whole)  # the rows written before are kept as they were
        rows = read_samples(samples)
        assert sorted((r["question_id"], r["system"]) for r in rows) == sorted(
            (f"q{i:05d}", s) for i in range(1, 4) for s in SYSTEMS.split(","))
        assert len(after.splitlines()) == 6  # each pair once
