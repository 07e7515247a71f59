"""A number json or TOML can write but Python cannot read (an integer of over 4,300 digits, which
int() refuses with a ValueError) in any file freshrag reads, or in a model's tool-call arguments,
is the reader's own named error, never a traceback (core/jsonl.py's `loads`)."""

from __future__ import annotations

import pytest

from freshrag.builders.styles.templates import TemplateError, load_templates
from freshrag.builders.traffic.query_log import read_queries
from freshrag.core.config import ConfigError, read_config
from freshrag.core.dataset import DatasetError, load_articles
from freshrag.core.jsonl import ResultsError, read_jsonl
from freshrag.core.manifest import read_manifest
from freshrag.core.types import LLMResponse, Usage
from freshrag.llm.toolcall import ReplyError, tool_arguments

HUGE = "7" * 5000


@pytest.mark.parametrize("name, text, read, error, where", [
    pytest.param("articles.jsonl", '{"title": "T", "content": "x"}\n{"title": "U", "n": '
                 + HUGE + "}\n", load_articles, DatasetError, "articles.jsonl:2:", id="dataset"),
    pytest.param("samples.jsonl", '{"a": ' + HUGE + "}\n", read_jsonl, ResultsError,
                 "samples.jsonl:1:", id="rows"),
    pytest.param("manifest.json", '{"kind": "run", "seed": ' + HUGE + "}",
                 lambda path: read_manifest(path.parent), ResultsError, "manifest.json:",
                 id="manifest"),
    pytest.param("freshrag.toml", "timeout_s = " + HUGE + "\n", read_config, ConfigError,
                 "freshrag.toml: not readable TOML", id="toml"),
    pytest.param("log.jsonl", '{"query": "hi", "n": ' + HUGE + "}\n", read_queries, ValueError,
                 "log.jsonl:1:", id="query-log"),
    pytest.param("templates.json", '{"templates": ' + HUGE + "}", load_templates, TemplateError,
                 "templates.json", id="templates"),
])
def test_a_huge_integer_in_a_file_is_named_with_the_file(tmp_path, name, text, read, error,
                                                         where):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(error, match="4300 digits|integer string") as caught:
        read(path)
    assert where in str(caught.value)


def test_a_huge_integer_in_tool_arguments_is_a_reply_error():
    response = LLMResponse(role="judge", model="m", text=None, tool_name="submit_grade",
                           tool_arguments='{"truthfulness": ' + HUGE + "}", usage=Usage(),
                           latency_s=0.0, cache_hit=False, messages=[])
    with pytest.raises(ReplyError, match="invalid JSON arguments"):
        tool_arguments(response, "submit_grade")
