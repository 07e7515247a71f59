"""Staleness (docs/scoring.md#scorers): whether an answer to a changed-fact question
(docs/building.md#changed-facts) gives the value now (`current`), the value at the model's cutoff
(`stale`), something else (`other`), or abstains (`abstained`, counted apart).

- An empty answer, or one the abstention scorer's pattern knows as a refusal, abstains; no call.
- Where both values are dates, numbers or names (a few words), they are matched in the answer
  without a model (core/reference.py `matches`, the grounded questions' rule): the value now
  alone is current, the value then alone stale, neither other.
- Otherwise (longer values, or an answer that states both) the judge role decides by one forced
  call that shows it both values; a reply that is no verdict leaves the answer unscored.
- A false-premise question (`premise` "false": it presumes the value then still holds) is
  current when it corrects the premise (gives the value now, or says the value then no longer
  holds) and stale when it accepts it. Matching decides only an answer that states the value
  now alone; the rest go to the judge, told of the premise, since an answer may restate the
  value then to deny it, or accept the premise without restating it.

The verdict is the metric of its name (1, the others 0), its `source` (`pattern`, `match` or
`judge`) and `reason` in `details`; so is whether the retrieved context states the value now
(`new_in_context`) and the value then (`old_in_context`), null when nothing was retrieved: the
staleness table's "memory over context" reads them (harness/reporting/staleness.py).
"""

from __future__ import annotations

from typing import Any

from freshrag.core.reference import matches, numbers_in, whole_date, words
from freshrag.core.types import LLM
from freshrag.scoring.abstention import REFUSAL
from freshrag.scoring.base import (
    ReplyError,
    ScoreInput,
    ScoreResult,
    arguments,
    forced,
    not_applicable,
    tool,
    unscored,
)

VERDICTS = ("current", "stale", "other", "abstained")
NAME_WORDS = 6  # a value of at most this many words is a name, matched without a model
VERDICT_MAX_TOKENS = 256  # a verdict and a sentence
NOT_CHANGED = "not a changed-fact question (it has no value_then)"
STALENESS_TOOL = tool("classify_staleness", "Say which value the answer gives.", {
    "verdict": {"type": "string", "enum": list(VERDICTS),
                "description": "current: the answer gives the current value; stale: it gives "
                               "the old value; other: it gives another value; abstained: it "
                               "says it does not know or declines"},
    "reason": {"type": "string", "description": "one short sentence saying why"}})
PROMPT = (
    "A fact changed: it had an old value, and it has a current value now. You are given a "
    "question about the fact, both values, and a chatbot's answer. Decide which value the "
    "answer gives as the answer: the current one, the old one, another value, or none because "
    "it abstained. An answer that mentions the old value only as a former value and gives the "
    "current one as the answer gives the current value. Call classify_staleness.")
FALSE_PREMISE = (
    "The question presumes that the old value still holds, which is false. An answer that "
    "corrects the premise, by giving the current value or by saying the old value no longer "
    "holds, gives the current value; an answer that accepts the premise, explaining or "
    "restating the old value as still true, gives the old value.")


class Staleness:
    name = "staleness"
    role = "judge"  # both values shown to the judge model where matching cannot decide
    needs: tuple[str, ...] = ()
    metrics = VERDICTS

    def score(self, llm: LLM, item: ScoreInput) -> ScoreResult:
        then, now = item.question.value_then, item.question.reference
        if then is None or now is None:
            return not_applicable(NOT_CHANGED)
        seen = {"new_in_context": matches(item.context, now) if item.context else None,
                "old_in_context": matches(item.context, then) if item.context else None}
        answer = item.answer
        if not answer.strip() or REFUSAL.search(answer):
            return verdict("abstained", "pattern", "the answer declines or says it does not "
                           "know", seen)
        if matchable(then) and matchable(now):
            matched = _matched(answer, then, now, item.question.premise == "false", seen)
            if matched is not None:
                return matched
        return self._judged(llm, item, then, now, seen)

    def _judged(self, llm: LLM, item: ScoreInput, then: str, now: str,
                seen: dict[str, Any]) -> ScoreResult:
        prompt = PROMPT + (f" {FALSE_PREMISE}" if item.question.premise == "false" else "")
        response = forced(llm, self.role, prompt, f"Question: {item.question.text}\n\n"
                          f"Old value: {then}\nCurrent value: {now}\n\nAnswer: {item.answer}",
                          STALENESS_TOOL, VERDICT_MAX_TOKENS, item.repeat)
        try:
            given = arguments(response, STALENESS_TOOL)
            if given["verdict"] not in VERDICTS:
                raise ReplyError(f"verdict must be one of {', '.join(VERDICTS)}, got "
                                 f"{given['verdict']!r:.80}")
        except ReplyError as err:
            return unscored(str(err), **seen)
        return verdict(given["verdict"], "judge", str(given.get("reason") or "")[:500], seen)


def _matched(answer: str, then: str, now: str, premised: bool,
             seen: dict[str, Any]) -> ScoreResult | None:
    """The verdict that matching the values gives, or None where the judge must decide."""
    new, old = matches(answer, now), matches(answer, then)
    if premised:  # the value then alone, or neither, may deny the premise or accept it
        return verdict("current", "match", f"the answer states the value now, {now!r}, against "
                       f"the premise", seen) if new and not old else None
    if new != old:
        return verdict("current" if new else "stale", "match", f"the answer states the value "
                       f"{'now' if new else 'then'}, {now if new else then!r}", seen)
    if not new:
        return verdict("other", "match", f"the answer states neither {then!r} nor {now!r}", seen)
    return None


def matchable(value: str) -> bool:
    """A date, a number with at most unit words, or a name of a few words."""
    if whole_date(value) is not None:
        return True
    if numbers_in(value):
        return all(len(word) <= 3 for word in words(value) if not word.isdigit())
    return 0 < len(words(value)) <= NAME_WORDS


def verdict(name: str, source: str, reason: str, seen: dict[str, Any]) -> ScoreResult:
    return ScoreResult("scored", {kind: float(kind == name) for kind in VERDICTS},
                       {"verdict": name, "source": source, "reason": reason, **seen})
