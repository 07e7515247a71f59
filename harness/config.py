"""Typed configuration of the LLM roles: model, base URL and key for each of them.

Each role (answer, decision, judge, builder, embeddings) can point at its own OpenAI-compatible
endpoint, so that a strong judge and a cheap answerer can be compared, as the paper suggests
(section IV). Sources, later ones winning:

1. built-in defaults: every role on the embedded local llama.cpp server (`base_url = "local"`);
2. a TOML file (`freshrag.toml` in the working directory, or `--config FILE`), section
   `[roles.default]` for all roles and `[roles.NAME]` for one;
3. environment variables `FRESHRAG_MODEL`, `FRESHRAG_BASE_URL`, `FRESHRAG_API_KEY` for all roles
   and `FRESHRAG_<ROLE>_MODEL`, `..._BASE_URL`, `..._API_KEY` for one.

Keys live only in memory: `RoleConfig.record()` is what results and logs may see.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from harness.types import ROLES

LOCAL = "local"
LOCAL_MODEL = "smollm2-135m-instruct"
DEFAULT_CONFIG_FILE = Path("freshrag.toml")


class ConfigError(ValueError):
    """A configuration value that cannot be used, named by where it came from."""


@dataclass(frozen=True)
class RoleConfig:
    model: str = field(default=LOCAL_MODEL, metadata={"help": "model name sent to the endpoint"})
    base_url: str = field(default=LOCAL, metadata={
        "help": "OpenAI-compatible base URL, or 'local' for the embedded llama.cpp server"})
    api_key: str | None = field(default=None, repr=False, metadata={
        "help": "API key; never written to results or logs"})
    api_key_env: str | None = field(default=None, metadata={
        "help": "name of an environment variable holding the key (e.g. OPENAI_API_KEY)"})

    @property
    def is_local(self) -> bool:
        return self.base_url == LOCAL

    def key(self) -> str:
        """The key to send. Local servers and keyless endpoints still need a non-empty string."""
        if self.api_key:
            return self.api_key
        if self.api_key_env and os.environ.get(self.api_key_env):
            return os.environ[self.api_key_env]
        return "no-key"

    def record(self) -> dict[str, Any]:
        """What may be written down: everything but the key itself."""
        return {"model": self.model, "base_url": self.base_url, "api_key_env": self.api_key_env,
                "api_key_set": self.key() != "no-key"}


@dataclass(frozen=True)
class LLMSettings:
    roles: dict[str, RoleConfig]
    timeout_s: float = field(default=600.0, metadata={"help": "per-request timeout in seconds"})
    max_attempts: int = field(default=6, metadata={
        "help": "attempts per call on rate limits, timeouts, connection errors and 5xx"})

    def role(self, name: str) -> RoleConfig:
        return self.roles[name]

    def record(self) -> dict[str, Any]:
        return {"timeout_s": self.timeout_s, "max_attempts": self.max_attempts,
                "roles": {name: cfg.record() for name, cfg in self.roles.items()}}

    def secrets(self) -> list[str]:
        """Every key in use, so that error messages can be scrubbed of them."""
        return [k for k in {cfg.key() for cfg in self.roles.values()} if k != "no-key"]


_ROLE_FIELDS = {f.name for f in fields(RoleConfig)}
_ENV_FIELDS = {"MODEL": "model", "BASE_URL": "base_url", "API_KEY": "api_key"}


def load_settings(config_file: Path | None = None,
                  env: dict[str, str] | None = None) -> LLMSettings:
    """Build the settings from defaults, the TOML file and the environment."""
    env = dict(os.environ) if env is None else env
    path = config_file or (DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.exists() else None)
    file_roles, file_top = _read_toml(path) if path else ({}, {})
    roles = {}
    for name in ROLES:
        cfg = RoleConfig()
        for section in ("default", name):
            cfg = _apply(cfg, file_roles.get(section, {}), f"{path}: [roles.{section}]")
        for prefix in ("FRESHRAG_", f"FRESHRAG_{name.upper()}_"):
            cfg = replace(cfg, **{attr: env[prefix + suffix] for suffix, attr in _ENV_FIELDS.items()
                                  if env.get(prefix + suffix)})
        roles[name] = cfg
    try:
        return LLMSettings(roles=roles, timeout_s=float(file_top.get("timeout_s", 600.0)),
                           max_attempts=int(file_top.get("max_attempts", 6)))
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{path}: timeout_s and max_attempts must be numbers ({err})") from err


def config_table(config_file: Path | None, name: str) -> dict[str, Any]:
    """The `[name]` table of a config file (`[cutoffs]`, `[prices]`, `[build]`); empty if there is
    no file or no such table."""
    if config_file is None or not config_file.is_file():
        return {}
    try:
        table = tomllib.loads(config_file.read_text(encoding="utf-8")).get(name, {})
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{config_file}: not valid TOML: {err}") from None
    if not isinstance(table, dict):
        raise ConfigError(f"{config_file}: [{name}] must be a table")
    return table


def _read_toml(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise ConfigError(f"{path}: config file not found") from err
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: not valid TOML: {err}") from err
    roles = data.pop("roles", {})
    unknown = set(roles) - set(ROLES) - {"default"}
    if unknown:
        raise ConfigError(f"{path}: unknown role section(s) {sorted(unknown)}; "
                          f"roles are {', '.join(('default',) + ROLES)}")
    return roles, data


def _apply(cfg: RoleConfig, values: dict[str, Any], where: str) -> RoleConfig:
    unknown = set(values) - _ROLE_FIELDS
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {sorted(unknown)}; "
                          f"fields are {', '.join(sorted(_ROLE_FIELDS))}")
    bad = [k for k, v in values.items() if not isinstance(v, str)]
    if bad:
        raise ConfigError(f"{where}: field(s) {bad} must be strings")
    return replace(cfg, **values)
