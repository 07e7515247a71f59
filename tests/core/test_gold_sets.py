"""A multi-article question's gold set (docs/building.md#dataset-files): read strictly from
questions.jsonl, refused by file, line and field; carried by the question (`golds`), the
dataset (`gold_articles`, `created`: the newest) and every samples row; titles in NFC
(docs/building.md#titles), whatever form a file or a system wrote them in."""

import json
import unicodedata

import pytest

from freshrag.core.dataset import DatasetError, load_articles, load_dataset
from freshrag.core.row_check import sample_problem
from freshrag.core.samples import sample_row
from freshrag.core.steps import chunk_records
from freshrag.core.types import Question, RetrievedChunk, Step, SystemAnswer

ARTICLES = [{"title": "Velmora", "content": "The Velmora bridge spans the Tarn.",
             "created": "2026-01-05T10:00:00Z"},
            {"title": "Tarn", "content": "The Tarn is 380 km long.",
             "created": "2026-03-20T08:00:00Z"},
            {"title": "Osk", "content": "Osk is a town.", "created": None}]
BRIDGE = {"id": "m1", "title": "Velmora", "question": "How long is the river Velmora spans?",
          "gold_titles": ["Velmora", "Tarn"], "multihop": "bridge"}


def write_lines(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def load(tmp_path, *questions):
    return load_dataset(write_lines(tmp_path / "questions.jsonl", questions),
                        write_lines(tmp_path / "articles.jsonl", ARTICLES))


def test_a_gold_set_reaches_the_question_in_hop_order_with_its_hops(tmp_path):
    data = load(tmp_path, BRIDGE, {"title": "Osk", "question": "Where?"})
    multi, single = data.questions
    assert (multi.gold_title, multi.gold_titles, multi.hops, multi.multihop) == (
        "Velmora", ("Velmora", "Tarn"), 2, "bridge")  # hops derived when absent
    assert multi.golds == ("Velmora", "Tarn") and single.golds == ("Osk",)
    assert [a.title for a in data.gold_articles(multi)] == ["Velmora", "Tarn"]
    assert (single.gold_titles, single.hops, single.multihop) == ((), None, None)
    assert Question("g", "Hi", None).golds == ()


def test_a_question_dates_from_its_newest_gold_article(tmp_path):
    later_first = BRIDGE | {"gold_titles": ["Tarn", "Velmora"], "title": "Tarn"}
    undated = BRIDGE | {"gold_titles": ["Velmora", "Osk"]}
    data = load(tmp_path, BRIDGE, later_first | {"id": "m2"}, undated | {"id": "m3"})
    assert [data.created(q) for q in data.questions] == [
        "2026-03-20T08:00:00Z", "2026-03-20T08:00:00Z", None]


@pytest.mark.parametrize("row, message", [
    pytest.param(BRIDGE | {"gold_titles": "Velmora"}, "field 'gold_titles' must be a list",
                 id="not-a-list"),
    pytest.param(BRIDGE | {"gold_titles": ["Velmora", 7]}, "field 'gold_titles' must be a list",
                 id="not-titles"),
    pytest.param(BRIDGE | {"gold_titles": ["Velmora", "Nowhere"]},
                 "field 'gold_titles' names 'Nowhere', which has no article", id="missing"),
    pytest.param(BRIDGE | {"gold_titles": ["Tarn", "Velmora"]},
                 "field 'gold_titles' must start with the row's 'title' 'Velmora'", id="first"),
    pytest.param(BRIDGE | {"gold_titles": ["Velmora", "Tarn", "Velmora"]},
                 "field 'gold_titles' names 'Velmora' twice", id="duplicate"),
    pytest.param(BRIDGE | {"gold_titles": ["Velmora"]},
                 "field 'gold_titles' names 1 article; a multi-article question has 2 or more",
                 id="one"),
    pytest.param(BRIDGE | {"hops": 3}, "field 'hops' is 3, but 'gold_titles' names 2 articles",
                 id="hops-disagree"),
    pytest.param(BRIDGE | {"hops": "2"}, "field 'hops' must be a whole number", id="hops-text"),
    pytest.param(BRIDGE | {"multihop": "chain"}, "field 'multihop' is 'chain'; it must be one "
                 "of bridge, comparison", id="multihop-unknown"),
    pytest.param({"title": "Osk", "question": "Where?", "hops": 2},
                 "field 'hops' is 2, but the row has no 'gold_titles'", id="hops-alone"),
    pytest.param({"title": "Osk", "question": "Where?", "multihop": "bridge"},
                 "field 'multihop' is 'bridge', but the row has no 'gold_titles'",
                 id="multihop-alone"),
    pytest.param(BRIDGE | {"title": None, "kind": "general"},
                 "field 'gold_titles' is given for a general query", id="general"),
])
def test_a_bad_gold_set_is_named_by_file_line_and_field(tmp_path, row, message):
    with pytest.raises(DatasetError) as err:
        load(tmp_path, {"title": "Osk", "question": "Where?"}, row)
    assert f"questions.jsonl:2: {message}" in str(err.value)


def test_every_row_carries_the_gold_set_and_the_readers_check_it(tmp_path):
    multi, single = load(tmp_path, BRIDGE, {"title": "Osk", "question": "Where?"}).questions
    row = json.loads(json.dumps(sample_row("d", multi, "oracle", None, None, [], 0.0, error="x")))
    assert (row["gold_title"], row["gold_titles"], row["hops"], row["multihop"]) == (
        "Velmora", ["Velmora", "Tarn"], 2, "bridge")
    assert sample_problem(row) is None
    plain = sample_row("d", single, "oracle", None, None, [], 0.0, error="x")
    assert (plain["gold_titles"], plain["hops"], plain["multihop"]) == (None, None, None)
    assert "field 'gold_titles' must be a list of titles starting with 'gold_title'" in \
        sample_problem(row | {"gold_titles": ["Tarn", "Velmora"]})
    assert "field 'gold_titles' must be a list" in sample_problem(row | {"gold_titles": "Tarn"})
    assert sample_problem(row | {"hops": 3}) == \
        "field 'hops' is 3, but 'gold_titles' names 2 articles"


CAFE = "Café Mörtel"  # NFC, as MediaWiki stores every title
NFD = unicodedata.normalize("NFD", CAFE)


def test_a_gold_title_in_nfd_is_read_in_nfc_and_matches_a_retrieved_nfc_title(tmp_path):
    articles = [*ARTICLES, {"title": CAFE, "content": "The café opened in 2024."}]
    write_lines(tmp_path / "articles.jsonl", articles)
    write_lines(tmp_path / "questions.jsonl", [
        {"title": NFD, "question": "When?"},
        BRIDGE | {"title": NFD, "gold_titles": [NFD, "Tarn"]}])
    data = load_dataset(tmp_path / "questions.jsonl", tmp_path / "articles.jsonl")
    single, multi = data.questions
    assert single.gold_title == CAFE and multi.golds == (CAFE, "Tarn")
    assert [a.title for a in data.gold_articles(multi)] == [CAFE, "Tarn"]
    found = [RetrievedChunk(CAFE, 0, "The café opened in 2024.", 0.9)]
    answer = SystemAnswer("2024.", retrievals=1, details={"retrieved": chunk_records(found)})
    row = sample_row("d", single, "naive", answer, None, [], 0.1)
    assert row["details"]["retrieved"][0]["title"] == row["gold_title"] == CAFE


def test_a_title_a_system_writes_in_nfd_is_written_in_nfc(tmp_path):
    question = Question("c1", "When?", CAFE)
    chunk = RetrievedChunk(NFD, 0, "The café opened in 2024.", 0.9)
    answer = SystemAnswer("2024.", retrievals=1, details={"retrieved": [{"title": NFD}]},
                          steps=[Step("search", query="café", retrieved=[chunk]),
                                 Step("read", title=NFD)])
    row = sample_row("d", question, "mine", answer, None, [], 0.1)
    assert row["details"]["retrieved"] == [{"title": CAFE}]
    assert [step["title"] for step in row["steps"]] == [None, CAFE]
    assert row["steps"][0]["retrieved"][0]["title"] == CAFE
    assert chunk_records([chunk])[0]["title"] == CAFE


def test_twin_articles_are_one_title_refused_as_a_duplicate(tmp_path):
    write_lines(tmp_path / "articles.jsonl", [
        {"title": CAFE, "content": "The café opened in 2024."},
        {"title": NFD, "content": "The same café, its title typed apart."}])
    with pytest.raises(DatasetError, match="articles.jsonl:2: duplicate article title .*: line "
                       "1's in another Unicode normalisation form"):
        load_articles(tmp_path / "articles.jsonl")
