"""On-disk response cache: re-running a finished run makes zero LLM calls.

The key is a hash of everything that determines a reply (base URL, model, messages, tools, tool
choice, temperature, seed, max tokens, attempt) and never the API key. Only usable replies are
stored (`freshrag.llm.client.is_usable`): an empty one is asked again. SQLite in WAL mode gives atomic
writes, so a killed process leaves every finished call in the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from freshrag.core.files import dumps, open_no_follow


def cache_key(request: dict[str, Any]) -> str:
    """Stable hash of a request description (which must not contain the key)."""
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """A thread-safe key -> JSON value store in one SQLite file."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        # A symbolic link is refused (files.SymlinkError), not followed: sqlite3 would resolve
        # it and create or fill the file it points to. The file is created here, without
        # following a link, before SQLite opens it; SQLite itself refuses a link at its -wal
        # and -shm files beside it (it opens them with O_NOFOLLOW).
        os.close(open_no_follow(path, os.O_RDWR | os.O_CREAT, 0o644,
                                fix="remove the link, or give --no-cache"))
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT)")

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?)",
                             (key, dumps(value, ensure_ascii=False)))

    def values(self) -> list[dict[str, Any]]:
        """Every stored reply (a dry run's observed output lengths come from them)."""
        with self._lock:
            rows = self._db.execute("SELECT value FROM responses").fetchall()
        return [json.loads(row[0]) for row in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()
