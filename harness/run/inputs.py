"""What a run takes from its caller (docs/api.md): the typed options, the systems in whatever form
they are given (names as `--systems` takes them, resolved sources, or the caller's own class,
factory or object), and the models of the roles. Each is checked before anything starts, and a
value that cannot be used is refused with its name, as the command line refuses a bad option.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

from freshrag.core.config import (
    DEFAULT_CONFIG_FILE,
    CommandLine,
    LLMSettings,
    checked_value,
    config_table,
    load_settings,
    masked_url,
    url_problem,
)
from freshrag.core.dataset import Dataset, example_dir, load_dataset_dir
from freshrag.core.dates import parse_date
from freshrag.core.errors import UserError
from freshrag.core.plugins import NAME
from freshrag.core.types import ROLES
from freshrag.executors.choice import DEFAULT_EXECUTOR, ExecutorError, executor_of
from freshrag.retrieval.config import IndexConfig
from freshrag.run.options import (
    ADDRESS_HELP,
    CORPUS_HELP,
    DEFAULT_CONCURRENCY,
    DEFAULT_SEED,
    EXECUTOR_HELP,
    MAX_CONCURRENCY,
    MAX_SEED,
    OTLP_HELP,
    RUN_OPTIONS,
    SHARD_HELP,
)
from freshrag.run.shard import Shard, ShardError, parse_shard
from freshrag.scoring.probes import ProbeSettings
from freshrag.systems import SYSTEMS
from freshrag.systems.external.plugins import SystemSource, resolve_all, services_from

# A system as a caller may give it: a name or spec as --systems takes it, a resolved source, or
# the caller's own class, factory (taking the run's SystemContext) or built object.
SystemSpec = Union[str, SystemSource, Callable[..., Any], object]
Systems = Union[str, Sequence[SystemSpec], Mapping[str, SystemSpec]]
# The models of the roles: settings as they are, the command line's models, one model for every
# role but embeddings, or a model per role; None: freshrag.toml and FRESHRAG_* as the CLI reads them.
Roles = Union[LLMSettings, CommandLine, str, Mapping[str, str], None]


def declared(name: str) -> Any:
    """RunOptions' field `name` as run/options.py declares it: its default and its help."""
    option = RUN_OPTIONS[name]
    return field(default=option.default, metadata={"help": f"{option.help} ({option.flag})"})


class InputError(UserError, ValueError):
    """An argument of a run that cannot be used; the message names it."""


@dataclass(frozen=True)
class RunOptions:
    """Every option of a run but the dataset, the systems, the models and the run directory; the
    command line's run options, typed (docs/cli.md#freshrag-run)."""

    limit: int | None = declared("limit")
    concurrency: int = field(default=DEFAULT_CONCURRENCY, metadata={
        "help": "pairs in flight at once; 1 runs serially (--concurrency)"})
    seed: int = field(default=DEFAULT_SEED, metadata={"help": "seed sent with every LLM request (--seed)"})
    cache: bool = field(default=True, metadata={
        "help": "read and write the response cache beside the run directory (not --no-cache)"})
    scorers: tuple[str, ...] = field(default=("judge",), metadata={
        "help": "scorers: names of freshrag.SCORERS or of installed ones, or your own as "
                "[NAME=]FILE.py:CLASS or [NAME=]MODULE:CLASS; the judge grades every pair, the "
                "others score the answers into scores.jsonl after the pairs (--scorers)"})
    probe: ProbeSettings | None = field(default=ProbeSettings(), metadata={
        "help": "how the judge is probed before grading; None: not probed (--no-probe)"})
    knowledge_cutoff: str = declared("knowledge_cutoff")
    today: str | None = declared("today")
    context_tokens: int = declared("context_tokens")
    max_steps: int = declared("max_steps")
    token_budget: int | None = declared("token_budget")
    epochs: int = declared("epochs")
    index: IndexConfig | None = field(default=None, metadata={
        "help": "the retrieval index of the systems that retrieve; None: the defaults, stored "
                "in .index beside the run directory (--index-dir, --chunk-size, --top-k, ...)"})
    max_cost: float | None = field(default=None, metadata={
        "help": "stop making new calls once the dollars spent plus the calls in flight would "
                "pass this many USD; the run ends resumable, capped (--max-cost)"})
    batch: bool = field(default=False, metadata={
        "help": "send the calls through the OpenAI Batch API first, at half price (--batch)"})
    batch_poll: float | None = field(default=None, metadata={
        "help": "first wait in seconds between polls of a batch; None: 5 (--batch-poll)"})
    config: Path | None = field(default=None, metadata={
        "help": "TOML file with role endpoints, [prices] and [systems]; None: ./freshrag.toml "
                "if there is one (--config)"})
    shard: Shard | None = field(default=None, metadata={"help": f"{SHARD_HELP}; a Shard or "
                                                       f"'i/N'; None: every pair (--shard)"})
    executor: str = field(default=DEFAULT_EXECUTOR, metadata={"help": f"{EXECUTOR_HELP} (--executor)"})
    address: str | None = field(default=None, metadata={"help": f"{ADDRESS_HELP} (--address)"})
    corpus: Path | None = field(default=None, metadata={
        "help": f"{CORPUS_HELP}; a path, or None: the dataset's articles alone (--corpus)"})
    otlp_endpoint: str | None = field(default=None, metadata={
        "help": f"{OTLP_HELP}; None: none sent (--otlp-endpoint)"})

    def __post_init__(self) -> None:
        _whole("concurrency", self.concurrency, 1, MAX_CONCURRENCY)
        object.__setattr__(self, "shard", _shard(self.shard))
        _whole("seed", self.seed, 0, MAX_SEED)
        for option in RUN_OPTIONS.values():
            value = getattr(self, option.name)
            if value is None and option.optional:
                continue
            if option.range is None:
                _date(option.name, value)
            else:
                _whole(option.name, value, *option.range)
        for name in ("cache", "batch"):  # "no" would be true, and switch the cache on
            if not isinstance(getattr(self, name), bool):
                raise InputError(f"RunOptions.{name}: expected True or False, got "
                                 f"{getattr(self, name)!r:.80}")
        if self.otlp_endpoint is not None and (not isinstance(self.otlp_endpoint, str) or (
                problem := url_problem(self.otlp_endpoint))):
            raise InputError(f"RunOptions.otlp_endpoint: expected an http(s):// URL or None, got "
                             f"{masked_url(str(self.otlp_endpoint))!r:.80}"
                             f"{'' if not isinstance(self.otlp_endpoint, str) else ': ' + problem}")
        for name, value in (("max_cost", self.max_cost), ("batch_poll", self.batch_poll)):
            if value is not None and not (_number(value) and value >= 0 and math.isfinite(value)):
                raise InputError(f"RunOptions.{name}: expected a number >= 0, got {value!r:.80}")
        if not isinstance(self.scorers, tuple) or not all(
                isinstance(name, str) for name in self.scorers):
            raise InputError(f"RunOptions.scorers: expected a tuple of scorers' names (of "
                             f"freshrag.SCORERS) or specs (FILE.py:NAME, MODULE:NAME), got "
                             f"{self.scorers!r:.200}")
        try:
            executor_of(self.executor, self.address)
        except ExecutorError as err:  # it names the field, as every other check here does
            raise InputError(f"RunOptions.{err}") from None
        object.__setattr__(self, "corpus", _corpus(self.corpus, self.index))
        for name, kind in (("probe", ProbeSettings), ("index", IndexConfig), ("config", Path)):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), kind):
                raise InputError(f"RunOptions.{name}: expected a {kind.__name__} or None, got "
                                 f"{type(getattr(self, name)).__name__}")

    def config_file(self) -> Path | None:
        """The TOML file the run reads: `config`, else ./freshrag.toml if it exists."""
        return self.config or (DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.exists() else None)


def _corpus(value: object, index: object) -> Path | None:
    """RunOptions.corpus as a Path, or None; one the index names already is taken from it."""
    if value is None:
        return index.corpus if isinstance(index, IndexConfig) else None
    if not isinstance(value, (str, os.PathLike)) or os.fspath(value) in ("", b"") \
            or not isinstance(os.fspath(value), str):
        raise InputError(f"RunOptions.corpus: expected a corpus directory (a path, not empty) "
                         f"or None, got {value!r:.80}")
    path = Path(value)
    if isinstance(index, IndexConfig) and index.corpus not in (None, path):
        raise InputError(f"RunOptions.corpus: {path}, and the index names another corpus "
                         f"({index.corpus}); give one")
    return path


def _shard(value: object) -> Shard | None:
    """RunOptions.shard as a Shard: given as one, as 'i/N', or None."""
    if value is None or isinstance(value, Shard):
        return value
    if not isinstance(value, str):
        raise InputError(f"RunOptions.shard: expected a Shard or 'i/N', got "
                         f"{type(value).__name__}")
    try:
        return parse_shard(value)
    except ShardError as err:
        raise InputError(f"RunOptions.shard: {err}") from None


def run_options(options: RunOptions | None, values: Mapping[str, Any]) -> RunOptions:
    """`options` with `values` (RunOptions' fields by name) over it; an unknown name is refused."""
    known = {f.name for f in fields(RunOptions)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise InputError(f"unknown run option(s) {unknown}; RunOptions has: {', '.join(known)}")
    if options is not None and not isinstance(options, RunOptions):
        raise InputError(f"options: expected a RunOptions, got {type(options).__name__}")
    base = {f.name: getattr(options, f.name) for f in fields(RunOptions)} if options else {}
    if isinstance(values.get("scorers"), list):
        values = {**values, "scorers": tuple(values["scorers"])}
    return RunOptions(**{**base, **values})


def dataset_of(dataset: Dataset | str | Path | None) -> Dataset:
    """A loaded dataset, a dataset directory's, or the example dataset shipped with freshrag."""
    if isinstance(dataset, Dataset):
        return dataset
    if dataset is not None and not isinstance(dataset, (str, Path)):
        raise InputError(f"dataset: expected a Dataset or a dataset directory, got "
                         f"{type(dataset).__name__}")
    return load_dataset_dir(Path(dataset) if dataset is not None else example_dir())


def settings_of(roles: Roles, config_file: Path | None) -> LLMSettings:
    """The roles' settings: `roles` as given, over freshrag.toml and the FRESHRAG_* variables."""
    if isinstance(roles, LLMSettings):
        return roles
    if isinstance(roles, CommandLine):
        return load_settings(config_file, command_line=roles)
    if isinstance(roles, str):
        return load_settings(config_file, command_line=CommandLine(
            model=checked_value("model", roles, "roles")))
    if roles is not None and not isinstance(roles, Mapping):
        raise InputError(f"roles: expected LLMSettings, a model's name or a mapping of role to "
                         f"model, got {type(roles).__name__}")
    unknown = sorted(set(roles or {}) - set(ROLES))
    if unknown:
        raise InputError(f"roles: unknown role(s) {unknown}; roles: {', '.join(ROLES)}")
    return load_settings(config_file, command_line=CommandLine(role_models=tuple(
        (role, checked_value("model", model, f"roles[{role!r}]"))
        for role, model in (roles or {}).items())))


def system_sources(systems: Systems, dataset: Dataset | None,
                   config_file: Path | None) -> list[SystemSource]:
    """Each system ready to build, named once: specs as --systems takes them (built-in, a file,
    a module, an entry point, a service of [systems] in `config_file`, an answers file matched to
    `dataset`), resolved sources, or the caller's own classes, factories and objects."""
    if isinstance(systems, str):
        return _specs(systems, dataset, config_file)
    items = list(systems.items()) if isinstance(systems, Mapping) else \
        [(None, item) for item in _sequence(systems)]
    found: dict[str, SystemSource] = {}
    for name, item in items:
        sources = (_specs(f"{name}={item}" if name else item, dataset, config_file)
                   if isinstance(item, str) else [_own(item, name)])
        for source in sources:
            if source.name in found:
                raise InputError(f"systems: two systems named {source.name!r}; name one apart")
            found[source.name] = source
    if not found:
        raise InputError("systems: no system given")
    return list(found.values())


def _specs(specs: str, dataset: Dataset | None, config_file: Path | None) -> list[SystemSource]:
    services = (services_from(config_table(config_file, "systems"), str(config_file), SYSTEMS)
                if config_file else {})
    return resolve_all(specs, SYSTEMS, services, dataset.questions if dataset else None)


def _sequence(systems: Any) -> Iterable[Any]:
    if isinstance(systems, (list, tuple)):
        return systems
    raise InputError(f"systems: expected names, a list of systems or a mapping of name to "
                     f"system, got {type(systems).__name__}")


def _own(item: Any, name: str | None) -> SystemSource:
    """The caller's own system: a source as given, a class or factory taking the run's
    SystemContext, or an object that answers already (its calls count only as it returns them)."""
    if isinstance(item, SystemSource):
        return item if name in (None, item.name) else replace(item, name=_usable(str(name)))
    built = not inspect.isclass(item) and callable(getattr(item, "answer", None))
    if not built and not callable(item):
        raise InputError(f"systems: {item!r:.80} is neither a system's name, a class or "
                         f"factory taking the run's SystemContext, nor an object with "
                         f"answer(question)")
    code = type(item) if built else item
    own = getattr(item, "name", None)
    chosen = _usable(name or (own if isinstance(own, str) else str(getattr(code, "__name__", ""))))
    if chosen in SYSTEMS and SYSTEMS[chosen] is not item:
        raise InputError(f"systems: {chosen!r} is a built-in system's name; name yours apart, "
                         f"in a mapping {{NAME: system}}")
    return SystemSource(chosen, _answering(item) if built else item, "object", _where(code),
                        _source_hash(code),
                        description=(inspect.getdoc(code) or "").split("\n\n")[0])


def _usable(name: str) -> str:
    if not NAME.match(name):
        raise InputError(f"systems: {name!r} is not a usable name (letters, digits, '_', '.', "
                         f"'-'; up to 64); name it in a mapping {{NAME: system}}")
    return name


def _answering(system: Any) -> Callable[..., Any]:
    """A factory that gives the built `system`, saying what it does as the system says."""
    def factory(context: Any) -> Any:
        return system

    for flag in ("uses_index", "uses_date", "uses_steps", "uses_endpoint"):
        setattr(factory, flag, bool(getattr(system, flag, False)))
    return factory


def _where(code: Any) -> str:
    return f"{getattr(code, '__module__', '?')}:{getattr(code, '__qualname__', type(code).__name__)}"


def _source_hash(code: Any) -> str | None:
    """The SHA-256 of the system's source code, so that a resume with changed code is refused;
    None where Python keeps no source (code typed at a bare interpreter prompt)."""
    try:
        return hashlib.sha256(inspect.getsource(code).encode()).hexdigest()
    except (OSError, TypeError):
        return None


def _whole(name: str, value: Any, low: int, high: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (
            high is not None and value > high):
        bound = f"from {low:,} to {high:,}" if high is not None else f"from {low:,}"
        raise InputError(f"RunOptions.{name}: expected a whole number {bound}, got {value!r:.80}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _date(name: str, value: Any) -> None:
    try:
        parse_date(value)
    except ValueError as err:
        raise InputError(f"RunOptions.{name}: {err}") from None
