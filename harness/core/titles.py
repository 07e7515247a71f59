"""An article's title as freshrag compares it: Unicode NFC, the form MediaWiki stores every title
in (docs/building.md#titles). Two titles that differ only by normalisation ("Café" with a
precomposed é, or with e and a combining accent) are one page to MediaWiki, so they are one
article here: every place that reads a title from outside (a dump, the wiki's API, a dataset
file, an answers file, a system's retrieved chunks) takes it through `title_form`, and compares
only what that gives.
"""

from __future__ import annotations

import unicodedata


def title_form(title: str) -> str:
    """`title` in NFC; the same string, unchanged, when it is NFC already (the usual case)."""
    return title if unicodedata.is_normalized("NFC", title) else unicodedata.normalize("NFC", title)
