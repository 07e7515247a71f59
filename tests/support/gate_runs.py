"""Run directories made by hand for the gate's tests: a baseline of QUESTIONS answers graded
5/5 and a candidate made worse, failed or cut short on purpose, with manifests that say which
question set, judge probe and judge they had."""

from tests.support.runs import sample, write_run

QUESTIONS = 20
PROBED = {"k": 3, "threshold": 0.7, "informative": True, "fields": {
    "truthfulness": {"discrimination": 1.0, "interval": [1.0, 1.0]},
    "relevance": {"discrimination": 0.9, "interval": [0.8, 1.0]}}}


QUESTIONS_SHA = "0f" * 32


def manifest(probe=PROBED, questions=QUESTIONS_SHA, **changed):
    hashes = {"questions": questions} if questions else {}  # none: an import's
    return {"kind": "run", "dataset": {"sha256": hashes, "files": {}, "name": "A_f"},
            "config": {},
            "llm": {"roles": {}}, "systems": ["naive"], "judge_probe": probe,
            "finished_at": "2026-11-29T08:00:00+00:00", **changed}


def runs(tmp_path, worse=0, failed=0, missing=0, tokens=(100, 10), probe=PROBED,
         system="naive", judge="judge-1", base_tokens=(100, 10), **changed):
    """A baseline of QUESTIONS answers graded 5/5, and a candidate whose first `worse` answers
    are graded 1/5, whose last `failed` pairs failed and last `missing` are not there.
    `base_tokens`: the baseline's tokens on the questions the candidate failed; `changed`: the
    candidate's manifest's."""
    answered = QUESTIONS - failed - missing
    base = write_run(tmp_path / "base", [
        sample(f"q{i}", "naive", 5, 5, tokens=(100, 10) if i < answered else base_tokens)
        for i in range(QUESTIONS)], manifest())
    rows = [sample(f"q{i}", system, 1 if i < worse else 5, 5, tokens=tokens, judge=judge)
            for i in range(answered)]
    rows += [sample(f"q{i}", system, status="failed", judge=judge)
             for i in range(answered, QUESTIONS - missing)]
    return base, write_run(tmp_path / "cand", rows, manifest(probe, **changed))


TRUTH = {"kind": "difference", "system": "naive", "lower_above": -0.2}
