"""Questions and articles files, and dataset directories: `freshrag run` refuses every bad file
with `file:line:` (and the byte offset, for bytes that are not UTF-8), before any call and before
its run directory exists; a byte-order mark is allowed; huge files are streamed."""

import json
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from freshrag.core import textfile
from freshrag.core.dataset import load_articles, load_dataset
from tests.fuzz.support import (
    ARTICLES,
    QUESTIONS,
    assert_no_calls,
    assert_refused,
    budget,
    invoke,
    scratch,
    use_fake,
)

NON_ASCII = "éñüøßÅçàÿ"  # in Latin-1 and cp1252, where they are not UTF-8
ENCODINGS = ["latin-1", "cp1252", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-be"]
BAD_UTF8 = [b"\xff", b"\x80", b"\xc3\x28", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x82", b"\xf5\x80\x80\x80"]
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                           | st.text(max_size=5), lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6)
FILES = st.sampled_from(["questions", "articles"])


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def refused_run(directory: Path, server, questions: bytes, articles: bytes, *names):
    """`freshrag run` on the two files: refused naming `names`, no call, no run directory."""
    (directory / "questions.jsonl").write_bytes(questions)
    (directory / "articles.jsonl").write_bytes(articles)
    result = invoke("run", "--questions", directory / "questions.jsonl",
                    "--articles", directory / "articles.jsonl", "--out", directory / "run",
                    "--systems", "baseline,oracle")
    assert_refused(result, *names)
    assert_no_calls(server)
    assert not (directory / "run").exists()
    return result


def files(which: str, broken: bytes, questions=QUESTIONS, articles=ARTICLES) -> tuple[bytes, bytes]:
    """(questions, articles) with `which` replaced by `broken`."""
    return (broken, jsonl(articles)) if which == "questions" else (jsonl(questions), broken)


def first_bad_byte(data: bytes) -> int:
    """The offset the message must name: the first line with a NUL or a byte that is not UTF-8,
    and in it the NUL, else the byte where decoding fails."""
    start = 0
    for line in data.splitlines(keepends=True):
        if b"\x00" in line:
            return start + line.index(b"\x00")
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as err:
            return start + err.start
        start += len(line)
    raise AssertionError("no bad byte")


@settings(max_examples=budget(60))
@given(encoding=st.sampled_from(ENCODINGS), which=FILES,
       word=st.text(alphabet=NON_ASCII, min_size=1, max_size=4))
def test_another_encoding_is_refused_with_where_and_how_to_convert(server, encoding, which, word):
    articles = [dict(row, title=f"{row['title']} {word}") for row in ARTICLES]
    questions = [dict(row, title=f"{row['title']} {word}") for row in QUESTIONS]
    rows = questions if which == "questions" else articles
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode(encoding)
    with scratch(server) as (tmp, _):
        path = tmp / f"{which}.jsonl"
        if data[:2] in (b"\xff\xfe", b"\xfe\xff") or data[:4] == b"\x00\x00\xfe\xff":
            where = ("byte-order mark at byte offset 0", f"{path}:1:")
        else:
            where = (f"byte offset {first_bad_byte(data)}",)
        refused_run(tmp, server, *files(which, data, questions, articles), path, "iconv", *where)


@settings(max_examples=budget(60))
@given(which=FILES, bad=st.sampled_from(BAD_UTF8 + [b"\x00"]), at=st.floats(0, 1))
def test_a_bad_byte_anywhere_is_named_by_line_and_offset(server, which, bad, at):
    data = jsonl(QUESTIONS if which == "questions" else ARTICLES)
    position = int(at * (len(data) - 1))
    broken = data[:position] + bad + data[position:]
    line = data[:position].count(b"\n") + 1
    with scratch(server) as (tmp, _):
        refused_run(tmp, server, *files(which, broken), f"{tmp / which}.jsonl:{line}:",
                    f"byte offset {position}", "NUL byte" if bad == b"\x00" else "not UTF-8")


REQUIRED = {"questions": ("title", "question"), "articles": ("title", "content")}
OPTIONAL = {"questions": ("id",), "articles": ("url", "created")}
NOT_TEXT = JSON_VALUES.filter(lambda v: not isinstance(v, str))
BLANK = st.text(alphabet=" \t\u00a0\u2003", max_size=3)


@st.composite
def wrong_field(draw):
    which = draw(FILES)
    field = draw(st.sampled_from(REQUIRED[which] + OPTIONAL[which]))
    if field in REQUIRED[which]:
        value = draw(st.one_of(NOT_TEXT, BLANK, st.just("<deleted>")))
    elif field == "id":
        value = draw(st.one_of(BLANK, st.booleans(), st.floats(), st.lists(st.integers(), max_size=2),
                               st.dictionaries(st.text(max_size=2), st.integers(), max_size=2)))
    else:
        value = draw(NOT_TEXT.filter(lambda v: v is not None))
    return which, field, value, draw(st.integers(0, 2))


@settings(max_examples=budget(100))
@given(case=wrong_field())
def test_a_field_of_the_wrong_type_or_empty_is_named(server, case):
    which, field, value, index = case
    rows = [dict(row) for row in (QUESTIONS if which == "questions" else ARTICLES)]
    if value == "<deleted>":
        del rows[index][field]
    else:
        rows[index][field] = value
    with scratch(server) as (tmp, _):
        refused_run(tmp, server, *files(which, jsonl(rows)), f"{tmp / which}.jsonl:{index + 1}:",
                    f"field {field!r}")


@settings(max_examples=budget(30))
@given(first=st.integers(0, 2), gap=st.integers(1, 3), as_number=st.booleans(), which=FILES)
def test_duplicate_titles_and_ids_are_named_at_the_second(server, first, gap, as_number, which):
    second = first + gap
    questions = [dict(QUESTIONS[i % 3], id=f"id-{i}") for i in range(6)]
    articles = [{"title": f"Town {i}", "content": f"Town {i} has a bridge."} for i in range(6)]
    if which == "questions":
        questions[first]["id"], questions[second]["id"] = 7, (7 if as_number else "7")
        message = "duplicate question id '7'"
    else:
        articles[second]["title"] = articles[first]["title"]
        message = f"duplicate article title 'Town {first}'"
    with scratch(server) as (tmp, _):
        refused_run(tmp, server, jsonl(questions), jsonl(articles),
                    f"{tmp / which}.jsonl:{second + 1}:", message)


def not_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return True
    return False


BAD_LINES = st.one_of(
    st.tuples(JSON_VALUES.filter(lambda v: not isinstance(v, dict)).map(json.dumps),
              st.just("expected a JSON object")),
    st.tuples(st.text(min_size=1, max_size=30).filter(
        lambda t: t.strip() and not any(c in t for c in "\n\r\x00\ufeff") and not_json(t)),
        st.just("not valid JSON")),
    st.tuples(st.integers(5_000, 100_000).map(lambda n: "[" * n + "]" * n),
              st.just("nested too deeply")),
    st.tuples(st.sampled_from(["\\ud800", "\\udfff", "x\\udc80y"]).map(
        lambda s: '{"title": "Town 0", "question": "%s", "content": "%s"}' % (s, s)),
        st.just("lone surrogate")),
)


@settings(max_examples=budget(100))
@given(which=FILES, index=st.integers(0, 3), bad=BAD_LINES)
def test_a_line_that_is_not_a_json_object_of_text_is_named(server, which, index, bad):
    line, message = bad
    lines = jsonl(QUESTIONS if which == "questions" else ARTICLES).decode().splitlines()
    lines.insert(index, line)
    broken = "\n".join(lines).encode("utf-8") + b"\n"
    with scratch(server) as (tmp, _):
        refused_run(tmp, server, *files(which, broken), f"{tmp / which}.jsonl:{index + 1}:", message)


@settings(max_examples=budget(40))
@given(which=FILES, length=st.integers(0, 12_000), index=st.integers(0, 2))
def test_a_line_over_the_limit_is_refused_and_one_under_it_read(server, which, length, index):
    limit = 4096
    rows = [dict(row) for row in (QUESTIONS if which == "questions" else ARTICLES)]
    rows[index]["question" if which == "questions" else "content"] = "x" * max(length, 1)
    data = jsonl(rows)
    with scratch(server) as (tmp, mp):
        mp.setattr(textfile, "MAX_LINE_BYTES", limit)
        if len(data.splitlines(keepends=True)[index]) > limit:
            refused_run(tmp, server, *files(which, data), f"{tmp / which}.jsonl:{index + 1}:",
                        f"line longer than {limit} bytes")
            return
        questions, articles = files(which, data)
        (tmp / "q.jsonl").write_bytes(questions)
        (tmp / "a.jsonl").write_bytes(articles)
        dataset = load_dataset(tmp / "q.jsonl", tmp / "a.jsonl")
        long_text = (dataset.questions[index].text if which == "questions"
                     else dataset.articles[f"Town {index}"].content)
        assert long_text == "x" * max(length, 1)


@settings(max_examples=budget(40))
@given(titles=st.lists(st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=8)
                       .filter(str.strip), min_size=1, max_size=4, unique=True))
def test_a_utf8_byte_order_mark_is_allowed(titles):
    rows = [{"title": title, "content": f"About {title}."} for title in titles]
    with scratch() as (tmp, _):
        (tmp / "plain.jsonl").write_bytes(jsonl(rows))
        (tmp / "bom.jsonl").write_bytes(textfile.UTF8_BOM + jsonl(rows))
        assert list(load_articles(tmp / "bom.jsonl")) == titles
        assert load_articles(tmp / "bom.jsonl") == load_articles(tmp / "plain.jsonl")


def refused_holding_little(directory: Path, server, questions: bytes, articles: bytes, *names):
    """refused_run, with the peak of Python's memory while the command ran (files written first)."""
    (directory / "questions.jsonl").write_bytes(questions)
    (directory / "articles.jsonl").write_bytes(articles)
    tracemalloc.start()
    try:
        result = invoke("run", "--questions", directory / "questions.jsonl",
                        "--articles", directory / "articles.jsonl", "--out", directory / "run")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert_refused(result, *names)
    assert_no_calls(server)
    return peak


def test_a_huge_file_is_streamed_not_read_whole(server, tmp_path, monkeypatch):
    """A 24 MB questions file broken on its second line is refused holding one line of it."""
    use_fake(server, monkeypatch)
    line = json.dumps(QUESTIONS[0]).encode() + b"\n"
    questions = line + b"{oops\n" + line * (24_000_000 // len(line))
    peak = refused_holding_little(tmp_path, server, questions, jsonl(ARTICLES),
                                  "questions.jsonl:2:", "not valid JSON")
    assert peak < 2_000_000, f"peak {peak:,} bytes for a {len(questions):,}-byte file"


def test_a_file_without_line_breaks_is_refused_at_the_limit(server, tmp_path, monkeypatch):
    use_fake(server, monkeypatch)
    monkeypatch.setattr(textfile, "MAX_LINE_BYTES", 1 << 16)
    articles = b"[" + b"0," * 4_000_000 + b"0]"  # 8 MB, one line
    peak = refused_holding_little(tmp_path, server, jsonl(QUESTIONS), articles,
                                  "articles.jsonl:1:", "line longer than 65536 bytes")
    assert peak < 2_000_000, f"peak {peak:,} bytes for a {len(articles):,}-byte line"


@pytest.mark.parametrize("make, message", [
    pytest.param(lambda d: None, "no such dataset directory", id="missing"),
    pytest.param(lambda d: d.write_text("x"), "not a directory", id="a-file"),
    pytest.param(lambda d: (d.mkdir(), (d / "articles.jsonl").write_bytes(jsonl(ARTICLES))),
                 "no questions.jsonl", id="no-questions"),
    pytest.param(lambda d: (d.mkdir(), (d / "questions.jsonl").write_bytes(jsonl(QUESTIONS)),
                            (d / "articles.jsonl").mkdir()), "no articles.jsonl", id="dir-as-file"),
    pytest.param(lambda d: (d.mkdir(), (d / "questions.jsonl").write_bytes(jsonl(QUESTIONS)),
                            (d / "articles.jsonl").write_text("\n  \n")), "no articles", id="blank"),
    pytest.param(lambda d: (d.mkdir(), (d / "questions.jsonl").write_bytes(b""),
                            (d / "articles.jsonl").write_bytes(jsonl(ARTICLES))), "no questions",
                 id="empty-questions"),
    pytest.param(lambda d: (d.mkdir(), (d / "questions.jsonl").write_bytes(
        jsonl([{"title": "Atlantis", "question": "?"}])),
        (d / "articles.jsonl").write_bytes(jsonl(ARTICLES))), "has no article", id="no-gold"),
])
def test_a_broken_dataset_directory_is_named(server, tmp_path, monkeypatch, make, message):
    use_fake(server, monkeypatch)
    directory = tmp_path / "dataset"
    make(directory)
    result = invoke("run", "--dataset", directory, "--out", tmp_path / "run")
    assert_refused(result, directory, message)
    assert_no_calls(server)
    assert not (tmp_path / "run").exists()
