"""Checking an answer against a reference value without a model (docs/grounded.md#the-report):
the reference is a database value (an SQL result), so the check is a
normalised match of dates, numbers and words, the same normalisation the fact table stores.

- Dates: "14 March 2026", "March 14, 2026", "2026-03-14" all become 2026-03-14; a reference that
  is a full date matches an answer holding that day in any of these forms; a bare year matches
  the year.
- Numbers: thousands separators dropped ("4,812" is 4812); a reference that is a quantity (numbers
  and at most short unit words) matches an answer holding the same numbers (units are not
  compared: "14.6 km" and "14.6 kilometres" agree). A name holding a number is text.
- Text: case, accents, punctuation and articles ignored; every word of the reference must appear
  among the answer's words ("Cable-stayed bridge" matches "it is a cable stayed bridge").
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date

MONTHS = {name: number for number, names in enumerate(
    (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
     ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
     ("october", "oct"), ("november", "nov"), ("december", "dec")), start=1) for name in names}
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY_FIRST = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+{_MONTH},?\s+(\d{{4}})\b", re.I)
_MONTH_FIRST = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])|(?<![\w.])-?\d+(?:\.\d+)?")
_WORD = re.compile(r"[^\W_]+")
UNIT_CHARS = 3  # words this short beside a number are units or marks: km, MW, ha, c., th
STOP_WORDS = {"the", "a", "an", "of", "and", "in", "on", "at"}


def dates_in(text: str) -> list[date]:
    """Every full calendar date written in `text`, in the order found by form."""
    found = []
    for match in _DAY_FIRST.finditer(text):
        found.append(_date(match.group(3), MONTHS[match.group(2).lower()], match.group(1)))
    for match in _MONTH_FIRST.finditer(text):
        found.append(_date(match.group(3), MONTHS[match.group(1).lower()], match.group(2)))
    for match in _ISO.finditer(text):
        found.append(_date(match.group(1), match.group(2), match.group(3)))
    return [day for day in found if day is not None]


def whole_date(text: str) -> date | None:
    """The date `text` consists of (one date and nothing else), or None."""
    text = text.strip().rstrip(".")
    for pattern in (_DAY_FIRST, _MONTH_FIRST, _ISO):
        match = pattern.fullmatch(text)
        if match:
            days = dates_in(match.group(0))
            return days[0] if days else None
    return None


def numbers_in(text: str) -> list[float]:
    return [float(match.replace(",", "")) for match in _NUMBER.findall(text)]


def words(text: str) -> list[str]:
    """Lower-case words, accents folded, punctuation, dashes and hyphens as spaces."""
    folded = "".join(char for char in unicodedata.normalize("NFKD", text)
                     if not unicodedata.combining(char))
    return _WORD.findall(folded.lower())


def normalise(value: str) -> str:
    """The canonical form stored beside each fact: an ISO date for a value that is exactly one
    date, else the number for a value that is one number (units kept as words), else its words."""
    day = whole_date(value)
    if day is not None:
        return day.isoformat()
    numbers = numbers_in(value)
    if len(numbers) == 1:
        rest = [word for word in words(_NUMBER.sub(" ", value)) if word not in STOP_WORDS]
        return " ".join([_number_text(numbers[0]), *rest])
    return " ".join(word for word in words(value) if word not in STOP_WORDS)


def matches(answer: str | None, reference: str) -> bool:
    """Whether `answer` states `reference` (see the module docstring for the rules)."""
    if not answer:
        return False
    day = whole_date(reference)
    if day is not None:
        return day in dates_in(answer)
    numbers = numbers_in(reference)
    if numbers and _is_quantity(reference):
        held = set(numbers_in(answer))
        return all(number in held for number in numbers)
    wanted = [word for word in words(reference) if word not in STOP_WORDS]
    present = set(words(answer))
    return bool(wanted) and all(word in present for word in wanted)


def _is_quantity(value: str) -> bool:
    """Numbers with at most short unit words ("14.6 km", "960 MW", "c. 1612", "11th"), rather
    than a name that holds a number ("2026 Tarnholt Marathon")."""
    return all(len(word) <= UNIT_CHARS for word in words(_NUMBER.sub(" ", value)))


def _date(year: str, month: int | str, day: str) -> date | None:
    try:
        return date(int(year), int(month), int(day))
    except ValueError:
        return None


def _number_text(number: float) -> str:
    return str(int(number)) if number == int(number) else repr(number)
