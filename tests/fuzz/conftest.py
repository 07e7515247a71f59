"""Hypothesis profiles of the fuzz suite.

- `ci` (the default here): a fixed seed (`derandomize`), so that CI runs the same cases every time,
  with the example counts each test sets through `support.budget`. No example database is written.
- `long`: ten times the examples, random unless `--hypothesis-seed` fixes the seed:

      PYTHONPATH=$PWD python3 -m pytest -p no:cacheprovider tests/fuzz \\
          --hypothesis-profile=long --hypothesis-seed=12345 --hypothesis-show-statistics

The profiles are registered when pytest loads this file, which it does before reading
`--hypothesis-profile` as long as `tests/fuzz` (or a file in it) is named on the command line.
"""

import pytest
from hypothesis import HealthCheck, settings

from tests.support.fake_openai_server import FakeOpenAIServer

_COMMON = dict(deadline=None, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", derandomize=True, max_examples=100, **_COMMON)
settings.register_profile("long", derandomize=False, max_examples=1000, **_COMMON)
if settings.get_current_profile_name() == "default":
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def server():
    """One fake OpenAI-compatible server for the whole suite; tests check it got no calls."""
    with FakeOpenAIServer() as fake:
        yield fake


def pytest_terminal_summary(terminalreporter):
    """The suite's figure: bad inputs refused (exit 2, a named error, no traceback) per file."""
    from tests.fuzz.support import REFUSED

    if REFUSED:
        terminalreporter.write_sep("-", "fuzz: bad inputs refused with a named error, no traceback")
        for name, count in sorted(REFUSED.items()):
            terminalreporter.write_line(f"{name}: {count}")
        terminalreporter.write_line(f"total: {sum(REFUSED.values())}")
