import pytest

from freshrag.core.config import LOCAL, ConfigError, load_settings


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
