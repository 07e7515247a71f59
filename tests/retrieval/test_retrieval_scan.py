"""`freshrag scan-retrieval`: recall@k per label and weight on embedded Qdrant (real), with the
bag-of-words embedder in process and the fake server's /v1/embeddings through the command; the
executor of its index build (tests/retrieval/test_on_ray.py builds it on a real cluster)."""

import json
import time
from dataclasses import replace

import pytest

from freshrag.cli.main import main
from freshrag.core.types import Question
from freshrag.executors.choice import Executor
from freshrag.retrieval.config import IndexConfig
from freshrag.retrieval.index import VectorIndex, open_index
from freshrag.retrieval.scan import render, scan
from tests.support.datasets import write_dataset
from tests.support.fake_openai_server import FakeOpenAIServer
from tests.support.fakes import SECRET, BagOfWordsEmbedder, use_endpoint
from tests.support.markdown import table_rows
from tests.support.systems import CORPUS

QUESTIONS = [
    Question("1", "which comet did the shepherds see at dawn", "Kettering Comet", label="fact_single"),
    Question("2", "how many arches of granite", "Velmora Bridge", label="fact_single"),
    Question("3", "the eleven stations of the coal railway", "Ostrava Line", label="summary"),
    # asks about one article in the words of another: found by neither side
    Question("4", "granite arches over the river Ost", "Kettering Comet", label="summary"),
    Question("5", "railway stations", "Ostrava Line"),
]


@pytest.fixture
def index(tmp_path):
    built = open_index(CORPUS, IndexConfig(directory=tmp_path / "index", chunk_size=300,
                                           chunk_overlap=20, batch_size=4),
                       BagOfWordsEmbedder(), progress=False)
    yield built
    built.close()


def test_recall_per_label_unlabelled_and_overall_for_every_weight(index):
    result = scan(index, QUESTIONS, [0, 0.5, 1], k=3, progress=False)
    rows = {row["label"]: row for row in result["rows"]}
    assert list(rows) == ["fact_single", "summary", "unlabelled", "overall"]
    assert [rows[name]["questions"] for name in rows] == [2, 2, 1, 5]
    recall = {name: {w: value[0] for w, value in row["recall"].items()}
              for name, row in rows.items()}
    # the 64-dimension bag of words sends questions 3 and 5 to the bridge (shared words hash
    # alike); their rare words ("eleven", "railway") find the line on the lexical side
    assert recall == {"fact_single": {"0": 1.0, "0.5": 1.0, "1": 1.0},
                      "summary": {"0": 0.0, "0.5": 0.5, "1": 0.5},  # question 4: never found
                      "unlabelled": {"0": 0.0, "0.5": 1.0, "1": 1.0},
                      "overall": {"0": 0.4, "0.5": 0.8, "1": 0.8}}
    assert rows["summary"]["recall"]["0.5"][1:] == [0.0, 1.0]  # two questions: a wide interval
    assert rows["overall"]["best_weights"] == [0.5, 1.0] and rows["overall"]["best_recall"] == 0.8
    assert rows["fact_single"]["best_weights"] == [0.0, 0.5, 1.0]
    assert result["index"]["chunks"] == index.chunks and result["k"] == 3


def test_the_scan_fuses_as_a_run_at_that_weight_retrieves(index):
    """One candidate search per question, fused per weight, equals retrieving at that weight."""
    question = QUESTIONS[2].text
    [candidates] = index.candidates([question], depth=50)
    for weight in (0, 0.2, 0.7, 1):
        at_weight = VectorIndex(index.client, index.collection, index.embedder, replace(
            index.config, top_k=3, text_weight=weight), index.chunks)  # the same collection
        assert [(c.title, c.index, c.score) for c in candidates.top(weight, 3)] == \
            [(c.title, c.index, c.score) for c in at_weight.retrieve(question)], weight


def test_groups_by_another_field_and_a_set_without_labels(index):
    plain = [Question(q.id, q.text, q.gold_title) for q in QUESTIONS]
    result = scan(index, plain, [0.1], k=5, progress=False)
    assert [row["label"] for row in result["rows"]] == ["unlabelled", "overall"]
    needs = [Question(q.id, q.text, q.gold_title, information_need=need)
             for q, need in zip(QUESTIONS, ["where", "what", "what", None, "what"])]
    by_need = scan(index, needs, [0.1], k=5, field="information_need", progress=False)
    assert [(r["information_need"], r["questions"]) for r in by_need["rows"]] == [
        ("what", 3), ("where", 1), ("unlabelled", 1), ("overall", 5)]


def test_a_general_query_is_left_out_of_recall_and_counted_apart(index):
    general = Question("g", "what is seventeen times twenty-three", None, kind="general")
    with_general = scan(index, [*QUESTIONS, general], [0, 1], k=3, progress=False)
    without = scan(index, QUESTIONS, [0, 1], k=3, progress=False)
    assert (with_general["questions"], with_general["general_queries"]) == (5, 1)
    assert with_general["rows"] == without["rows"]  # not a miss: recall as without it


def test_render_names_every_weight_and_the_best(index):
    text = render(scan(index, QUESTIONS, [0, 0.05, 1], k=3, progress=False))
    assert "| label | questions | w=0 | w=0.05 | w=1 | best |" in text
    assert "| overall | 5 | 0.400 [0.000, 0.800] |" in text
    assert text.splitlines()[-1].endswith("| 1 (0.800) |")


def test_the_command_prints_the_table_and_writes_json_with_embeddings_only(tmp_path, monkeypatch,
                                                                          capsys):
    with FakeOpenAIServer() as server:
        use_endpoint(monkeypatch, server.base_url, SECRET)
        write_dataset(tmp_path,
                      articles=[{"title": a.title, "content": a.content} for a in CORPUS.values()],
                      questions=[{"title": q.gold_title, "question": q.text,
                                  **({"label": q.label} if q.label else {})} for q in QUESTIONS])
        code = main(["scan-retrieval", str(tmp_path), "--weights", "0,0.2,1",
                     "--k", "3", "--index-dir", str(tmp_path / "index"), "--chunk-size", "300",
                     "--chunk-overlap", "20", "--out", str(tmp_path / "scan")])
        chat_calls, embedding_calls = server.calls, server.embedding_calls
    out = capsys.readouterr().out
    assert code == 0 and chat_calls == 0 and embedding_calls > 0
    assert "| label | questions | w=0 | w=0.2 | w=1 | best |" in out
    written = json.loads((tmp_path / "scan" / "scan-retrieval.json").read_text())
    assert [row["label"] for row in written["rows"]] == [
        "fact_single", "summary", "unlabelled", "overall"]
    assert written["weights"] == [0, 0.2, 1] and written["dataset"] == tmp_path.name


def test_the_executor_options_reach_the_index_build(tmp_path, monkeypatch, capsys):
    built = []

    def spied(articles, config, embedder, progress=True):
        built.append(config)
        return open_index(articles, config, embedder, progress)

    monkeypatch.setattr("freshrag.retrieval.index.open_index", spied)
    monkeypatch.setattr("freshrag.retrieval.embeddings.embedder_for",
                        lambda llm: BagOfWordsEmbedder())
    write_dataset(tmp_path,
                  articles=[{"title": a.title, "content": a.content} for a in CORPUS.values()],
                  questions=[{"title": q.gold_title, "question": q.text} for q in QUESTIONS])
    assert main(["scan-retrieval", str(tmp_path), "--k", "3", "--index-dir", str(tmp_path / "index"),
                 "--chunk-size", "300", "--chunk-overlap", "20", "--out", str(tmp_path / "scan"),
                 "--executor", "local", "--embed-concurrency", "3"]) == 0
    [config] = built
    assert (config.executor, config.embed_concurrency, config.top_k) == (Executor("local"), 3, 3)
    written = json.loads((tmp_path / "scan" / "scan-retrieval.json").read_text())
    assert written["index"]["chunks"] > 0 and written["questions"] == len(QUESTIONS)


def test_an_address_that_does_not_answer_fails_at_once_naming_it(tmp_path, capsys):
    started = time.monotonic()
    code = main(["scan-retrieval", "--index-dir", str(tmp_path / "index"), "--out",
                 str(tmp_path / "scan"), "--executor", "ray", "--address", "127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 2 and "Ray cluster at 127.0.0.1:9 cannot be reached" in err, err
    assert "Traceback" not in err and time.monotonic() - started < 15
    assert not any(tmp_path.iterdir())  # refused before anything was chunked or written


@pytest.mark.parametrize("weights, message", [
    pytest.param("0,1.5", "expected a share between 0 and 1, got '1.5'", id="above-1"),
    pytest.param("0,-0.1", "expected a share between 0 and 1", id="negative"),
    pytest.param("0,,1", "expected a share between 0 and 1, got ''", id="empty-item"),
    pytest.param("0.1,0.1", "expected distinct values", id="repeated"),
    pytest.param("dense", "expected a share between 0 and 1, got 'dense'", id="word"),
])
def test_bad_weights_are_refused_naming_the_option(tmp_path, capsys, weights, message):
    with pytest.raises(SystemExit) as exit_:
        main(["scan-retrieval", str(tmp_path), "--weights", weights])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --weights" in err and message in err


def test_a_group_named_by_its_questions_stays_in_its_cell():
    recall = {"0": [0.5, 0.4, 0.6], "1": [0.25, 0.1, 0.4]}
    result = {"field": "information_need", "k": 3, "weights": [0.0, 1.0],
              "rows": [{"information_need": "results | <i>votes</i>\nby town", "questions": 2,
                        "recall": recall, "best_weights": [0.0], "best_recall": 0.5}]}
    header, row = table_rows(render(result))
    assert len(row) == len(header) == 5
    assert row[0] == "results | <i>votes</i> by town" and row[-1] == "0 (0.500)"
    assert "<i>" not in render(result)


def test_a_chunk_of_any_gold_article_is_a_hit(index):
    """Question 4's words find the bridge, never its comet: a miss as a one-article question, a
    hit once the bridge is one of its gold articles."""
    one = QUESTIONS[3]
    two = replace(one, gold_titles=("Kettering Comet", "Velmora Bridge"), hops=2)
    [(_, missed)] = scan(index, [one], [0.5], k=3, progress=False)["rows"][-1]["recall"].items()
    [(_, hit)] = scan(index, [two], [0.5], k=3, progress=False)["rows"][-1]["recall"].items()
    assert (missed[0], hit[0]) == (0.0, 1.0)
