"""A URL that freshrag refuses for holding a password, a query or a fragment is quoted in the
refusal with those parts as "…": a key pasted into a URL never reaches the terminal."""

from __future__ import annotations

import pytest

from freshrag.cli.main import main
from freshrag.core.config import masked_url
from tests.support.datasets import write_dataset

SECRET = "canary-Mk82-secret"


@pytest.mark.parametrize("url, shown", [
    pytest.param("http://u:pw@h:8/v1", "http://u:…@h:8/v1", id="password"),
    pytest.param("https://h/v1?key=x&b=2", "https://h/v1?…", id="query"),
    pytest.param("https://h/v1#frag", "https://h/v1#…", id="fragment"),
    pytest.param("https://h/v1?", "https://h/v1?…", id="empty-query"),
    pytest.param("http://u@h/x", "http://u@h/x", id="user-alone-kept"),
    pytest.param("https://h:8/v1", "https://h:8/v1", id="nothing-to-mask"),
    pytest.param("http://[::1/v1?k=s", "http://[::1/v1", id="unparsable"),
])
def test_a_masked_url_shows_all_but_what_may_hold_a_key(url, shown):
    assert masked_url(url) == shown


@pytest.mark.parametrize("where, argv, env, toml", [
    pytest.param("--base-url", ["--base-url", f"https://user:{SECRET}@api.example/v1"], {}, None,
                 id="option-password"),
    pytest.param("FRESHRAG_BASE_URL", [], {"FRESHRAG_BASE_URL": f"https://api.example/v1?key={SECRET}"},
                 None, id="environment-query"),
    pytest.param("--systems", ["--systems", f"svc=https://rag.example/ask?token={SECRET}"], {}, None,
                 id="service-spec-query"),
    pytest.param("[systems.svc]", ["--systems", "svc"], {},
                 f'[systems.svc]\nurl = "https://rag.example/ask?token={SECRET}"\n',
                 id="service-table-query"),
])
def test_a_refused_url_is_said_without_its_secret(tmp_path, monkeypatch, capsys, where, argv, env,
                                                  toml):
    monkeypatch.chdir(tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    write_dataset(tmp_path / "data")
    if toml:
        (tmp_path / "freshrag.toml").write_text(toml)
    try:
        status = main(["run", "--dataset", "data", "--no-probe", *argv])
    except SystemExit as stop:  # argparse refuses an option's value itself
        status = stop.code
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err
    assert "…" in err and SECRET not in err
    assert not (tmp_path / "results").exists() or SECRET not in "".join(
        path.read_text(errors="replace") for path in (tmp_path / "results").rglob("*")
        if path.is_file())
