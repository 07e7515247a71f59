"""Environment variables: base URLs, model names and keys, for all roles and for one. `freshrag
run` refuses a bad value at once naming the variable and the rule, before any call and before its
run directory exists, and never shows a key; a key's surrounding whitespace is dropped."""

from hypothesis import given, settings
from hypothesis import strategies as st

from freshrag.core.config import load_settings
from freshrag.core.types import ROLES
from freshrag.retrieval.embeddings import PRECISION_VARIABLE, PRECISIONS
from tests.fuzz.support import (
    assert_no_calls,
    assert_refused,
    budget,
    invoke,
    scratch,
)
from tests.fuzz.urls import BAD_URLS, GOOD_URLS
from tests.support.datasets import write_dataset

PREFIXES = ["FRESHRAG_"] + [f"FRESHRAG_{role.upper()}_" for role in ROLES]
TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=10)
BAD_MODELS = st.one_of(st.text(" \t\n", min_size=1, max_size=3), TEXT.map(lambda t: f" m{t}"),
                       TEXT.map(lambda t: f"m{t}\n"), TEXT.map(lambda t: f"m\x1b{t}"))
BAD_KEYS = st.one_of(st.text(" \t\n", min_size=1, max_size=3),
                     st.tuples(TEXT, TEXT).map(lambda p: f"sk-{p[0]} x{p[1]}"),
                     st.text("é€üß中", min_size=1, max_size=3).map(lambda t: f"sk-{t}"))


def refused_env(directory, server, mp, variables: dict[str, str], *names) -> str:
    for name, value in variables.items():
        mp.setenv(name, value)
    questions, articles = write_dataset(directory / "data")
    result = invoke("run", "--questions", questions, "--articles", articles,
                    "--out", directory / "run", "--systems", "baseline")
    assert_refused(result, *names)
    assert_no_calls(server)
    assert not (directory / "run").exists()
    return result.err


@settings(max_examples=budget(80))
@given(prefix=st.sampled_from(PREFIXES), url=BAD_URLS)
def test_a_bad_base_url_is_refused_naming_the_variable(server, prefix, url):
    with scratch(server) as (tmp, mp):
        refused_env(tmp, server, mp, {prefix + "BASE_URL": url}, prefix + "BASE_URL",
                    "is not a base URL", "expected http(s)://host[:port][/path], or 'local'")


@settings(max_examples=budget(40))
@given(prefix=st.sampled_from(PREFIXES), model=BAD_MODELS)
def test_a_bad_model_name_is_refused_naming_the_variable(server, prefix, model):
    with scratch(server) as (tmp, mp):
        refused_env(tmp, server, mp, {prefix + "MODEL": model}, prefix + "MODEL",
                    "model name must be non-empty, printable and without surrounding whitespace")


@settings(max_examples=budget(40))
@given(prefix=st.sampled_from(PREFIXES), key=BAD_KEYS)
def test_a_key_with_whitespace_or_non_ascii_inside_is_refused_unseen(server, prefix, key):
    with scratch(server) as (tmp, mp):
        err = refused_env(tmp, server, mp, {prefix + "API_KEY": key}, prefix + "API_KEY",
                          "API key must be printable ASCII", "not shown")
        assert not key.strip() or key.strip() not in err


@settings(max_examples=budget(20))
@given(key=BAD_KEYS)
def test_a_bad_key_in_the_variable_api_key_env_names_is_refused(server, key):
    with scratch(server) as (tmp, mp):
        (tmp / "my.toml").write_text('[roles.judge]\napi_key_env = "MY_JUDGE_KEY"\n')
        mp.delenv("FRESHRAG_API_KEY")
        mp.setenv("MY_JUDGE_KEY", key)
        questions, articles = write_dataset(tmp / "data")
        result = invoke("run", "--questions", questions, "--articles", articles, "--out", tmp / "run",
                        "--config", tmp / "my.toml", "--systems", "baseline")
        assert_refused(result, "MY_JUDGE_KEY (api_key_env)", "API key must be printable ASCII")
        assert_no_calls(server)


@settings(max_examples=budget(30))
@given(value=TEXT.filter(lambda t: t.strip() and t.strip() not in PRECISIONS))
def test_a_bad_local_embeddings_precision_is_refused_naming_the_variable(server, value):
    """With the embeddings on the local MiniLM (no model named for them), a run that retrieves
    refuses a precision it does not know before the index is built or the model loaded."""
    with scratch(server) as (tmp, mp):
        mp.delenv("FRESHRAG_EMBEDDINGS_MODEL", raising=False)
        mp.setenv(PRECISION_VARIABLE, value)
        questions, articles = write_dataset(tmp / "data")
        result = invoke("run", "--questions", questions, "--articles", articles,
                        "--out", tmp / "run", "--systems", "naive")
        assert_refused(result, PRECISION_VARIABLE, "one of bf16, int8, fp32")
        assert_no_calls(server)
        assert [path.name for path in tmp.iterdir()] == ["data"]  # no run, no index


@settings(max_examples=budget(30))
@given(prefix=st.sampled_from(PREFIXES), url=GOOD_URLS,
       model=TEXT.filter(lambda t: t and t == t.strip() and t.isprintable()),
       key=st.from_regex(r"[!-~]{1,30}", fullmatch=True), pad=st.text(" \t\n\r", max_size=3))
def test_values_inside_the_rules_are_used_and_a_key_is_stripped(prefix, url, model, key, pad):
    env = {prefix + "BASE_URL": url, prefix + "MODEL": model, prefix + "API_KEY": pad + key + pad}
    settings_ = load_settings(env=env)
    role = "answer" if prefix == "FRESHRAG_" else prefix.removeprefix("FRESHRAG_").rstrip("_").lower()
    cfg = settings_.role(role)
    assert (cfg.base_url, cfg.model, cfg.key()) == (url, model, key)


def test_an_empty_variable_is_unset():
    settings_ = load_settings(env={"FRESHRAG_MODEL": "m", "FRESHRAG_JUDGE_MODEL": "",
                                   "FRESHRAG_BASE_URL": ""})
    assert settings_.role("judge").model == "m"
    assert settings_.role("judge").is_local
