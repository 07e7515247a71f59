"""A shard of a run: one task's slice of the plan's pairs on a Slurm array or a set of Kubernetes
Jobs, joined afterwards by `freshrag merge` (docs/running.md#on-a-slurm-array-or-kubernetes-jobs).

A pair belongs to shard `1 + H(question id, system) mod N`, H a SHA-256: never its position, so
shard i of N holds the same pairs whatever order the dataset lists its questions in, whatever
other questions or systems the run has, and whichever of the other shards ran. Every epoch of a
pair goes with it. The shard is recorded in the run directory's manifest (`shard`), and a
directory holding one shard is resumed with the same `--shard` only.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from freshrag.core.errors import UserError

MAX_SHARDS = 100_000  # more tasks than any array a scheduler takes


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count` (1 <= index <= count), as `--shard index/count` names it."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not (isinstance(self.count, int) and isinstance(self.index, int)
                and 1 <= self.count <= MAX_SHARDS and 1 <= self.index <= self.count):
            raise ShardError(f"a shard is i/N with 1 <= i <= N <= {MAX_SHARDS:,}, got "
                             f"{self.index!r:.40}/{self.count!r:.40}")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, question_id: str, system: str) -> bool:
        """Whether the pair of `question_id` and `system` is this shard's."""
        return slot(question_id, system, self.count) == self.index

    def record(self) -> dict[str, int]:
        """What the manifest keeps of it."""
        return {"index": self.index, "count": self.count}


class ShardError(UserError, ValueError):
    """A shard that cannot be: not i/N, or i outside 1..N."""


def slot(question_id: str, system: str, count: int) -> int:
    """The shard (1..count) of the pair of `question_id` and `system`."""
    digest = hashlib.sha256(f"{question_id}\x00{system}".encode()).digest()
    return 1 + int.from_bytes(digest[:8], "big") % count


def parse_shard(text: str) -> Shard:
    """`i/N` as a Shard; ShardError says what is wrong."""
    match = re.fullmatch(r"\s*([0-9]{1,9})\s*/\s*([0-9]{1,9})\s*", text)
    if not match:
        raise ShardError(f"expected i/N (shard i of N, e.g. 2/8), got {text!r:.80}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1:
        raise ShardError(f"{text.strip()}: N must be at least 1")
    if not 1 <= index <= count:
        raise ShardError(f"{text.strip()}: i must be from 1 to N ({count})")
    return Shard(index, count)


def shard_of(manifest: Mapping[str, Any] | None) -> Shard | None:
    """The shard a run directory's manifest records; None: a whole run (or none yet)."""
    record = (manifest or {}).get("shard")
    if not isinstance(record, dict):
        return None
    try:
        return Shard(record.get("index"), record.get("count"))  # type: ignore[arg-type]
    except ShardError:
        return None


def check_shard(run_dir: Path, shard: Shard | None, manifest: Mapping[str, Any] | None,
                pairs: Iterable[tuple[str, str]]) -> None:
    """Refuse to write `shard` (None: the whole run) into `run_dir`, whose manifest records
    another shard or none, or whose rows (the `pairs` of question id and system it holds) lie
    outside it: the directory would hold pairs of two slices, and a merge would count them
    twice. A manifest without a shard and no pair outside it takes the shard."""
    recorded = shard_of(manifest)
    if recorded == shard or manifest is None:
        return
    if recorded is not None:
        again = f"resume it with --shard {recorded}" if shard else (
            f"resume it with --shard {recorded}, or join the shards with `freshrag merge`")
        raise ShardError(f"{run_dir}: holds shard {recorded} of a run, not "
                         f"{f'shard {shard}' if shard else 'a whole run'}; {again}, or "
                         f"choose another --out")
    outside = next(((question, system) for question, system in pairs
                    if shard is not None and not shard.holds(question, system)), None)
    if outside:
        raise ShardError(f"{run_dir}: holds pairs outside shard {shard} (question "
                         f"{outside[0]}, system {outside[1]}): a run that was not sharded, or "
                         f"of another shard; write shard {shard} into another --out")
