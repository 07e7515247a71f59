"""The types of the `freshrag` command's options: every value is checked when it is parsed.

argparse puts the option's name before the message (`argument --limit: expected a whole number
from 1 to 1,000,000,000, got '0'`) and exits with status 2, so that a bad value is refused before
any file is written or any endpoint called. Every numeric option has a range; the message states
it.
"""

from __future__ import annotations

import argparse
import math
import re
from datetime import date
from pathlib import Path
from typing import Callable, Iterable

from freshrag.core.config import header_problem, url_problem

MAX_SEED = 2**31 - 1  # fits every server's seed (llama.cpp's is 32 bits, and -1 means "random")


def whole(low: int, high: int) -> Callable[[str], int]:
    """A whole number from `low` to `high`, written in ASCII digits."""

    def parse(text: str) -> int:
        match = re.fullmatch(r"\s*([+-]?[0-9]{1,40})\s*", text)
        value = int(match.group(1)) if match else None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {low:,} to {high:,}, got {text!r:.80}")
        return value

    parse.low, parse.high = low, high  # type: ignore[attr-defined]  # for the tests' generators
    return parse


def share(text: str) -> float:
    """A number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {text!r:.80}")
    return value


def shares(text: str) -> tuple[float, ...]:
    """Distinct numbers from 0 to 1, comma-separated (the text weights a scan tries)."""
    values = tuple(share(part) for part in text.split(","))
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"expected distinct values, got {text!r:.80}")
    return values


def mix_shares(text: str) -> dict[str, float]:
    """A traffic composition FRESH:CONTROL:GENERAL, three shares from 0 to 1 adding up to 1."""
    parts = text.split(":")
    try:
        values = [float(part) for part in parts] if len(parts) == 3 else []
    except ValueError:
        values = []
    if len(values) != 3 or not all(0 <= v <= 1 for v in values) or abs(sum(values) - 1) > 1e-6:
        raise argparse.ArgumentTypeError(f"expected FRESH:CONTROL:GENERAL, three shares from 0 "
                                         f"to 1 adding up to 1 (e.g. 0.1:0.6:0.3), got {text!r:.80}")
    return dict(zip(("fresh", "control", "general"), values))


def iso_date(text: str) -> str:
    """A calendar date written YYYY-MM-DD."""
    try:
        if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
            raise ValueError
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date as YYYY-MM-DD, got {text!r:.80}") \
            from None


def url(text: str) -> str:
    """An http(s)://host[:port][/path] URL."""
    problem = url_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{text!r:.200} is not a URL: {problem} "
                                         f"(expected http(s)://host[:port][/path])")
    return text


def header(text: str) -> str:
    """Text sent as an HTTP header (the User-Agent)."""
    problem = header_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def name(text: str) -> str:
    """A name written into results (a dataset, a system, a model): non-empty, printable, without
    surrounding whitespace."""
    if not text.strip() or text != text.strip() or not text.isprintable():
        raise argparse.ArgumentTypeError(f"expected a non-empty printable name without "
                                         f"surrounding whitespace, got {text!r:.200}")
    return text


def out_dir(text: str) -> Path:
    """A directory to write into: it may not exist yet, but must not be a file."""
    path = Path(text)
    if not text or (path.exists() and not path.is_dir()):
        raise argparse.ArgumentTypeError(f"{text!r:.200} exists and is not a directory"
                                         if text else "expected a directory, got ''")
    return path


def choices(known: Iterable[str]) -> Callable[[str], tuple[str, ...]]:
    """A comma-separated list of names, each one of `known`, none twice, at least one."""
    allowed = tuple(known)

    def parse(text: str) -> tuple[str, ...]:
        names = tuple(part.strip() for part in text.split(",") if part.strip())
        unknown = [part for part in names if part not in allowed]
        if not names or unknown or len(set(names)) != len(names):
            raise argparse.ArgumentTypeError(
                f"expected names from {', '.join(allowed)}, comma-separated, each once; "
                f"got {text!r:.200}")
        return names

    return parse


def _positive(what: str, high: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and 0 < value <= high):
            raise argparse.ArgumentTypeError(f"expected {what} above 0 and at most {high:,g}, "
                                             f"got {text!r:.80}")
        return value
    return parse


dollars = _positive("US dollars", 1_000_000)  # --max-cost
seconds = _positive("seconds", 3600)          # --batch-poll
