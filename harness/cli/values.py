"""The values of the `freshrag` command's options (docs/cli.md): each parser turns one argument's
text into its value, or raises argparse's error, which argparse prints after the option's name
(`argument --limit: expected a whole number from 1 to 1,000,000,000, got '0'`) before it exits
with status 2, so that a bad value is refused before any file is written or any endpoint called.
Every numeric parser has a range, and its message states it. The options themselves, and which
command takes which, are harness/cli/options.py's.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from pathlib import Path
from typing import Callable, Iterable

from freshrag.core.config import checked_value, header_problem, masked_url, url_problem
from freshrag.core.dates import DATE_FORM, parse_date
from freshrag.core.errors import UserError
from freshrag.core.types import ROLES

NAME_MAX, PATH_MAX = 255, 4096  # bytes of one name and of a whole path (Linux's <limits.h>)


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
    """A calendar date written YYYY-MM-DD (harness/core/dates.py: no week or compact forms)."""
    try:
        return parse_date(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date as {DATE_FORM}, got {text!r:.80}") \
            from None


def url(text: str) -> str:
    """An http(s)://host[:port][/path] URL."""
    problem = url_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{masked_url(text)!r:.200} is not a URL: {problem} "
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


def path(text: str) -> Path:
    """A path (docs/faults.md#paths-and-names): UTF-8 text, since it is written into manifests
    and reports (a name in another encoding arrives from `os.fsdecode` holding lone surrogates),
    each name at most NAME_MAX bytes and the whole at most PATH_MAX, the limits of Linux's file
    systems, so that the first file written there fails with no traceback."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"{os.fsencode(text)!r:.200} is not UTF-8 text; give "
                                         f"a path whose names are UTF-8") from None
    longest = max(text.split("/"), key=lambda part: len(part.encode("utf-8")))
    if len(longest.encode("utf-8")) > NAME_MAX or size > PATH_MAX:
        what = (f"a name of {len(longest.encode('utf-8')):,} bytes, more than the {NAME_MAX}"
                if size <= PATH_MAX else f"{size:,} bytes, more than the {PATH_MAX:,}")
        shown = f"{text[:60]!r}{'...' if len(text) > 60 else ''}"
        raise argparse.ArgumentTypeError(f"{shown} has {what} a file system allows; give a "
                                         f"shorter path")
    return Path(text)


def pattern(text: str) -> str:
    """A path that may be a glob pattern (`--dump 'dumps/*.xml.bz2'`), checked as `path`."""
    path(text)
    return text


def out_dir(text: str) -> Path:
    """A directory to write into (`path`): it may not exist yet, but must not be a file."""
    given = path(text)
    if not text or (given.exists() and not given.is_dir()):
        raise argparse.ArgumentTypeError(f"{text!r:.200} exists and is not a directory"
                                         if text else "expected a directory, got ''")
    return given


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

def role_model(text: str) -> tuple[str, str]:
    """ROLE=MODEL: one role's model (`--model-role judge=gpt-4o`)."""
    role, _, model = text.partition("=")
    if role not in ROLES or not model:
        raise argparse.ArgumentTypeError(f"expected ROLE=MODEL with ROLE one of {', '.join(ROLES)}"
                                         f", got {text!r:.200}")
    try:
        return role, checked_value("model", model, f"--model-role {role}")
    except UserError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def date_or_today(text: str) -> str:
    """A date YYYY-MM-DD, or `today` for today's."""
    from datetime import date

    return date.today().isoformat() if text == "today" else iso_date(text)
