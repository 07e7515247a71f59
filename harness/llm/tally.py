"""Calls this process made to models, per role: what the demo's stage table counts
(harness/cli/commands/demo.py). Replies from the response cache are not counted."""

from __future__ import annotations

import threading

from freshrag.core.types import Usage


class CallTally:
    """Calls made in this process (cache hits not counted), per role: the demo's stage table."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.by_role: dict[str, list[int]] = {}  # role -> [calls, input tokens, output tokens]

    def add(self, role: str, usage: Usage) -> None:
        with self._lock:
            counts = self.by_role.setdefault(role, [0, 0, 0])
            counts[0] += 1
            counts[1] += usage.input
            counts[2] += usage.output

    def snapshot(self) -> dict[str, tuple[int, int, int]]:
        with self._lock:
            return {role: (calls, inputs, outputs)
                    for role, (calls, inputs, outputs) in self.by_role.items()}


TALLY = CallTally()
