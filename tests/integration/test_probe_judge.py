"""Judge probes on the embedded model (SmolLM2-135M as judge) over the example corpus: the
probes are graded, the verdict matches the discrimination it reports, the cost is counted, and a
second pass reads the judge's kept verdict (docs/running.md#judge-probes), as a run would."""

import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

QUESTIONS = 2  # probe questions: enough for a share per field, each graded three ways or more


def probe(tmp_path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FRESHRAG_", "OPENAI_"))}
    return subprocess.run([sys.executable, "-m", "freshrag", "probe-judge", "--probe-k",
                           str(QUESTIONS)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=1200)


def test_the_embedded_judge_is_probed_and_its_verdict_follows_its_discrimination(tmp_path):
    first = probe(tmp_path)
    assert first.returncode in (0, 1), first.stderr[-2000:]
    shares = {field: float(value) for field, value in
              re.findall(r"^(truthfulness|relevance): ([0-9.]+) ", first.stdout, re.MULTILINE)}
    assert set(shares) == {"truthfulness", "relevance"}, first.stdout
    informative = all(share >= 0.7 for share in shares.values())
    assert first.returncode == (0 if informative else 1)
    assert ("WARNING: the judge's scores are not informative" in first.stdout) != informative
    calls = re.search(r"cost: (\d+) judge calls \((\d+) from the cache\), ([\d,]+) input",
                      first.stdout)
    assert calls and int(calls[1]) >= 3 * QUESTIONS and int(calls[2]) == 0  # 3 probes a question
    assert int(calls[3].replace(",", "")) > 0
    (kept,) = (tmp_path / "results" / ".judge-probes").glob("*.json")
    again = probe(tmp_path)
    assert f"cost: none now, the verdict kept in results/.judge-probes/{kept.name}" in again.stdout
    assert again.returncode == first.returncode
    assert re.findall(r"^(?:truthfulness|relevance): .*$", again.stdout, re.MULTILINE) == \
        re.findall(r"^(?:truthfulness|relevance): .*$", first.stdout, re.MULTILINE)
