"""The gate's verdicts written for people and for CI (docs/ci.md#what-the-gate-writes): a
summary as plain text for the terminal (each rule, its figure, its verdict; names as written:
`naive -> naive-v2`), and a JUnit XML file, one test case per rule, that CI systems display. The
pull request's comment is gate_github.py's.

JUnit XML has no standard beyond what Jenkins and the test reporters read: `testsuites` >
`testsuite` > `testcase`, a `failure` child in a case that failed. It is built with the standard
library's xml.etree, which escapes markup; characters XML 1.0 cannot hold at all (control
characters in a system's name) are dropped first. The file is written whole and atomically,
never through a symbolic link (harness/core/files.py), and never over a file the gate reads.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from freshrag.core.files import atomic_open
from freshrag.core.outputs import Output, check_outputs, check_outside_runs
from freshrag.core.runfiles import RUN_FILES
from freshrag.reporting.gate import GateResult

SUITE = "freshrag gate"
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # line breaks, terminal escapes
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def text(result: GateResult) -> str:
    """The summary for a terminal or a failed test: every value as written (a line break or
    control character in a name shown as a space, so that no name can move the cursor or forge a
    line), a line per rule."""
    lines = [headline(result), "",
             f"Baseline {_plain(result.baseline)}, candidate {_plain(result.candidate)}; "
             f"differences are candidate - baseline.", ""]
    lines += [f"{'pass' if v.passed else 'FAIL'}  {_plain(v.says)}: {_plain(v.figure)}"
              for v in result.verdicts]
    if result.failed:
        lines += ["", "Why:"] + [f"- {_plain(v.says)}: {_plain(v.why)} ({_plain(v.rule.where)})"
                                 for v in result.failed]
    return "\n".join(lines) + "\n"


def headline(result: GateResult) -> str:
    """The verdict in one line: passed or failed, and how many rules."""
    if result.passed:
        held = len(result.verdicts) - len(result.failed)
        return f"freshrag gate: passed ({held} of {len(result.verdicts)} rules hold)"
    return f"freshrag gate: FAILED ({len(result.failed)} of {len(result.verdicts)} rules fail)"


def _plain(value: object) -> str:
    return _CONTROL.sub(" ", str(value))


def junit(result: GateResult) -> bytes:
    """The JUnit XML document: one test suite, a test case per rule, a `failure` in each case
    whose rule fails (its message the reason), the figure in the case's `system-out`."""
    counts = {"tests": str(len(result.verdicts)), "failures": str(len(result.failed)),
              "errors": "0", "skipped": "0", "time": "0"}
    root = ET.Element("testsuites", {"name": SUITE, **counts})
    suite = ET.SubElement(root, "testsuite", {"name": SUITE, **counts})
    properties = ET.SubElement(suite, "properties")
    for name in ("baseline", "candidate"):
        ET.SubElement(properties, "property", {"name": name,
                                               "value": _xml(str(getattr(result, name)))})
    for verdict in result.verdicts:
        case = ET.SubElement(suite, "testcase", {"classname": "freshrag.gate",
                                                 "name": _xml(verdict.says), "time": "0"})
        if not verdict.passed:
            failure = ET.SubElement(case, "failure", {"message": _xml(verdict.why),
                                                      "type": verdict.rule.kind})
            failure.text = _xml(f"{verdict.why}\nfigure: {verdict.figure}\n"
                                f"rule: {verdict.rule.where}")
        ET.SubElement(case, "system-out").text = _xml(verdict.figure)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def _xml(text: str) -> str:
    return _NOT_XML.sub("", text)


def check_outputs_of(outputs: dict[str, Path | None], run_dirs: list[Path],
                     inputs: list[tuple[str, Path | None]]) -> None:
    """Refuse an output (option -> path) that is a file the gate reads, another output, no
    regular file, or a file inside a run directory (core/outputs.py)."""
    given = [Output(path, option, f"give another {option}")
             for option, path in outputs.items() if path is not None]
    check_outputs(given, inputs + [(f"{run_dir}'s {name}", run_dir / name)
                                   for run_dir in run_dirs for name in RUN_FILES])
    check_outside_runs(given, run_dirs)


def write(result: GateResult, junit_path: Path | None) -> list[Path]:
    """The JUnit file, where asked; the paths written."""
    written = []
    if junit_path is not None:
        with atomic_open(junit_path, "wb") as handle:
            handle.write(junit(result))
        written.append(junit_path)
    return written
