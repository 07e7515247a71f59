"""The gate's rules, read strictly from a rules file or freshrag.toml (docs/ci.md#the-rules):
`[[gate.rule]]` tables, every problem in them named by file, line and key.

A rule is one table: `kind` (one of KINDS), the system it is about (`system`, or
`baseline_system` and `candidate_system` when the names differ) and the thresholds its kind
takes, nothing else. tomllib keeps no positions, so a rule's lines are found in the text: each
`[[gate.rule]]` header and the `key =` lines under it (`_positions`); a file whose rules are
written inline is named by the rule's place in the list instead.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from freshrag.core.config import ConfigError, read_config
from freshrag.core.textfile import read_text

METRICS = ("truthfulness", "relevance", "score")  # score: truthfulness + relevance
PROBED_RUNS = ("candidate", "both")
SYSTEM_KEYS = ("system", "baseline_system", "candidate_system")
# kind -> (its threshold, whether it names a system, its other keys with their default)
KINDS: dict[str, tuple[str | None, str, dict[str, Any]]] = {
    "difference": ("lower_above", "required", {"metric": "truthfulness"}),
    "failed": ("at_most", "optional", {}),
    "judge_probes": (None, "none", {"runs": "candidate"}),
    "tokens_per_correct": ("at_most_increase", "required", {}),
    "cost_per_correct": ("at_most_increase", "required", {}),
}
COMMON = ("kind", "name", *SYSTEM_KEYS)
_HEADER = re.compile(r"^\s*\[\[\s*gate\s*\.\s*rule\s*\]\]")
_TABLE = re.compile(r"^\s*\[")
_KEY = re.compile(r"""^\s*["']?([A-Za-z0-9_-]+)["']?\s*=""")


class GateRulesError(ConfigError):
    """A rules file the gate cannot use; the message names file, line and key."""


@dataclass(frozen=True)
class Rule:
    """One checked rule. `baseline_system` and `candidate_system` are None where the kind
    names no system (or `failed` over every system); `threshold` is None for judge_probes."""

    kind: str
    baseline_system: str | None
    candidate_system: str | None
    threshold: float | None
    metric: str = "truthfulness"
    runs: str = "candidate"
    name: str | None = None
    where: str = ""  # "gate.toml:12", for messages about the rule

    @property
    def systems(self) -> str:
        """How the rule names its systems: `naive`, or `naive -> naive-v2`."""
        if self.baseline_system == self.candidate_system:
            return self.baseline_system or "every system"
        return f"{self.baseline_system} -> {self.candidate_system}"


def read_rules(path: Path, from_config: bool = False) -> list[Rule]:
    """The rules of `path`: a rules file, whose top level holds `gate` only, or (`from_config`)
    freshrag.toml's `[gate]` table, the rest of that file checked as every command checks it."""
    text = read_text(path, GateRulesError)
    if from_config:
        data = read_config(path)
    else:
        data = _parsed(path, text)
        if unknown := sorted(set(data) - {"gate"}):
            raise GateRulesError(f"{path}{_line_of(text, unknown[0])}: unknown key "
                                 f"{unknown[0]!r}; a rules file holds [gate] and its "
                                 f"[[gate.rule]] tables only")
    gate = data.get("gate")
    if not isinstance(gate, dict):
        raise GateRulesError(f"{path}: no [gate] table; write each rule as a [[gate.rule]] "
                             f"table (docs/ci.md)")
    if unknown := sorted(set(gate) - {"rule"}):
        raise GateRulesError(f"{path}{_line_of(text, unknown[0])}: [gate]: unknown key "
                             f"{unknown[0]!r}; [gate] holds [[gate.rule]] tables only")
    tables = gate.get("rule")
    if not isinstance(tables, list) or not tables:
        raise GateRulesError(f"{path}: [gate] has no rule; add a [[gate.rule]] table")
    positions = _positions(text, len(tables))
    return [checked_rule(table, _where(path, i, positions))
            for i, table in enumerate(tables)]


def _parsed(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:  # its message ends "(at line N, column M)"
        raise GateRulesError(f"{path}: not valid TOML: {err}") from None
    except (ValueError, RecursionError) as err:  # a 5,000-digit number; nesting
        raise GateRulesError(f"{path}: not readable TOML: {str(err).split(';')[0]}") from None


@dataclass(frozen=True)
class _Where:
    """Where a rule is written: its header's line and its keys' lines, when found."""

    path: Path
    index: int
    header: int | None
    keys: dict[str, int]

    def __call__(self, key: str | None = None) -> str:
        rule = f"[[gate.rule]] {self.index + 1}"
        return f"{self.place(key)}: {rule}" + (f" key {key!r}" if key else "")

    def place(self, key: str | None = None) -> str:
        """`file:line` of the key (of the rule's header where the key is not found)."""
        line = self.keys.get(key, self.header) if key else self.header
        return f"{self.path}:{line}" if line else str(self.path)


def _where(path: Path, index: int,
           positions: list[tuple[int, dict[str, int]]] | None) -> _Where:
    if positions is None:
        return _Where(path, index, None, {})
    header, keys = positions[index]
    return _Where(path, index, header, keys)


def _positions(text: str, count: int) -> list[tuple[int, dict[str, int]]] | None:
    """Per `[[gate.rule]]` header, its line and its keys' lines (1-based); None unless there is
    one header per rule (rules written inline, `rule = [{...}]`)."""
    found: list[tuple[int, dict[str, int]]] = []
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        if _HEADER.match(line):
            found.append((number, {}))
            inside = True
        elif _TABLE.match(line):
            inside = False
        elif inside and (key := _KEY.match(line)):
            found[-1][1].setdefault(key.group(1), number)
    return found if len(found) == count else None


def _line_of(text: str, key: str) -> str:
    """`:N`, the first line that sets `key` or opens its table; empty where it is not found (a
    dotted or inline key)."""
    header = re.compile(r"^\s*\[+\s*[\"']?" + re.escape(key) + r"[\"']?\s*[.\]]")
    for number, line in enumerate(text.splitlines(), 1):
        if ((found := _KEY.match(line)) and found.group(1) == key) or header.match(line):
            return f":{number}"
    return ""


def checked_rule(table: Any, where: _Where) -> Rule:
    """One `[[gate.rule]]` table as a Rule, or a GateRulesError naming what is wrong."""
    if not isinstance(table, dict):
        raise GateRulesError(f"{where()}: must be a table, got {table!r:.80}")
    kind = table.get("kind")
    if kind not in KINDS:
        raise GateRulesError(f"{where('kind' if 'kind' in table else None)}: kind must be one "
                             f"of {', '.join(KINDS)}; got {kind!r:.80}")
    threshold_key, naming, extra = KINDS[kind]
    known = (*COMMON, *([threshold_key] if threshold_key else []), *extra)
    if unknown := [key for key in table if key not in known]:
        raise GateRulesError(f"{where(unknown[0])}: not a key of a {kind} rule; its keys: "
                             f"{', '.join(known)}")
    if naming == "none" and (named := [key for key in SYSTEM_KEYS if key in table]):
        raise GateRulesError(f"{where(named[0])}: a {kind} rule names no system")
    baseline, candidate = _systems(table, where, naming == "required")
    threshold = _threshold(kind, threshold_key, table, where) if threshold_key else None
    metric = _choice(table, "metric", METRICS, extra.get("metric"), where)
    runs = _choice(table, "runs", PROBED_RUNS, extra.get("runs"), where)
    name = table.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise GateRulesError(f"{where('name')}: must be a text that is not empty")
    return Rule(kind, baseline, candidate, threshold, metric or "truthfulness",
                runs or "candidate", name, where.place())


def _systems(table: dict[str, Any], where: _Where,
             required: bool) -> tuple[str | None, str | None]:
    """`system`, or both of `baseline_system` and `candidate_system`."""
    for key in SYSTEM_KEYS:
        if key in table and (not isinstance(table[key], str) or not table[key].strip()):
            raise GateRulesError(f"{where(key)}: must be a system's name, got {table[key]!r:.80}")
    pair = ("baseline_system" in table, "candidate_system" in table)
    if "system" in table:
        if any(pair):
            key = "baseline_system" if pair[0] else "candidate_system"
            raise GateRulesError(f"{where(key)}: give `system`, or `baseline_system` and "
                                 f"`candidate_system`, not both")
        return table["system"], table["system"]
    if pair == (True, True):
        return table["baseline_system"], table["candidate_system"]
    if any(pair):
        given = "baseline_system" if pair[0] else "candidate_system"
        raise GateRulesError(f"{where(given)}: `baseline_system` and `candidate_system` go "
                             f"together")
    if required:
        raise GateRulesError(f"{where()}: a {table['kind']} rule needs `system` (or "
                             f"`baseline_system` and `candidate_system`)")
    return None, None


def _threshold(kind: str, key: str, table: dict[str, Any], where: _Where) -> float:
    if key not in table:
        raise GateRulesError(f"{where()}: a {kind} rule needs `{key}`")
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise GateRulesError(f"{where(key)}: must be a finite number, got {value!r:.80}")
    low, high = {"at_most": (0, 1), "at_most_increase": (-1, math.inf),
                 "lower_above": (-8, 8)}[key]
    if not low <= value <= high:
        shown = f"from {low} to {high}" if high != math.inf else f"at least {low}"
        raise GateRulesError(f"{where(key)}: must be {shown}, got {value!r}")
    return float(value)


def _choice(table: dict[str, Any], key: str, allowed: tuple[str, ...], default: str | None,
            where: _Where) -> str | None:
    if key not in table:
        return default
    if table[key] not in allowed:
        raise GateRulesError(f"{where(key)}: must be one of {', '.join(allowed)}; "
                             f"got {table[key]!r:.80}")
    return str(table[key])


def rules_from_tables(tables: list[dict[str, Any]], source: str = "rules") -> list[Rule]:
    """Rules given as Python dicts of the tables' shape (the pytest plugin's), checked alike."""
    if not isinstance(tables, list) or not tables:
        raise GateRulesError(f"{source}: give at least one rule, a dict shaped as a "
                             f"[[gate.rule]] table")
    return [checked_rule(table, _Where(Path(source), i, None, {}))
            for i, table in enumerate(tables)]
