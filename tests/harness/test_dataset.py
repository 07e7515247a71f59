import json

import pytest

from harness.dataset import DatasetError, example_dir, load_dataset, load_dataset_dir

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
    pytest.param([{**QUESTION, "id": "a"}, {**QUESTION, "id": "a"}], [ARTICLE],
                 "questions.jsonl:2: duplicate question id 'a'", id="duplicate-id"),
])
def test_bad_lines_are_named_by_file_and_line(tmp_path, questions, articles, message):
    q = write_lines(tmp_path / "questions.jsonl", questions)
    a = write_lines(tmp_path / "articles.jsonl", articles)
    with pytest.raises(DatasetError) as err:
        load_dataset(q, a)
    assert message in str(err.value)


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
    assert set(dataset.file_hashes()) == {"questions", "articles"}


def test_shipped_example_dataset_loads():
    dataset = load_dataset_dir(example_dir())
    assert len(dataset.questions) >= 40
    assert all(q.gold_title in dataset.articles for q in dataset.questions)
