"""What may write into a run directory, and when: one writer at a time, one kind of contents, and
one set of the settings that decide the answers.

- **Lock.** `locked(run_dir)` holds `run_dir/.lock` (an `fcntl.flock` on a file holding the
  holder's pid) for the whole of a run, an import, a score pass, a build or a labelling of a
  dataset; a second writer is refused at once, naming the first one's pid. The kernel drops
  the lock when its process ends, however it ends. A `.lock` that is a symbolic link, a hard
  link or no plain file is refused, never written through.
- **Kind.** A directory holds a `freshrag run`, runs imported by `freshrag import-legacy`, or a
  dataset built by `freshrag build`, and each command refuses the others' directories before it
  writes. Manifests say their `kind`; older ones are told apart by their content.
- **Identity.** A resume may add systems, questions (`--limit`), epochs (`--epochs`), workers
  (`--concurrency`) and the cache, which change no answer. Everything that does is the run's identity (`identity`), and a
  resume that changes any of it is refused, each difference named with both values, before a
  call is made or a byte written: otherwise one run directory would mix two configurations and
  the report would pool them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from freshrag.core.files import open_no_follow
from freshrag.core.jsonl import ResultsError
from freshrag.core.runfiles import LOCK, MANIFEST

RUN_ROLES = ("answer", "decision", "judge")  # the roles a run calls
# How chunks are found; `embedding_model` is the model that made the vectors as the index names
# it, the local one with its precision (all-MiniLM-L6-v2-bf16), which follows the CPU.
# "engine": the store an index is kept in (qdrant-local, qdrant-edge, qdrant-server), absent
# from runs recorded before it, which are then compared without it
INDEX_SETTINGS = ("chunk_size", "chunk_overlap", "top_k", "text_weight", "embedding_model",
                  "engine")
SOURCE_SETTINGS = ("origin", "sha256", "version")  # of a system, as systems/external/plugins.py records it
DATE_SETTINGS = ("today", "knowledge_cutoff")  # stated only by systems with `uses_date`
STEP_SETTINGS = ("max_steps", "token_budget")  # bound only systems with `uses_steps` (agents)
# The option that sets an identity setting, for the way out of a refusal.
OPTIONS = {"seed": "--seed", "context_tokens": "--context-tokens", "today": "--today",
           "knowledge_cutoff": "--knowledge-cutoff", "top_k": "--top-k",
           "max_steps": "--max-steps", "token_budget": "--token-budget",
           "chunk_size": "--chunk-size", "chunk_overlap": "--chunk-overlap",
           "text_weight": "--text-weight"}
LOCAL_EMBEDDINGS = "all-MiniLM-L6-v2"  # the local model; its index name ends in its precision
KINDS = {"run": "a run of `freshrag run`", "import": "runs imported by `freshrag import-legacy`",
         "dataset": "a dataset built by `freshrag build`"}


class RunDirError(ResultsError):
    """A run directory this command must not write: held by another process, of another kind,
    or holding a run with other settings."""


@contextlib.contextmanager
def locked(run_dir: Path) -> Iterator[None]:
    """Hold the run directory (created if missing) for this process until the block ends."""
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = _open_lock(run_dir / LOCK)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise RunDirError(f"{run_dir}: in use by another freshrag process (pid {holder}); "
                              f"wait for it to end, or stop it, and run again") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the file releases the lock


def holder(run_dir: Path) -> str | None:
    """The pid of the process holding `run_dir` (`locked`) now, or None when none does. Read
    without writing: a reader (the gate) asks before it trusts the directory's rows."""
    try:  # no lock file, a link or a FIFO there: no freshrag process holds it
        fd = os.open(run_dir / LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return None
    except BlockingIOError:
        return os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
    finally:
        os.close(fd)  # closing the file releases the shared lock


def _open_lock(path: Path) -> int:
    """The lock file, opened for writing the holder's pid into it. A symbolic link there is
    refused (a link would have the pid written over the file it points to), and so is anything
    but a plain file of one name: a FIFO (opened without blocking, to be refused) or a file
    hard-linked elsewhere, whose other name would see its content replaced."""
    fd = open_no_follow(path, os.O_RDWR | os.O_CREAT, 0o644,  # a FIFO: refused (core/files.py)
                        fix="remove the link and run again")
    if os.fstat(fd).st_nlink > 1:
        os.close(fd)
        raise RunDirError(f"{path}: has other names (hard links), and freshrag writes its pid "
                          f"into this lock file; remove it and run again")
    return fd


def kind(manifest: Mapping[str, Any]) -> str:
    """"run", "import", "dataset", or "unknown"; manifests written before `kind` by content."""
    if "kind" in manifest:
        return manifest["kind"] if isinstance(manifest["kind"], str) else "unknown"
    if "imports" in manifest:
        return "import"
    if "stages" in manifest:
        return "dataset"
    if "systems" in manifest and "config" in manifest:
        return "run"
    return "unknown"


def check_kind(run_dir: Path, manifest: Mapping[str, Any] | None, expected: str) -> None:
    """Refuse a directory whose manifest says it holds something other than `expected`."""
    if manifest is None or kind(manifest) == expected:
        return
    found = KINDS.get(kind(manifest), f"a {MANIFEST} freshrag does not know")
    raise RunDirError(f"{run_dir}: holds {found}, and this command writes {KINDS[expected]}; "
                      f"write into another --out (`freshrag report` reads several directories "
                      f"together)")


def identity(manifest: Mapping[str, Any], date_systems: Iterable[str],
             step_systems: Iterable[str] = ()) -> dict[str, Any]:
    """The settings of a run's manifest that decide its answers, by name. A setting the run does
    not use is absent: the index's while no system retrieved, the date's while no system that
    states it (in `date_systems`) ran, an agent's bounds while no agent (in `step_systems`) ran;
    so is one an older manifest did not record."""
    config, roles, index = manifest["config"], manifest["llm"]["roles"], manifest.get("index")
    settings = {}
    for role in RUN_ROLES + (("embeddings",) if index else ()):
        settings.update(_pick(roles.get(role, {}), ("model", "base_url"), f"{role}."))
    settings.update(_pick(config, ("seed", "context_tokens")))
    if index:  # a run from before the lexical side retrieved densely: text weight 0
        settings.update(_pick({"text_weight": 0.0, **index}, INDEX_SETTINGS))
        if "corpus" in index:  # its background corpus, by content (none recorded before it)
            settings["corpus"] = (index["corpus"] or {}).get("sha256")
    if set(manifest["systems"]) & set(date_systems):
        settings.update(_pick(config, DATE_SETTINGS))
    if set(manifest["systems"]) & set(step_systems):
        settings.update(_pick(config, STEP_SETTINGS))
    settings.update(_pick(manifest.get("prompts_sha256", {}), manifest.get("prompts_sha256", {}),
                          "prompt."))
    sources = manifest.get("system_sources")
    for name, source in (sources.items() if isinstance(sources, dict) else ()):
        if isinstance(source, dict):  # a system from the user's code: its file hash and version
            settings.update(_pick(source, SOURCE_SETTINGS, f"system.{name}."))
    return settings


def _pick(values: dict[str, Any], names: Iterable[str], prefix: str = "") -> dict[str, Any]:
    return {prefix + name: values[name] for name in names if name in values}


def check_same_run(run_dir: Path, previous: Mapping[str, Any], planned: Mapping[str, Any],
                   date_systems: Iterable[str], step_systems: Iterable[str] = ()) -> None:
    """Refuse to resume the run `previous` records with the settings `planned` records. Only
    settings both use are compared: a prompt that is new, or an index that was not used, cannot
    have shaped the rows already written."""
    date_systems, step_systems = set(date_systems), set(step_systems)
    old = identity(previous, date_systems, step_systems)
    new = identity(planned, date_systems, step_systems)
    changed = [name for name in old if name in new and old[name] != new[name]]
    if "embeddings.model" in changed and "embedding_model" in changed:  # one change, said once
        changed.remove("embedding_model")
    if not changed:
        return
    lines = "\n".join(_line(name, old[name], new[name], previous, planned) for name in changed)
    raise RunDirError(f"{run_dir}: holds a run with other settings; resuming it would mix two "
                      f"configurations in one run:\n{lines}\nwrite into another --out, or "
                      f"resume with the settings in {run_dir / MANIFEST}")


def _line(name: str, old: Any, new: Any, previous: Mapping[str, Any],
          planned: Mapping[str, Any]) -> str:
    if name != "corpus":
        return f"  {name}: was {_show(name, old)}, now {_show(name, new)}" + _way_back(name, old)
    was = (previous.get("index") or {}).get("corpus")
    back = f" (resume with --corpus {was['directory']})" if was else " (resume without --corpus)"
    return f"  corpus: was {_corpus(was)}, now {_corpus(planned['index'].get('corpus'))}{back}"


def _corpus(corpus: Mapping[str, Any] | None) -> str:
    """A background corpus as a refusal names it: its directory and content hash."""
    if not corpus:
        return "(none)"
    return f"{corpus.get('directory')} (sha256 {str(corpus.get('sha256'))[:12]})"


def _show(name: str, value: Any) -> str:
    if value is None:
        return "(not set)"
    hashed = name.startswith("prompt.") or name.endswith(".sha256")
    return str(value)[:12] if hashed else str(value)


def _way_back(name: str, old: Any) -> str:
    if name == "embedding_model" and str(old).startswith(LOCAL_EMBEDDINGS):
        precision = str(old)[len(LOCAL_EMBEDDINGS) + 1:] or "fp32"  # all-MiniLM-L6-v2-int8: int8
        return f" (resume with FRESHRAG_LOCAL_EMBEDDINGS_PRECISION={precision})"
    if name == "engine":  # the record's name of the store, as --engine or --qdrant-url takes it
        return (" (resume with --qdrant-url and the server's URL)" if old == "qdrant-server"
                else f" (resume with --engine {str(old).removeprefix('qdrant-')})")
    return f" (resume with {OPTIONS[name]} {old})" if name in OPTIONS and old is not None else ""
