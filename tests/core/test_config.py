import pytest

from freshrag.core.config import (
    LOCAL,
    LOCAL_FALLBACK,
    LOCAL_MODEL,
    CommandLine,
    ConfigError,
    load_settings,
)


def test_defaults_put_every_role_on_the_local_server():
    settings = load_settings(env={})
    assert all(cfg.base_url == LOCAL for cfg in settings.roles.values())


def test_file_then_global_env_then_role_env(tmp_path):
    config = tmp_path / "freshrag.toml"
    config.write_text('timeout_s = 30\n[roles.default]\nmodel = "m-file"\nbase_url = "http://file/v1"\n'
                      '[roles.judge]\nmodel = "judge-file"\napi_key_env = "JUDGE_KEY"\n')
    env = {"FRESHRAG_MODEL": "m-env", "FRESHRAG_ANSWER_BASE_URL": "http://answer/v1",
           "JUDGE_KEY": "sk-judge-secret"}
    settings = load_settings(config, env=env)
    assert settings.timeout_s == 30
    assert (settings.role("answer").model, settings.role("answer").base_url) == ("m-env", "http://answer/v1")
    assert settings.role("judge").model == "m-env"  # the environment wins over the file
    assert settings.role("decision").base_url == "http://file/v1"


def test_keys_never_reach_the_record(monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", "sk-judge-secret")
    settings = load_settings(env={"FRESHRAG_API_KEY": "sk-global-secret",
                                  "FRESHRAG_JUDGE_API_KEY": "sk-judge-only"})
    assert settings.role("answer").key() == "sk-global-secret"
    assert settings.role("judge").key() == "sk-judge-only"
    record = repr(settings.record()) + repr(settings.roles)
    assert "sk-" not in record
    assert set(settings.secrets()) == {"sk-global-secret", "sk-judge-only"}


@pytest.mark.parametrize("text, message", [
    pytest.param("[roles.jduge]\nmodel = 'x'\n", "unknown role section(s) ['jduge']", id="typo-role"),
    pytest.param("[roles.answer]\nmodle = 'x'\n", "[roles.answer]: unknown field(s) ['modle']", id="typo-field"),
    pytest.param("[roles.answer]\nmodel = 3\n", "must be strings", id="not-string"),
    pytest.param("[roles.answer\n", "not valid TOML", id="bad-toml"),
    pytest.param("timeout_s = 'soon'\n", "timeout_s must be a positive number of seconds", id="bad-timeout"),
])
def test_bad_config_names_the_file_and_section(tmp_path, text, message):
    config = tmp_path / "bad.toml"
    config.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_settings(config, env={})
    assert str(config) in str(err.value) and message in str(err.value)


def test_the_command_line_wins_over_the_environment_and_the_file(tmp_path):
    config = tmp_path / "freshrag.toml"
    config.write_text('[roles.default]\nbase_url = "http://file/v1"\n[roles.judge]\nmodel = "j-file"\n')
    env = {"FRESHRAG_MODEL": "m-env", "FRESHRAG_DECISION_MODEL": "d-env"}
    settings = load_settings(config, env=env, command_line=CommandLine(
        model="m-cli", role_models=(("answer", "a-cli"),)))
    models = {role: cfg.model for role, cfg in settings.roles.items()}
    # --model over every variable and table; --model-role over --model
    assert models == {"answer": "a-cli", "decision": "m-cli", "judge": "m-cli",
                      "builder": "m-cli", "labeller": "m-cli", "scorer": "m-cli",
                      "embeddings": LOCAL_MODEL}
    assert settings.origins["answer"] == "--model-role answer=a-cli"
    assert settings.origins["decision"] == "--model"
    # without the command line: the role's variable over the shared one, the env over the file
    settings = load_settings(config, env=env)
    assert settings.role("decision").model == "d-env" and settings.role("judge").model == "m-env"
    assert settings.origins["decision"] == "FRESHRAG_DECISION_MODEL"


def test_embeddings_stay_local_until_something_names_them(tmp_path):
    shared = {"FRESHRAG_BASE_URL": "http://shared/v1", "FRESHRAG_MODEL": "chat-model"}
    settings = load_settings(env=shared, command_line=CommandLine(model="chat-model"))
    assert settings.role("embeddings").is_local
    assert settings.origins["embeddings"] == LOCAL_FALLBACK
    assert settings.role("answer").base_url == "http://shared/v1"
    for named in ({"FRESHRAG_EMBEDDINGS_MODEL": "embed-model"}, {}):
        role_models = () if named else (("embeddings", "embed-model"),)
        embeddings = load_settings(env={**shared, **named}, command_line=CommandLine(
            role_models=role_models)).role("embeddings")
        # named, it takes the shared endpoint (and key) with its own model
        assert (embeddings.base_url, embeddings.model) == ("http://shared/v1", "embed-model")
    # a chat model is no embedding model: named by its endpoint, it takes no shared model
    embeddings = load_settings(env={**shared, "FRESHRAG_EMBEDDINGS_BASE_URL": "http://e/v1"},
                               command_line=CommandLine(model="chat-model")).role("embeddings")
    assert (embeddings.base_url, embeddings.model) == ("http://e/v1", LOCAL_MODEL)
    config = tmp_path / "freshrag.toml"
    config.write_text('[roles.default]\nbase_url = "http://file/v1"\nmodel = "m"\n'
                      '[roles.embeddings]\nmodel = "e"\n')
    embeddings = load_settings(config, env={}).role("embeddings")
    assert (embeddings.base_url, embeddings.model) == ("http://file/v1", "e")


def test_a_model_named_for_the_embedded_server_is_refused_unless_it_is_its_own():
    with pytest.raises(ConfigError, match=r"--model: the answer role has no endpoint.*--base-url"):
        load_settings(env={}, command_line=CommandLine(model="gpt-4o"))
    with pytest.raises(ConfigError, match=r"--model-role judge=gpt-4o: the judge role"):
        load_settings(env={}, command_line=CommandLine(role_models=(("judge", "gpt-4o"),)))
    # the model --help states as the default is accepted
    assert load_settings(env={}, command_line=CommandLine(model=LOCAL_MODEL)).role("judge").is_local
    settings = load_settings(env={}, command_line=CommandLine(model="gpt-4o",
                                                              base_url="http://x/v1"))
    assert settings.role("judge").model == "gpt-4o"


def test_a_bad_command_line_value_names_the_option():
    with pytest.raises(ConfigError, match=r"--base-url: 'ftp://x' is not a base URL"):
        load_settings(env={}, command_line=CommandLine(base_url="ftp://x"))
