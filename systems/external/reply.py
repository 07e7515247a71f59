"""A service's JSON reply read at its paths (docs/own-system.md#a-service-behind-http).

Each value a service reports is read at a dotted path of its reply. The default paths read the
token counts under OpenAI's names too, the Responses API's (`usage.input_tokens`) and Chat
Completions' (`usage.prompt_tokens`), so that a service answering as OpenAI does is counted with
no configuration. A reply's fields that no path read are kept in the row (`details.service.
unread`) and named once per service in the run's output (`unread_lines`): a value under a name
freshrag does not look for is then said, not silently unknown.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from freshrag.core.summary import AnswerSummary
from freshrag.systems.external.reported import REPORTED

DEFAULT_REPLY = {"answer": "answer", "contexts": "contexts", "input_tokens": "usage.input_tokens",
                 "output_tokens": "usage.output_tokens", "retrievals": "retrievals",
                 "decision": "decision", "steps": "steps", "messages": "messages"}
# Where a value is looked for too while its path is the default one. Kept out of the settings, so
# that a service's identity (the hash of its settings) stays what it was before they were read.
ALSO = {"input_tokens": ("usage.prompt_tokens",), "output_tokens": ("usage.completion_tokens",)}
TOTAL = "total_tokens"  # beside both counts read, their sum: it says nothing more
MAX_KEPT, MAX_NAME = 50, 80  # a reply of thousands of fields is named in part, in the row too


def reply_values(reply: Mapping[str, Any], paths: Mapping[str, str]) -> tuple[dict[str, Any],
                                                                              list[str]]:
    """The value of each of REPORTED at its path in `reply` (None where absent, or where its path
    is "" or not set), and the reply's fields that no path read."""
    values: dict[str, Any] = {}
    read: dict[str, str] = {}
    for name in REPORTED:
        values[name] = None
        for path in candidates(name, paths.get(name)):
            if (found := value_at(reply, path)) is not None:
                values[name], read[name] = found, path
                break
    counts = [read[name].rpartition(".")[0] for name in ("input_tokens", "output_tokens")
              if name in read]
    extra = {f"{counts[0]}.{TOTAL}".lstrip(".")} if len(counts) == 2 and len(set(counts)) == 1 \
        else set()
    return values, unread(reply, {*read.values(), *extra})


def candidates(name: str, path: str | None) -> tuple[str, ...]:
    """Where the value `name` is looked for, in order, when its configured path is `path`."""
    if not path:
        return ()
    return (path, *ALSO.get(name, ())) if path == DEFAULT_REPLY.get(name) else (path,)


def value_at(reply: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path of the reply, or None."""
    value: Any = reply
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def unread(reply: Mapping[str, Any], read: set[str]) -> list[str]:
    """The dotted paths of the fields of `reply` that no path of `read` reaches, each named at its
    highest unread level (`meta`, not each field under it); sorted, the first MAX_KEPT."""
    passed = {path.rsplit(".", depth)[0] for path in read for depth in range(1, path.count(".") + 1)}
    found: list[str] = []
    stack: list[tuple[str, Mapping[str, Any]]] = [("", reply)]
    while stack:
        prefix, node = stack.pop()
        for key, value in node.items():
            path = prefix + str(key)
            if path in read:
                continue
            if path in passed and isinstance(value, dict):
                stack.append((path + ".", value))
            else:
                found.append(path[:MAX_NAME])
    return sorted(found)[:MAX_KEPT]


def unread_lines(answers: Iterable[AnswerSummary]) -> list[str]:
    """One line per service whose replies held fields that no path read, each field named once
    however many replies held it: `svc: reply fields not read: meta, usage.cached`."""
    by_system: dict[str, set[str]] = {}
    for answer in answers:  # core/summary.py decided
        if answer.unread:
            by_system.setdefault(answer.system, set()).update(answer.unread)
    return [f"{system}: reply fields not read: {_listed(sorted(names))} (read one by setting "
            f"its path in [systems.{system}.reply], docs/own-system.md#a-service-behind-http)"
            for system, names in by_system.items()]


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_KEPT])
    return shown + (f" and {len(names) - MAX_KEPT} more" if len(names) > MAX_KEPT else "")
