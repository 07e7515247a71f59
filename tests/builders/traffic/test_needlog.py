"""Needs from a query log (builders/traffic/query_log.py) with fixed vectors and the scripted fake model:
the log read strictly, clusters whose number follows from the distance threshold, small clusters
kept apart, descriptions parsed strictly (a failed one recorded with its raw replies), and a needs
file that `build --needs` reads."""

import json

import numpy as np
import pytest

from freshrag.builders.styles.needs import NeedsError, read_needs
from freshrag.builders.traffic.query_log import (
    DESCRIBE_FUNCTION,
    DESCRIBED,
    DUPLICATE,
    FAILED,
    NeedLogConfig,
    cluster,
    derive_needs,
    distinct_queries,
    parse_description,
    read_queries,
    render,
    representatives,
    write_needs,
)
from freshrag.core.types import LLMResponse, Usage
from tests.support.fakes import ScriptedLLM, ToolReply
from tests.support.markdown import table_rows

# Three directions, a few queries around each, and two strays each in a direction of its own: what
# a log's embeddings look like.
GROUPS = {
    "elections": ([1.0, 0.0, 0.0, 0.0, 0.0], ["who won the council vote", "turnout in the mayor race",
                                    "seats won by Labour", "recount in the ward"]),
    "disasters": ([0.0, 1.0, 0.0, 0.0, 0.0], ["flood death toll", "cause of the plane crash",
                                    "fire damage in the park"]),
    "music": ([0.0, 0.0, 1.0, 0.0, 0.0], ["chart position of the album", "tracklist of the record"]),
}
STRAYS = {"banana bread recipe": [0.1, 0.0, 0.0, 1.0, 0.0],
          "convert pdf to word": [0.0, 0.1, 0.0, 0.0, 1.0]}


def vectors_by_query():
    table = {query.casefold(): vector for query, vector in STRAYS.items()}
    for direction, queries in GROUPS.values():
        for k, query in enumerate(queries):  # each a little off its direction
            table[query.casefold()] = list(np.array(direction) + 0.05 * np.array([k, -k, k % 2, 0, 0]))
    return table


def embed(texts):
    table = vectors_by_query()
    return [table[text.casefold()] for text in texts]


def describe(text):
    return ToolReply(DESCRIBE_FUNCTION, json.dumps({"description": text}))


def queries():
    return [q for _, group in GROUPS.values() for q in group] + list(STRAYS)


def test_clusters_follow_the_threshold_not_a_preset_count():
    table = vectors_by_query()
    points = np.array([table[q.casefold()] for q in queries()])
    labels = cluster(points, 0.3)
    assert len(set(labels)) == 5  # three groups, two strays
    for _, group in GROUPS.values():
        assert len({labels[queries().index(q)] for q in group}) == 1
    assert len(set(cluster(points, 0.001))) == len(points)  # tighter: every query alone
    assert len(set(cluster(points, 1.99))) == 1            # looser: one cluster
    assert list(cluster(points[:1], 0.3)) == [0]           # one query is one cluster


def test_representatives_are_the_members_nearest_the_centroid():
    points = np.array([[1.0, 0.0], [0.9, 0.1], [0.5, 0.5], [0.0, 1.0]])
    assert representatives(points, np.array([0, 1, 2]), 2) == [1, 0]


def test_distinct_queries_count_repeats_without_case():
    assert distinct_queries(["a b", "A B", "c", "a b"]) == (["a b", "c"], [3, 1])


@pytest.mark.parametrize("content, problem", [
    pytest.param('{"query": "ok"}\nnot json\n', ":2: not valid JSON", id="not-json"),
    pytest.param('{"query": "ok"}\n["a list"]\n', ":2: not a JSON object", id="not-an-object"),
    pytest.param('{"text": "no query"}\n', ":1: field 'query' is missing", id="missing"),
    pytest.param('{"query": "  "}\n', ":1: field 'query' is empty", id="blank-query"),
    pytest.param('{"query": 5}\n', ":1: field 'query' is empty or not a string", id="number"),
    pytest.param('\n\n', ": no queries", id="empty"),
])
def test_a_bad_query_log_is_refused_naming_file_and_line(tmp_path, content, problem):
    path = tmp_path / "log.jsonl"
    path.write_text(content)
    with pytest.raises(NeedsError) as err:
        read_queries(path)
    assert str(err.value).startswith(f"{path}{problem}")


def test_a_query_log_skips_blank_lines_and_other_fields(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"query": " who  won? ", "user": 7}\n\n{"query": "why"}\n')
    assert read_queries(path) == ["who won?", "why"]


def reply(name=DESCRIBE_FUNCTION, arguments=None, text=None):
    return LLMResponse("builder", "m", text, name, arguments, Usage(1, 1), 0.0, False, [])


@pytest.mark.parametrize("response, description, reason", [
    pytest.param(reply(arguments='{"description": "Results of local elections."}'),
                 "Results of local elections.", None, id="sentence"),
    pytest.param(reply(arguments='{"description": "Results of\\n local  elections"}'),
                 "Results of local elections", None, id="line-breaks-become-spaces"),
    pytest.param(reply(name=None, text="Results of elections"), None, "no describe_need call",
                 id="text-not-a-call"),
    pytest.param(reply(arguments='{"description": "Res'), None, "invalid JSON arguments",
                 id="torn-json"),
    pytest.param(reply(arguments='{"description": ""}'), None, "description is ''",
                 id="empty"),
    pytest.param(reply(arguments='{"need": "x"}'), None, "description is None", id="wrong-field"),
    pytest.param(reply(arguments=json.dumps({"description": "x" * 501})), None,
                 "description of 501 characters", id="overlong"),
])
def test_descriptions_are_parsed_strictly(response, description, reason):
    got, why = parse_description(response)
    assert got == description
    assert (why is None) if reason is None else why.startswith(reason)


def test_derive_needs_describes_each_cluster_and_keeps_small_ones_apart(tmp_path):
    log = queries() + ["Who won the council vote"]  # a repeat counts toward its cluster's size
    llm = ScriptedLLM([describe("Results of local elections"),
                       "Disasters and their victims", "still text",  # not a call, twice: failed
                       describe("results of local elections")])        # the same need again
    config = NeedLogConfig(distance_threshold=0.3, min_size=2, examples=2, concurrency=1)
    document = derive_needs(log, llm, embed, config)
    assert not llm.script
    needs = document["needs"]
    assert [(n["size"], n["distinct"], n["status"]) for n in needs] == [
        (5, 4, DESCRIBED), (3, 3, FAILED), (2, 2, DUPLICATE)]
    assert needs[0]["need"] == "Results of local elections" and len(needs[0]["examples"]) == 2
    assert set(needs[0]["examples"]) <= set(GROUPS["elections"][1])
    assert needs[1]["raw"] == ["Disasters and their victims", "still text"]
    assert needs[1]["reason"] == "no describe_need call"
    assert needs[2]["reason"] == "the same description as need 1"
    assert document["small_clusters"] == {"clusters": 2, "queries": 2,
                                          "examples": list(STRAYS)}
    assert document["queries"] == 12 and document["distinct"] == 11
    assert document["clustering"]["clusters"] == 5
    assert document["calls"] == 4 and document["usage"]["input"] == 40
    assert [r["attempt"] for r in llm.requests[1:3]] == [0, 1]

    paths = write_needs(document, tmp_path / "out" / "needs.txt")
    assert read_needs(paths[0]) == ("Results of local elections",)  # ready for build --needs
    assert json.loads(paths[1].read_text())["needs"][1]["status"] == FAILED
    table = paths[2].read_text()
    assert "| 1 | Results of local elections | 5 |" in table
    assert "*not used: no describe_need call*" in table
    assert "2 queries in 2 clusters smaller than 2, not needs" in table
    assert table.strip() == render(document)


def test_a_log_larger_than_max_queries_is_sampled_with_the_seed():
    config = NeedLogConfig(distance_threshold=0.3, min_size=100, max_queries=5, seed=1)
    first = derive_needs(queries(), ScriptedLLM([]), embed, config)
    second = derive_needs(queries(), ScriptedLLM([]), embed, config)
    assert first["sampled"] == {"distinct": 11, "kept": 5, "seed": 1}
    assert first["small_clusters"] == second["small_clusters"]
    assert sum(1 for _ in first["small_clusters"]["examples"]) <= 5
    assert "seeded sample of 5 of 11" in render(first)


def test_the_needs_table_keeps_users_queries_in_their_cells():
    evil = "a | b <img src=x onerror=alert(1)>\nnext line"
    document = {"queries": 3, "distinct": 3, "sampled": None,
                "clustering": {"clusters": 2, "distance_threshold": 0.3, "min_size": 1},
                "needs": [{"need": "Need | one", "status": DESCRIBED, "reason": None,
                           "examples": [evil, "plain"], "size": 2},
                          {"need": "<b>bold</b>", "status": FAILED, "reason": "no | call",
                           "examples": ["x"], "size": 1}],
                "small_clusters": {"clusters": 1, "queries": 1, "examples": [evil]}}
    text = render(document)
    assert "<" not in text and ">" not in text
    header, first, second = table_rows(text)
    assert header == ["#", "need", "queries", "example queries"]
    assert first == ["1", "Need | one", "2", evil.replace("\n", " ") + "; plain"]
    assert second == ["2", "*not used: no | call* (<b>bold</b>)", "1", "x"]
