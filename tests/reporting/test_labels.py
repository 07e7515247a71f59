"""The human labels file (harness/reporting/labels.py, docs/reports.md#labelling-answers): every
line checked with its file and line named and a wrong value quoted cut to 80 characters, a
salted key checked against its line, files of the unsalted format 1 still read, files merged
with one labeller's last label of an answer winning, and labels resolved to a run's rows by
question and answer text.

Keys and answer digests are computed here from their definition (SHA-256 of the UTF-8 text), not
by the module under test."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from freshrag.reporting.labels import LabelsError, page_key, read_labels, resolve
from tests.support.rows import summaries

SALT = "0123456789abcdef" * 2


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def row(question_id: str, system: str, answer: str, dataset: str = "A_f") -> dict[str, Any]:
    return {"dataset": dataset, "question_id": question_id, "system": system, "answer": answer,
            "status": "ok"}


def label(question_id: str = "q1", system: str = "naive", answer: str = "Paris",
          labeller: str = "ada", truth: Any = 4, rel: Any = 5, **extra: Any) -> dict[str, Any]:
    """A line as the page saves it (format 2); `system` only names the test's intent: the page
    knows none."""
    record = {"freshrag_labels": 2, "key": sha(f"{SALT}\nA_f\n{question_id}\n{sha(answer)}"),
              "salt": SALT, "dataset": "A_f", "question_id": question_id,
              "answer_sha256": sha(answer), "truthfulness": truth, "relevance": rel, "note": "",
              "labeller": labeller, "labelled_at": "2026-11-26T20:00:00Z", "seed": 7}
    return {**record, **extra}


def old_label(question_id: str = "q1", system: str = "naive", answer: str = "Paris",
              **extra: Any) -> dict[str, Any]:
    """A line of format 1, as pages before the salt saved it: its key digested the system."""
    record = {k: v for k, v in label(question_id, answer=answer, **extra).items() if k != "salt"}
    return {**record, "freshrag_labels": 1, "key": sha(f"A_f\n{question_id}\n{system}")}


def write(path: Path, *records: Any) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in records), encoding="utf-8")
    return path


def test_a_page_key_is_the_digest_of_salt_dataset_question_and_answer_text() -> None:
    assert page_key(SALT, "A_f", "q1", sha("x")) == sha(f"{SALT}\nA_f\nq1\n{sha('x')}")
    assert page_key("f" * 32, "A_f", "q1", sha("x")) != page_key(SALT, "A_f", "q1", sha("x"))


def test_labels_read_back_with_every_field(tmp_path: Path) -> None:
    path = write(tmp_path / "ada.jsonl", label(note="ünïcode, \"quoted\""), "",
                 label("q2", truth=1, rel=2))
    first, second = read_labels([path])
    assert (first.question_id, first.truthfulness, first.relevance, first.note) == \
        ("q1", 4, 5, "ünïcode, \"quoted\"")
    assert (first.labeller, first.seed, first.labelled_at) == ("ada", 7, "2026-11-26T20:00:00Z")
    assert first.key == page_key(SALT, "A_f", "q1", sha("Paris")) and first.salt == SALT
    assert first.answer_sha256 == sha("Paris")
    assert second.where == f"{path}:3" and (second.truthfulness, second.relevance) == (1, 2)


def test_files_merge_and_one_labellers_last_label_of_a_key_wins(tmp_path: Path) -> None:
    ada = write(tmp_path / "ada.jsonl", label(truth=1), label("q2"), label(truth=2))
    bob = write(tmp_path / "bob.jsonl", label(labeller="bob", truth=5), label(truth=3))
    labels = read_labels([ada, bob])
    got = [(x.labeller, x.question_id, x.truthfulness) for x in labels]
    assert got == [("ada", "q2", 4), ("bob", "q1", 5), ("ada", "q1", 3)]


def test_one_labellers_labels_of_two_answers_to_one_question_are_both_kept(tmp_path: Path
                                                                           ) -> None:
    path = write(tmp_path / "ada.jsonl", label(answer="Paris"), label(answer="Nice", truth=1))
    assert [x.truthfulness for x in read_labels([path])] == [4, 1]


BAD = [
    pytest.param("{not json", "not valid JSON", id="not-json"),
    pytest.param("[1, 2]", "expected a JSON object, got list", id="not-object"),
    pytest.param(label(freshrag_labels=3), "`freshrag_labels` is 3", id="newer-format"),
    pytest.param(label(freshrag_labels=True), "`freshrag_labels` is True", id="format-bool"),
    pytest.param({k: v for k, v in label().items() if k != "freshrag_labels"},
                 "`freshrag_labels` is None", id="no-format"),
    pytest.param(label(key="naive"), "`key` is 'naive'", id="key-not-hex"),
    pytest.param(label(key=sha("A_f\nq1\nnaive")), "`key` is not the digest of its salt",
                 id="key-not-salted"),
    pytest.param(label(truth=1) | {"answer_sha256": sha("Lyon")}, "line was changed",
                 id="answer-changed-under-its-key"),
    pytest.param({k: v for k, v in label().items() if k != "salt"}, "`salt` is None",
                 id="no-salt"),
    pytest.param(label(salt=SALT.upper()), "expected 32 lowercase hex", id="salt-upper"),
    pytest.param(label(answer_sha256=sha("x").upper()), "`answer_sha256`", id="hex-upper"),
    pytest.param({k: v for k, v in label().items() if k != "question_id"},
                 "`question_id` is None", id="no-question-id"),
    pytest.param(label(note=None), "`note` is None", id="note-null"),
    pytest.param(label(labeller="  "), "`labeller` is empty", id="labeller-blank"),
    pytest.param(label(truth=0), "`truthfulness` is 0", id="truth-zero"),
    pytest.param(label(rel=6), "`relevance` is 6", id="relevance-six"),
    pytest.param(label(truth=3.5), "`truthfulness` is 3.5", id="truth-fraction"),
    pytest.param(label(truth=True), "`truthfulness` is True", id="truth-bool"),
    pytest.param(label(rel="4"), "`relevance` is '4'", id="relevance-string"),
    pytest.param(label(seed="7"), "`seed` is '7'", id="seed-string"),
    pytest.param(label(labelled_at="yesterday"), "expected an ISO 8601 time", id="time-bad"),
    pytest.param(label(labelled_at="2026-11-26T20:00:00"), "expected a time in UTC",
                 id="time-naive"),
    pytest.param(label(labelled_at="2026-11-26T20:00:00+02:00"), "expected a time in UTC",
                 id="time-not-utc"),
]


@pytest.mark.parametrize("name", ["key", "salt", "seed", "labelled_at", "truthfulness",
                                  "freshrag_labels"])
def test_a_huge_wrong_value_is_quoted_cut_to_80_characters(tmp_path: Path, name: str) -> None:
    path = write(tmp_path / "labels.jsonl", label(**{name: "x" * 5_000_000}))
    with pytest.raises(LabelsError) as caught:
        read_labels([path])
    said = str(caught.value)
    assert f"{path}:1: `{name}` is '{'x' * 79}:" in said and len(said) < len(str(path)) + 300


def test_a_file_of_format_1_is_read_and_resolves_by_answer_text(tmp_path: Path) -> None:
    # decided: labels people made on pages before the salt keep counting; their key, which
    # digested the system's name, is neither checked nor used
    path = write(tmp_path / "old.jsonl", old_label(), old_label("q2", answer="Rome", truth=2))
    first, second = read_labels([path])
    assert (first.salt, first.key) == (None, sha("A_f\nq1\nnaive"))
    resolved = resolve([first, second], summaries([row("q1", "naive", "Paris"), row("q2", "naive", "Rome")]))
    assert [(r.question_id, x.truthfulness) for r, x in resolved.pairs] == [("q1", 4),
                                                                              ("q2", 2)]


@pytest.mark.parametrize(("line", "message"), BAD)
def test_a_bad_line_is_refused_naming_file_and_line(tmp_path: Path, line: Any,
                                                     message: str) -> None:
    path = write(tmp_path / "labels.jsonl", label(), line)
    with pytest.raises(LabelsError) as caught:
        read_labels([path])
    assert str(caught.value).startswith(f"{path}:2: ")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_missing_or_undecodable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(LabelsError, match="missing.jsonl: cannot open"):
        read_labels([tmp_path / "missing.jsonl"])
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(json.dumps(label()).encode() + b"\n" + b'{"note": "caf\xe9"}\n')
    with pytest.raises(LabelsError, match=r"latin.jsonl:2: not UTF-8"):
        read_labels([latin])


def test_labels_resolve_to_rows_by_question_and_answer_text(tmp_path: Path) -> None:
    rows = [row("q1", "naive", "Paris"), row("q1", "oracle", "Lyon"), row("q2", "naive", "Rome"),
            row("q1", "naive", "Paris", dataset="A_d")]
    path = write(tmp_path / "l.jsonl",
                 label(),                               # q1 "Paris": matches
                 label(answer="Lyon", rel=1),           # q1 "Lyon": matches
                 label("q2", answer="Milan"),           # answered again since: changed
                 label("q9"),                           # no such question: unknown
                 label("q8", answer="Lyon"))            # no such question: unknown
    resolved = resolve(read_labels([path]), summaries(rows))
    assert [(r.system, r.dataset, x.relevance) for r, x in resolved.pairs] == \
        [("naive", "A_f", 5), ("oracle", "A_f", 1)]
    assert (resolved.unknown, resolved.changed) == (2, 1)
    notes = resolved.notes()
    assert len(notes) == 2 and notes[0].startswith("2 labels naming") and notes[1].startswith("1 label of")


def test_a_label_pairs_with_every_row_holding_its_question_and_answer(tmp_path: Path) -> None:
    # the same system in two run directories, and another system that gave the same text: one
    # answer to a blind person; one answer changed
    rows = [{**row("q1", "naive", "Paris"), "run": "a"}, {**row("q1", "naive", "Paris"), "run": "b"},
            {**row("q1", "naive", "Nice"), "run": "c"}, {**row("q1", "react", "Paris"), "run": "d"}]
    resolved = resolve(read_labels([write(tmp_path / "l.jsonl", label())]), summaries(rows))
    assert [r.run for r, _ in resolved.pairs] == ["a", "b", "d"]
    assert (resolved.unknown, resolved.changed, resolved.notes()) == (0, 0, [])


def test_an_answer_that_is_null_is_labelled_as_empty_text(tmp_path: Path) -> None:
    rows = [{**row("q1", "naive", ""), "answer": None}]
    resolved = resolve(read_labels([write(tmp_path / "l.jsonl", label(answer=""))]), summaries(rows))
    assert len(resolved.pairs) == 1
