"""A user's own system that misbehaves, for the chaos benchmark (tests/benchmarks/bench_chaos.py):
while the file named by $CHAOS_FAULTS exists, a seeded draw per question makes its answer one of
OWN_FAULTS instead of a good one; every question it is asked is appended to $CHAOS_ASKED.

    --systems own=tests/support/chaos_system.py:Chaotic

`draw` is the one seeded draw of the benchmark (the service's faults use it too), so that the
benchmark knows beforehand which pairs block.
"""

from __future__ import annotations

import hashlib
import os
import random
import threading

from freshrag import Question, SystemAnswer, SystemContext

# name -> what the system does instead of answering
OWN_FAULTS = ("text not text", "retrievals not a count", "details not an object",
              "details JSON cannot hold", "a lone surrogate", "SystemExit", "not a SystemAnswer",
              "blocks forever")


def draw(who: str, question_id: str, seed: int, rate: float, names: tuple[str, ...]) -> str | None:
    """The fault `who` gives for this question, or None (at `rate`, by a seeded hash)."""
    chance = random.Random(hashlib.sha256(f"{who}|{question_id}|{seed}".encode()).digest())
    return chance.choice(names) if chance.random() < rate else None


class Chaotic:
    """Answers at once, but for the question's drawn fault."""

    def __init__(self, context: SystemContext):
        self.seed = int(os.environ.get("CHAOS_SEED", "0"))
        self.rate = float(os.environ.get("CHAOS_RATE", "0.3"))

    def answer(self, question: Question) -> SystemAnswer:
        with open(os.environ["CHAOS_ASKED"], "a", encoding="utf-8") as asked:
            asked.write(question.id + "\n")
        fault = (draw("own", question.id, self.seed, self.rate, OWN_FAULTS)
                 if os.path.exists(os.environ["CHAOS_FAULTS"]) else None)
        text = f"own: {question.gold_title} has four bridges."
        if fault == "blocks forever":
            threading.Event().wait()  # its own wait, which nothing ends
        if fault == "SystemExit":
            raise SystemExit(3)
        wrong = {"text not text": SystemAnswer(7),  # type: ignore[arg-type]
                 "retrievals not a count": SystemAnswer(text, retrievals="two"),  # type: ignore[arg-type]
                 "details not an object": SystemAnswer(text, details=["a"]),  # type: ignore[arg-type]
                 "details JSON cannot hold": SystemAnswer(text, details={"seen": {1, 2}}),
                 "a lone surrogate": SystemAnswer(f"own: {question.gold_title} \ud800 bridges."),
                 "not a SystemAnswer": text}
        return wrong.get(fault or "", SystemAnswer(text))  # type: ignore[return-value]
