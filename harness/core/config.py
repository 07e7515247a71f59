"""Typed configuration of the LLM roles: model, base URL and key for each of them.

Each role (answer, decision, judge, scorer, builder, labeller, embeddings) can point at its own
OpenAI-compatible endpoint, so that a strong judge and a cheap answerer can be compared, as the
paper suggests (section IV). Sources, later ones winning, and within each the settings for every
role before those for one:

1. built-in defaults: every role on the embedded local llama.cpp server (`base_url = "local"`);
2. a TOML file (`freshrag.toml` in the working directory, or `--config FILE`), section
   `[roles.default]` for all roles and `[roles.NAME]` for one;
3. environment variables `FRESHRAG_MODEL`, `FRESHRAG_BASE_URL`, `FRESHRAG_API_KEY` for all roles
   and `FRESHRAG_<ROLE>_MODEL`, `..._BASE_URL`, `..._API_KEY` for one;
4. the command line: `--model` and `--base-url` for all roles, `--model-role ROLE=MODEL` for one
   (`CommandLine`).

The embeddings role is the exception: a chat model is no embedding model, so its model comes only
from its own settings (`[roles.embeddings]`, `FRESHRAG_EMBEDDINGS_MODEL`, `--model-role
embeddings=MODEL`), and the endpoint and key for every role reach it only once one of those names
it; until then it stays on the local all-MiniLM-L6-v2, and `LLMSettings.origins` says so.

Keys live only in memory: `RoleConfig.record()` is what results and logs may see.

Every value is checked when it is read, and refused naming where it came from (the file and its
table and key, the environment variable, or the option) with the rule it breaks: a base URL is
`http(s)://host[:port][/path]` or `local`; a model name is not empty and has no surrounding
whitespace; surrounding whitespace of a key (a newline pasted with it) is dropped, and a key with
whitespace or anything but printable ASCII inside is refused without being shown.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
import urllib.parse
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from freshrag.core.arguments import PATH, Argument, check_arguments, kind, path, refused
from freshrag.core.errors import UserError
from freshrag.core.textfile import read_text
from freshrag.core.types import ROLES

LOCAL = "local"
LOCAL_MODEL = "smollm2-135m-instruct"
DEFAULT_CONFIG_FILE = Path("freshrag.toml")
MAX_TIMEOUT_S = 86_400  # a day: beyond it the HTTP client's clock overflows on some platforms
MAX_ATTEMPTS = 100
# The top level of freshrag.toml; [cutoffs], [prices] and [gate] are checked by builders/cutoffs.py,
# harness/reporting/prices.py and harness/reporting/gate_rules.py, which read them.
TOP_LEVEL = ("timeout_s", "max_attempts", "roles", "cutoffs", "prices", "build", "systems", "gate")
TABLES = ("roles", "cutoffs", "prices", "build", "systems", "gate")  # [systems.NAME]: systems/external/http.py
BUILD_KEYS = ("user_agent", "wiki_api")


class ConfigError(UserError, ValueError):
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
        if self.api_key_env and os.environ.get(self.api_key_env, "").strip():
            return os.environ[self.api_key_env].strip()
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
    # role -> where its model came from ("--model", "FRESHRAG_JUDGE_MODEL", "local fallback"...)
    origins: dict[str, str] = field(default_factory=dict, compare=False)

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
EMBEDDINGS = "embeddings"
LOCAL_FALLBACK = "local fallback"  # the embeddings role's origin when nothing names it


@dataclass(frozen=True)
class CommandLine:
    """The models named on the command line: `--model` and `--base-url` for every role,
    `--model-role ROLE=MODEL` (repeatable) for one."""
    model: str | None = None
    base_url: str | None = None
    role_models: tuple[tuple[str, str], ...] = ()


Layer = tuple[str, dict[str, str]]  # where the values come from, and the values


SETTINGS_ARGUMENTS = {  # load_settings' (core/arguments.py)
    "config_file": Argument(f"a TOML file, {PATH}, or None", path(optional=True)),
    "env": Argument("a mapping of variable names to values (text), or None", lambda value: refused(
        value is None or isinstance(value, Mapping) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()))),
    "command_line": Argument("a CommandLine", kind(CommandLine)),
}


def load_settings(config_file: Path | None = None, env: dict[str, str] | None = None,
                  command_line: CommandLine = CommandLine()) -> LLMSettings:
    """Build the settings from defaults, the TOML file, the environment and the command line,
    every value checked."""
    check_arguments({"config_file": config_file, "env": env, "command_line": command_line},
                    SETTINGS_ARGUMENTS)
    config_file = Path(config_file) if config_file is not None else None
    env = dict(os.environ) if env is None else env
    path = config_file or (DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.exists() else None)
    data = read_config(path) if path else {}
    roles, origins = {}, {}
    for name in ROLES:
        cfg, origin = RoleConfig(), "default"
        for where, values in _layers(name, path, data.get("roles", {}), env, command_line):
            cfg = _apply(cfg, values, where)
            origin = where if "model" in values else origin
        if cfg.api_key_env and env.get(cfg.api_key_env):  # empty is unset, as for FRESHRAG_*
            checked_value("api_key", env[cfg.api_key_env], f"{cfg.api_key_env} (api_key_env)")
        _check_local_model(name, cfg, origin)
        roles[name] = cfg
        origins[name] = LOCAL_FALLBACK if name == EMBEDDINGS and cfg.is_local else origin
    return LLMSettings(roles=roles, timeout_s=data.get("timeout_s", 600.0),
                       max_attempts=data.get("max_attempts", 6), origins=origins)


def _layers(name: str, path: Path | None, file_roles: dict[str, Any], env: dict[str, str],
            command_line: CommandLine) -> list[Layer]:
    """The settings of role `name` in the order they win: the file, the environment, the command
    line, each with the settings for every role before those for it alone. The embeddings role
    takes the endpoint and key for every role only if one of its own is set, and never their
    model: a chat model is no embedding model."""
    shared = {"file": [(f"{path}: [roles.default]", file_roles.get("default", {}))],
              "env": _env_layers("FRESHRAG_", env),
              "cli": [("--base-url", {"base_url": command_line.base_url}
                       if command_line.base_url else {}),
                      ("--model", {"model": command_line.model} if command_line.model else {})]}
    own = {"file": [(f"{path}: [roles.{name}]", file_roles.get(name, {}))],
           "env": _env_layers(f"FRESHRAG_{name.upper()}_", env),
           "cli": [(f"--model-role {role}={model}", {"model": model})
                   for role, model in command_line.role_models if role == name]}
    if name == EMBEDDINGS:
        named = any(values for layers in own.values() for _, values in layers)
        shared = {source: [(where, {k: v for k, v in values.items() if k != "model"})
                           for where, values in layers] if named else []
                  for source, layers in shared.items()}
    return [layer for source in ("file", "env", "cli") for layer in shared[source] + own[source]]


def _env_layers(prefix: str, env: dict[str, str]) -> list[Layer]:
    """One layer per variable set (an empty one is unset), named by the variable."""
    return [(prefix + suffix, {attr: env[prefix + suffix]}) for suffix, attr in _ENV_FIELDS.items()
            if env.get(prefix + suffix)]


def _check_local_model(name: str, cfg: RoleConfig, origin: str) -> None:
    """A model named on the command line for a role left on the embedded server is a forgotten
    endpoint: the embedded server serves one model whatever the name."""
    if cfg.is_local and cfg.model != LOCAL_MODEL and origin.startswith("--model"):
        raise ConfigError(f"{origin}: the {name} role has no endpoint, and the embedded local "
                          f"server serves only {LOCAL_MODEL}; give --base-url URL (or "
                          f"FRESHRAG_BASE_URL, or FRESHRAG_{name.upper()}_BASE_URL)")


def config_table(config_file: Path | None, name: str) -> dict[str, Any]:
    """The `[name]` table of a config file (`[cutoffs]`, `[prices]`, `[build]`); empty if there is
    no file or no such table."""
    return {} if config_file is None else read_config(config_file).get(name, {})


def read_config(path: Path) -> dict[str, Any]:
    """The TOML file, read as UTF-8, with its top level, [roles.*] and [build] checked."""
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found" + (" (it is a directory)"
                                                              if path.is_dir() else ""))
    text = read_text(path, ConfigError)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: not valid TOML: {err}") from None
    except ValueError as err:  # an integer of over 4,300 digits, which int() refuses
        raise ConfigError(f"{path}: not readable TOML: {str(err).split(';')[0]}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None
    unknown = sorted(set(data) - set(TOP_LEVEL))
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {unknown}; known: {', '.join(TOP_LEVEL)}")
    for table in TABLES:
        if not isinstance(data.get(table, {}), dict):
            raise ConfigError(f"{path}: {table} must be a table ([{table}]), got {data[table]!r:.80}")
    _check_number(data, "timeout_s", path)
    _check_number(data, "max_attempts", path)
    _check_roles(data.get("roles", {}), path)
    build = data.get("build", {})
    if unknown := sorted(set(build) - set(BUILD_KEYS)):
        raise ConfigError(f"{path}: [build]: unknown key(s) {unknown}; known: {', '.join(BUILD_KEYS)}")
    if "user_agent" in build and (problem := header_problem(build["user_agent"])):
        raise ConfigError(f"{path}: [build] user_agent: {problem}")
    if "wiki_api" in build:  # the wiki --wiki-api names when it is not given
        wiki = build["wiki_api"]
        if problem := url_problem(wiki) if isinstance(wiki, str) else f"{wiki!r:.80} is no text":
            raise ConfigError(f"{path}: [build] wiki_api: {problem}")
    return data


def _check_number(data: dict[str, Any], key: str, path: Path) -> None:
    if key not in data:
        return
    value = data[key]
    if key == "timeout_s":
        if not (_is_number(value) and 0 < value <= MAX_TIMEOUT_S):
            raise ConfigError(f"{path}: timeout_s must be a positive number of seconds "
                              f"(at most {MAX_TIMEOUT_S:,}), got {value!r:.80}")
        data[key] = float(value)
    elif isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ATTEMPTS:
        raise ConfigError(f"{path}: max_attempts must be a whole number from 1 to "
                          f"{MAX_ATTEMPTS}, got {value!r:.80}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_roles(roles: dict[str, Any], path: Path) -> None:
    unknown = set(roles) - set(ROLES) - {"default"}
    if unknown:
        raise ConfigError(f"{path}: unknown role section(s) {sorted(unknown)}; "
                          f"roles are {', '.join(('default',) + ROLES)}")
    for section, values in roles.items():
        where = f"{path}: [roles.{section}]"
        if not isinstance(values, dict):
            raise ConfigError(f"{where} must be a table, got {values!r:.80}")
        unknown = set(values) - _ROLE_FIELDS
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {sorted(unknown)}; "
                              f"fields are {', '.join(sorted(_ROLE_FIELDS))}")
        bad = [k for k, v in values.items() if not isinstance(v, str)]
        if bad:
            raise ConfigError(f"{where}: field(s) {bad} must be strings")
        for key, value in values.items():
            checked_value(key, value, f"{where} {key}")


def _apply(cfg: RoleConfig, values: dict[str, Any], where: str) -> RoleConfig:
    return replace(cfg, **{k: checked_value(k, v, where) for k, v in values.items()})


def checked_value(attr: str, value: str, where: str) -> str:
    """A role field's value as it will be used (a key stripped), or a ConfigError naming `where`
    and the rule. A key is never shown."""
    if attr == "api_key":
        key = value.strip()
        if not key or not all("!" <= c <= "~" for c in key):
            raise ConfigError(f"{where}: an API key must be printable ASCII without spaces inside "
                              f"(surrounding whitespace is dropped); this one is "
                              f"{'empty' if not key else 'not'} (the key is not shown)")
        return key
    if attr == "base_url":
        problem = None if value == LOCAL else url_problem(value)
        if problem:
            raise ConfigError(f"{where}: {masked_url(value)!r:.200} is not a base URL: {problem} "
                              f"(expected http(s)://host[:port][/path], or 'local' for the "
                              f"embedded server)")
    elif attr == "model" and (not value.strip() or value != value.strip()
                              or not value.isprintable()):
        raise ConfigError(f"{where}: a model name must be non-empty, printable and without "
                          f"surrounding whitespace, got {value!r:.200}")
    elif attr == "api_key_env" and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise ConfigError(f"{where}: api_key_env must name an environment variable "
                          f"(letters, digits, _), got {value!r:.200}")
    return value


def url_problem(text: str) -> str | None:
    """Why `text` is not an http(s)://host[:port][/path] URL, or None if it is one."""
    import httpx  # here, not above: the CLI's option types import this module for --help

    if not text.lower().startswith(("http://", "https://")):
        return "it does not start with http:// or https://"
    if not text.isprintable() or any(c.isspace() for c in text):
        return "it holds whitespace or control characters"
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
        httpx.URL(text)
    except (ValueError, httpx.InvalidURL) as err:
        return f"it cannot be parsed ({err})"
    if not parts.hostname:
        return "it names no host"
    if port == 0:
        return "port 0 is not a port"
    if parts.username is not None or parts.password is not None:
        return "it holds user:password@, which would be written to the manifest; give the key apart"
    if parts.query or parts.fragment or text.endswith(("?", "#")):
        return "a base URL takes no ?query or #fragment"
    return None


def masked_url(text: str) -> str:
    """`text` as a refusal may quote it: a password, a query and a fragment, where a URL may
    carry secrets, each shown as "…" (url_problem refuses a URL that has them)."""
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:
        return text.split("?")[0].split("#")[0].rpartition("@")[2]
    user, at, host = parts.netloc.rpartition("@")
    if at and ":" in user:
        user = user.split(":", 1)[0] + ":…"
    query = "…" if parts.query or text.endswith("?") else ""
    fragment = "…" if parts.fragment or text.endswith("#") else ""
    return urllib.parse.urlunsplit((parts.scheme, f"{user}{at}{host}", parts.path, query,
                                    fragment))


def shown_url(url: str) -> str:
    """`url` as an error, a row or the manifest may show it: without user, password, query or
    fragment, where a service's URL or a redirect may carry secrets (a service's identity hashes
    the whole URL: systems/external/http.py `HttpSettings.record`). `masked_url` above marks
    what it leaves out, for a refusal that must show where the fault is."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"


def header_problem(value: Any) -> str | None:
    """Why `value` cannot be sent as an HTTP header such as User-Agent, or None."""
    if not isinstance(value, str) or not value.strip():
        return f"must be non-empty text, got {value!r:.80}"
    if value != value.strip() or not all(" " <= c <= "~" for c in value):
        return f"must be printable ASCII without surrounding whitespace, got {value!r:.200}"
    return None
