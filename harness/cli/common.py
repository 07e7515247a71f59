"""What the commands of harness/cli/main.py and harness/cli/build.py share: the usage error, the
response cache's file name, the default config file and the LLM client with the embedded server
started when a role needs it."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Iterator

from freshrag.core.config import DEFAULT_CONFIG_FILE, LLMSettings
from freshrag.core.errors import UserError
from freshrag.core.rundir import RUN_ROLES
from freshrag.llm.cache import ResponseCache
from freshrag.llm.client import LLMClient
from freshrag.llm.local_server import LocalServer

CACHE_FILE = ".llm-cache.sqlite"


class UsageError(UserError):
    """Options that do not fit together or name nothing known."""


def default_config() -> Path | None:
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.exists() else None


@contextlib.contextmanager
def llm_client(settings: LLMSettings, cache_path: Path | None, seed: int | None,
               roles: tuple[str, ...] = RUN_ROLES) -> Iterator[LLMClient]:
    """The client, with the embedded server running if any of `roles` needs it."""
    try:
        cache = ResponseCache(cache_path) if cache_path else None
    except sqlite3.Error as err:
        raise UsageError(f"{cache_path}: cannot open the response cache ({err}); give --no-cache "
                         f"or run where that directory is writable") from None
    needs_local = any(settings.role(role).is_local for role in roles)
    with contextlib.ExitStack() as stack:
        local = stack.enter_context(LocalServer()) if needs_local else None
        if cache:
            stack.callback(cache.close)
        yield LLMClient(settings, cache, local=local, seed=seed)
