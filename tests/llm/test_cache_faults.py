"""The response cache's file when SQLite cannot use it (harness/llm/cache.py): a file that is no
database, corrupt pages, a full disk. Each is one CacheError naming the file and what to do; a
run stops there, its finished rows kept, and resumes once the file is dealt with."""

import sqlite3

import pytest

from freshrag.cli.common import CACHE_FILE
from freshrag.cli.main import main
from freshrag.core.samples import read_samples
from freshrag.llm.cache import CacheError, ResponseCache
from tests.support.runs import run_cli


def test_a_file_that_is_no_database_is_named_with_the_fix(tmp_path):
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"this is not SQLite" * 300)
    with pytest.raises(CacheError) as err:
        ResponseCache(path)
    assert str(path) in str(err.value) and "--no-cache" in str(err.value)


def test_corrupt_pages_are_named_when_read(tmp_path):
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    for n in range(200):
        cache.put(f"k{n}", {"text": "x" * 500})
    cache.close()
    data = bytearray(path.read_bytes())
    data[4096:len(data)] = b"\xff" * (len(data) - 4096)  # every page after the first
    path.write_bytes(bytes(data))
    with pytest.raises(CacheError) as err:
        ResponseCache(path).get("k150")
    assert str(path) in str(err.value) and "delete it" in str(err.value)


def test_a_stored_value_that_no_longer_parses_is_a_miss(tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    cache.put("good", {"text": "x"})
    cache._db.execute("INSERT INTO responses VALUES ('bad', '{\"text\": ')")
    assert cache.get("bad") is None and cache.get("good") == {"text": "x"}
    assert cache.values() == [{"text": "x"}]


def test_a_full_disk_stops_the_run_naming_the_cache_and_the_resume_finishes(tmp_path, fake,
                                                                            monkeypatch, capsys):
    cache = tmp_path / CACHE_FILE  # beside the run's directory
    calls = {"n": 0}
    put = ResponseCache.put

    def put_until_full(self, key, value):
        calls["n"] += 1
        if calls["n"] > 3:  # as SQLite says it when the disk fills
            self._sqlite(lambda: (_ for _ in ()).throw(
                sqlite3.OperationalError("database or disk is full")))
        put(self, key, value)

    monkeypatch.setattr(ResponseCache, "put", put_until_full)
    assert run_cli(tmp_path, "--concurrency", "1", "--no-probe") == 2
    err = capsys.readouterr().err
    assert f"response cache {cache}: database or disk is full" in err
    assert "free some space" in err and "Traceback" not in err
    kept = read_samples(tmp_path / "run" / "samples.jsonl")
    assert 0 < len(kept) < 6 and all(row["status"] == "ok" for row in kept)  # none blamed
    monkeypatch.setattr(ResponseCache, "put", put)
    assert run_cli(tmp_path, "--no-probe") == 0
    assert len(read_samples(tmp_path / "run" / "samples.jsonl")) == 6
    assert main(["report", str(tmp_path / "run")]) == 0
