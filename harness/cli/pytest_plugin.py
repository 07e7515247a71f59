"""freshrag's pytest plugin (docs/ci.md#the-pytest-plugin): the gate's rules held in a team's own
test suite, through the fixture `freshrag_gate`.

pytest loads it by the `pytest11` entry point wherever freshrag is installed, so it imports
nothing of freshrag's until a test asks for the fixture. `freshrag_gate.run(...)` makes a run as
`freshrag.evaluate` does (resumed and answered from the response cache when nothing changed);
`freshrag_gate.check(baseline, candidate, rules)` holds two run directories against the rules
(a rules file, or dicts of the `[[gate.rule]]` tables' shape) and fails the test with the
gate's summary when one fails. Every rule's figure goes to the test's report
(`user_properties`, which JUnit XML of the xunit1 family writes in the test's case); with
`--junitxml` in pytest's default xunit2 family, whose schema has no properties in a test case,
it goes to the suite's properties instead, named by the test's id, without pytest's warning.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pytest

if TYPE_CHECKING:
    from freshrag.reporting.gate import GateResult
    from freshrag.reporting.gate_rules import Rule


class FreshragGate:
    """What the fixture gives a test: `run` a candidate, `check` it against a baseline."""

    def __init__(self, record: Callable[[str, object], None], source: str):
        self._record = record
        self._source = source  # the test's id, naming rules given as dicts in messages

    def run(self, out: str | Path, dataset: Any = None, systems: Any = ("naive",),
            **options: Any) -> Path:
        """A run into `out`, as `freshrag.evaluate(dataset, systems, out=out, **options)`
        makes it; its run directory."""
        from freshrag.workflows.evaluate import evaluate

        return evaluate(dataset, systems, out=out, **options).out

    def check(self, baseline: str | Path, candidate: str | Path,
              rules: str | Path | list[dict[str, Any]], config: str | Path | None = None,
              seed: int = 0, allow_other_judge: bool = False,
              allow_unfinished: bool = False) -> GateResult:
        """The gate's verdicts on `candidate` against `baseline`; the test fails, with the
        summary, unless every rule holds. `config`: a freshrag.toml whose [prices] price
        dollars per correct answer; `allow_*`: as the command's --allow-* options."""
        from freshrag.reporting.gate import gate
        from freshrag.reporting.gate_report import text
        from freshrag.reporting.prices import price_table

        prices = price_table(Path(config) if config is not None else None)
        result = gate(Path(baseline), Path(candidate), self._rules(rules), prices, seed,
                      allow_other_judge=allow_other_judge, allow_unfinished=allow_unfinished)
        for verdict in result.verdicts:
            self._record(f"freshrag gate: {verdict.says}",
                         f"{'pass' if verdict.passed else 'FAIL'}: {verdict.figure}")
        if not result.passed:
            pytest.fail(text(result), pytrace=False)
        return result

    def _rules(self, rules: str | Path | list[dict[str, Any]]) -> list[Rule]:
        from freshrag.reporting.gate_rules import read_rules, rules_from_tables

        if isinstance(rules, (str, Path)):
            return read_rules(Path(rules))
        return rules_from_tables(rules, self._source)


@pytest.fixture
def freshrag_gate(request: pytest.FixtureRequest,
                  record_testsuite_property: Callable[[str, object], None]) -> FreshragGate:
    """Runs and holds freshrag runs against the gate's rules (docs/ci.md#the-pytest-plugin)."""
    node = request.node
    if request.config.getoption("xmlpath", None) and \
            request.config.getini("junit_family") not in ("xunit1", "legacy"):
        return FreshragGate(lambda name, value: record_testsuite_property(
            f"{node.nodeid} {name}", value), node.nodeid)
    return FreshragGate(lambda name, value: node.user_properties.append((name, value)),
                        node.nodeid)
