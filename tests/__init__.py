"""freshrag's tests, laid out as the packages they test (tests/core/ for harness/core/, and so on);
fakes, fixtures' helpers and data writers shared between them are in tests/support/, fixtures
shared across folders in tests/conftest.py.

`ROOT` is the repository; `WIKIRAG` is the data released with the paper, carried inside it
(tests/data/wikirag-2024/, see its README) so that a clone anywhere runs every test."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIKIRAG = ROOT / "tests" / "data" / "wikirag-2024"
