import hashlib
import json

import pytest

from freshrag.core.dataset import DatasetError, example_dir, load_dataset, load_dataset_dir

ARTICLE = {"title": "Velmora", "content": "The Velmora bridge has nine spans."}
QUESTION = {"title": "Velmora", "question": "How many spans?"}


def write_lines(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("questions, articles, message", [
    pytest.param([QUESTION, "{not json"], [ARTICLE], "questions.jsonl:2: not valid JSON", id="bad-json"),
    pytest.param([{"title": "Velmora"}], [ARTICLE], "questions.jsonl:1: field 'question' is missing",
                 id="missing-question"),
    pytest.param([{"question": "x"}], [ARTICLE], "questions.jsonl:1: field 'title' is missing",
                 id="missing-title"),
    pytest.param([QUESTION, {"title": "Nowhere", "question": "x"}], [ARTICLE],
                 "questions.jsonl:2: title 'Nowhere' has no article", id="no-article"),
    pytest.param([QUESTION], [ARTICLE, {"title": "Empty", "content": ""}],
                 "articles.jsonl:2: field 'content' is empty", id="empty-content"),
    pytest.param([QUESTION], [ARTICLE, ARTICLE], "articles.jsonl:2: duplicate article title",
                 id="duplicate-article"),
    pytest.param(["[1, 2]"], [ARTICLE], "questions.jsonl:1: expected a JSON object", id="not-object"),
    pytest.param([], [ARTICLE], "questions.jsonl: no questions", id="no-questions"),
    pytest.param([QUESTION | {"label": "lookup"}], [ARTICLE],
                 "questions.jsonl:1: field 'label' is 'lookup'; it must be one of fact_single",
                 id="unknown-label"),
    pytest.param([QUESTION | {"kind": "fresh"}, QUESTION | {"need": "yes"}], [ARTICLE],
                 "questions.jsonl:2: field 'need' must be true, false or null, got 'yes'",
                 id="need-not-bool"),
    pytest.param([QUESTION | {"reference": 42}], [ARTICLE],
                 "questions.jsonl:1: field 'reference' must be a string or null, got 42",
                 id="reference-not-string"),
    pytest.param([QUESTION], [], "articles.jsonl: no articles", id="no-articles"),
    pytest.param([QUESTION, "", "{not json"], [ARTICLE], "questions.jsonl:3: not valid JSON",
                 id="blank-lines-still-count"),
    pytest.param([{**QUESTION, "id": "a"}, {**QUESTION, "id": "a"}], [ARTICLE],
                 "questions.jsonl:2: duplicate question id 'a'", id="duplicate-id"),
    pytest.param([QUESTION], [ARTICLE | {"created": "2024-W05-1T10:00:00Z"}],
                 "articles.jsonl:1: field 'created': '2024-W05-1T10:00:00Z' is not a timestamp "
                 "written YYYY-MM-DDTHH:MM:SSZ, or null", id="created-week-date"),
    pytest.param([QUESTION], [ARTICLE | {"created": "20240131T101500Z"}],
                 "articles.jsonl:1: field 'created': '20240131T101500Z' is not a timestamp",
                 id="created-compact"),
    pytest.param([QUESTION], [ARTICLE | {"created": "2023-02-29T10:00:00Z"}],
                 "articles.jsonl:1: field 'created': '2023-02-29T10:00:00Z' is no moment",
                 id="created-no-such-day"),
])
def test_bad_lines_are_named_by_file_and_line(tmp_path, questions, articles, message):
    q = write_lines(tmp_path / "questions.jsonl", questions)
    a = write_lines(tmp_path / "articles.jsonl", articles)
    with pytest.raises(DatasetError) as err:
        load_dataset(q, a)
    assert message in str(err.value)


def test_a_creation_time_as_the_builders_write_it_is_kept(tmp_path):
    q = write_lines(tmp_path / "questions.jsonl", [QUESTION])
    a = write_lines(tmp_path / "articles.jsonl", [ARTICLE | {"created": "2024-01-31T10:15:00Z"}])
    assert load_dataset(q, a).articles["Velmora"].created == "2024-01-31T10:15:00Z"


def test_dataset_dir_must_hold_both_files(tmp_path):
    write_lines(tmp_path / "questions.jsonl", [QUESTION])
    with pytest.raises(DatasetError, match="no articles.jsonl"):
        load_dataset_dir(tmp_path)


def test_questions_get_line_ids_and_keep_their_gold_title(tmp_path):
    q = write_lines(tmp_path / "questions-A_x.jsonl", [QUESTION, "", {**QUESTION, "id": "mine"}])
    a = write_lines(tmp_path / "articles.jsonl", [ARTICLE])
    dataset = load_dataset(q, a)
    assert dataset.name == "A_x"
    assert [q.id for q in dataset.questions] == ["q00001", "mine"]
    assert dataset.questions[0].gold_title == "Velmora"
    assert dataset.file_hashes() == {"questions": hashlib.sha256(q.read_bytes()).hexdigest(),
                                     "articles": hashlib.sha256(a.read_bytes()).hexdigest()}


def test_shipped_example_dataset_loads_every_line():
    """The example ships inside the package and loads whole: every question and article of its
    files, in order (read here with json, not through the loader)."""
    directory = example_dir()
    lines = {name: [json.loads(line) for line in
                    (directory / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
                    if line.strip()] for name in ("questions", "articles")}
    dataset = load_dataset_dir(directory)
    assert dataset.name == "example"
    assert [(q.text, q.gold_title) for q in dataset.questions] == [
        (row["question"], row["title"]) for row in lines["questions"]]
    assert [(a.title, a.content) for a in dataset.articles.values()] == [
        (row["title"], row["content"]) for row in lines["articles"]]
    assert len(dataset.questions) >= 40


def test_optional_question_fields_reach_the_question_and_its_row(tmp_path):
    from freshrag.core.samples import sample_row
    extra = {"label": "summary", "information_need": "costs", "kind": "fresh", "need": True,
             "reference": "Nine spans.", "group": "g1", "criterion": "short",
             "value_then": "Eight spans.", "change": "slow", "premise": "false"}
    q = write_lines(tmp_path / "questions.jsonl", [QUESTION | extra, QUESTION])
    a = write_lines(tmp_path / "articles.jsonl", [ARTICLE])
    first, plain = load_dataset(q, a).questions
    assert first.fields() == extra | {"gold_titles": None, "hops": None, "multihop": None}
    assert set(plain.fields().values()) == {None}
    row = sample_row("d", first, "naive", None, None, [], 0.0, error="x")
    assert {name: row[name] for name in extra} == extra
