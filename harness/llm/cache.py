"""On-disk response cache: re-running a finished run makes zero LLM calls.

The key is a hash of everything that determines a reply (base URL, model, messages, tools, tool
choice, temperature, seed, max tokens, attempt, and a run's epoch above 1: each epoch asks anew)
and never the API key. Only usable replies are stored (`freshrag.llm.replies.is_usable`): an
empty one is asked again. SQLite in WAL mode gives atomic writes, so a killed process leaves
every finished call in the cache.

Whatever SQLite says about the file (not a database, corrupt pages, a full disk, a read-only
directory) is a `CacheError` naming the file and what to do: the command stops there, resumable,
rather than answering calls it could not record. A stored value that no longer parses is a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, Callable, TypeVar

from freshrag.core.errors import UserError
from freshrag.core.files import dumps, open_no_follow
from freshrag.core.jsonl import loads

T = TypeVar("T")


class CacheError(UserError, RuntimeError):
    """The response cache's file cannot be read or written; the message names it."""


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

        def connect() -> sqlite3.Connection:
            db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT)")
            return db

        self._db = self._sqlite(connect)

    def _sqlite(self, work: Callable[[], T]) -> T:
        """`work()`, with SQLite's errors said as what they mean for this file."""
        try:
            return work()
        except sqlite3.Error as err:
            text = str(err)
            if "full" in text:
                advice = "free some space and run the same command again, which resumes"
            elif "readonly" in text or "unable to open" in text:
                advice = "make its directory writable, or pass --no-cache"
            else:  # not a database, corrupt pages: only cached replies are in it
                advice = ("delete it (only cached replies are lost: finished rows are kept) or "
                          "pass --no-cache")
            raise CacheError(f"response cache {self.path}: {text}; {advice}") from None

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._sqlite(lambda: self._db.execute(
                "SELECT value FROM responses WHERE key = ?", (key,)).fetchone())
        return _parsed(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        text = dumps(value, ensure_ascii=False)
        with self._lock:
            self._sqlite(lambda: self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?)",
                                                  (key, text)))

    def values(self) -> list[dict[str, Any]]:
        """Every stored reply (a dry run's observed output lengths come from them)."""
        with self._lock:
            rows = self._sqlite(lambda: self._db.execute("SELECT value FROM responses").fetchall())
        return [value for value in (_parsed(row[0]) for row in rows) if value is not None]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _parsed(text: Any) -> dict[str, Any] | None:
    """A stored value, or None (a miss: asked again) if it is not the JSON object it was."""
    try:
        value = loads(text) if isinstance(text, str) else None
    except (json.JSONDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
