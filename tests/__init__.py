"""freshrag's tests. `WIKIRAG` is the data released with the paper, carried inside the repository
(tests/data/wikirag-2024/, see its README) so that a clone anywhere runs every test."""

from pathlib import Path

WIKIRAG = Path(__file__).resolve().parent / "data" / "wikirag-2024"
