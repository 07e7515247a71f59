"""A count in freshrag's messages, worded as English counts (docs/reports.md#numbers-as-shown):
"1 search", "2 searches", "1,204 questions", never "1 searches" or "search(es)"."""

from __future__ import annotations

VOWELS = "aeiou"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` with thousands separators and `noun` (the last word of it made plural unless `n` is
    1); `plural` where English does not add -s, -es or -ies ("person", "people")."""
    return f"{n:,} {noun if n == 1 else plural or plural_of(noun)}"


def plural_of(noun: str) -> str:
    """The regular plural of a noun or of a phrase's last word: searches, queries, systems."""
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in VOWELS:
        return noun[:-1] + "ies"
    return noun + "s"
