"""A run's judge probes (docs/running.md#judge-probes): announced with their count, time and
`--no-probe` before they start, scaled to a small run, and kept for the judge so that a second
run directory with the same judge asks none of them; on the fake server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from freshrag.cli.main import main
from freshrag.core.config import LLMSettings, RoleConfig
from freshrag.core.dataset import load_dataset_dir
from freshrag.core.runfiles import JUDGE_PROBES
from freshrag.llm.client import LLMClient
from freshrag.run import probe_pass
from freshrag.scoring import probes
from tests.support.datasets import write_dataset
from tests.support.fake_openai_server import default_reply

ABSTAINING = f"Chatbot's answer: {probes.ABSTAIN}"


def probe_calls(server) -> int:
    """The probe requests the server got: each probe question's abstaining answer is asked once."""
    return sum(ABSTAINING in json.dumps(request["messages"]) for request in server.requests)


def run(tmp_path: Path, out: str, *extra: str) -> int:
    data = tmp_path / "data"
    if not data.exists():
        write_dataset(data, 6)
    return main(["run", "--dataset", str(data), "--systems", "baseline", "--limit", "3",
                 "--out", str(tmp_path / "results" / out), *extra])


def manifest(tmp_path: Path, out: str) -> dict:
    return json.loads((tmp_path / "results" / out / "manifest.json").read_text())


def test_a_second_run_directory_with_the_same_judge_asks_no_probe(tmp_path, fake, capsys):
    assert run(tmp_path, "a") == 0
    first = manifest(tmp_path, "a")["judge_probe"]
    assert probe_calls(fake) == first["k"] == 1 and "reused" not in first  # 3 pairs: 1 question
    before = fake.calls
    # --no-cache: the response cache cannot answer them; the kept verdict does
    assert run(tmp_path, "b", "--no-cache", "--probe-threshold", "0.4") == 0
    assert fake.calls - before == 6  # 3 answers and their 3 grades, no probe
    assert probe_calls(fake) == 1
    second = manifest(tmp_path, "b")["judge_probe"]
    kept = Path(second["reused"])
    assert kept.parent == tmp_path / "results" / JUDGE_PROBES and kept.is_file()
    assert second["fields"] == first["fields"]
    # the threshold is this run's: the fake judge's ties (0.5) pass 0.4, not 0.7
    assert (first["informative"], second["informative"]) == (False, True)
    said = capsys.readouterr().err
    assert f"its verdict is read from {kept}, no call made" in said
    graded = json.loads((tmp_path / "results" / "b" / "judge-probes.json").read_text())
    assert len(graded["probes"]) == first["calls"]


def test_a_limit_3_run_says_how_many_probe_calls_and_how_to_skip_them(tmp_path, fake, capsys):
    assert run(tmp_path, "a") == 0
    lines = capsys.readouterr().err.splitlines()
    said = next(line for line in lines if line.startswith("probing the judge: "))
    made = manifest(tmp_path, "a")["judge_probe"]["calls"]
    assert said.startswith(f"probing the judge: {made} calls, ") and made == fake.calls - 6
    assert said.endswith("; --no-probe skips")
    assert "time unknown on this endpoint" in said  # the fake server: nothing measured there
    scaled = lines[lines.index(said) + 1]
    assert scaled.startswith("judge probes: 1 of --probe-k 12 questions (a small run)")
    assert f"±{probes.half_width(1):.2f} wide, against ±{probes.half_width(12):.2f}" in scaled
    assert manifest(tmp_path, "a")["judge_probe"]["scaled_from"] == 12


def test_the_probes_run_at_full_size_when_the_run_is_as_large(tmp_path, fake, capsys):
    write_dataset(tmp_path / "data", 6)
    assert main(["run", "--dataset", str(tmp_path / "data"), "--systems", "baseline,oracle,naive",
                 "--probe-k", "4", "--out", str(tmp_path / "results" / "a")]) == 0  # 18 pairs
    verdict = manifest(tmp_path, "a")["judge_probe"]
    assert verdict["k"] == 4 and "scaled_from" not in verdict
    assert "(a small run)" not in capsys.readouterr().err


def refusing_abstentions(request: dict) -> dict:
    if ABSTAINING in json.dumps(request["messages"]):
        return {"error": {"status": 400, "message": "refused"}}
    return default_reply(request)


def test_a_probe_pass_with_a_failed_call_is_not_kept(tmp_path, fake_server):
    server = fake_server(reply=refusing_abstentions)
    assert run(tmp_path, "a") == 0
    assert manifest(tmp_path, "a")["judge_probe"]["unscored"] == 1
    assert not (tmp_path / "results" / JUDGE_PROBES).exists()
    asked = probe_calls(server)
    assert run(tmp_path, "b", "--no-cache") == 0
    assert probe_calls(server) > asked  # asked again


def test_a_kept_file_that_is_no_verdict_is_said_graded_again_and_replaced(tmp_path, fake,
                                                                          capsys):
    assert run(tmp_path, "a") == 0
    kept = next((tmp_path / "results" / JUDGE_PROBES).glob("*.json"))
    kept.write_text("{not json")
    assert run(tmp_path, "b", "--no-cache") == 0
    said = capsys.readouterr().err
    assert f"freshrag: warning: {kept}: not a kept judge probe verdict" in said
    assert probe_calls(fake) == 2  # graded again
    assert json.loads(kept.read_text())["verdict"]["k"] == 1


def test_a_link_where_the_verdicts_are_kept_is_refused(tmp_path, fake, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / JUDGE_PROBES).symlink_to(elsewhere)
    assert run(tmp_path, "a") == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "results" / JUDGE_PROBES) in err and "Traceback" not in err
    assert list(elsewhere.iterdir()) == []


def local_client() -> LLMClient:
    class Local:
        base_url, model_id = "http://127.0.0.1:1/v1", "smollm2"

        def death(self) -> None:
            return None

    llm = LLMClient(LLMSettings(roles={"judge": RoleConfig()}))
    llm.local = Local()
    return llm


def remote_client() -> LLMClient:
    return LLMClient(LLMSettings(roles={"judge": RoleConfig("gpt-x", "https://api.example/v1")}))


def kept_pass(results: Path, model: str, base_url: str, seconds: float, calls: int) -> None:
    folder = results / JUDGE_PROBES
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{model}.json").write_text(json.dumps({
        "judge": {"model": model, "base_url": base_url},
        "verdict": {"fields": {}, "seconds": seconds, "calls": calls, "cache_hits": 0}}))


REQUEST = {"model": "m", "messages": [{"role": "user", "content": "word " * 3140}]}


@pytest.mark.parametrize("client, kept, live, said", [
    pytest.param(local_client, None, 1, "about 11 s on the embedded model",
                 id="embedded: tokens at its measured pace"),
    pytest.param(local_client, None, 0, "no time", id="every call in the cache"),
    pytest.param(remote_client, None, 4, "time unknown on this endpoint", id="remote, unmeasured"),
    pytest.param(remote_client, ("gpt-x", "https://api.example/v1", 60.0, 20), 40,
                 "about 2 min at an earlier probe pass's pace", id="remote, measured there"),
    pytest.param(remote_client, ("gpt-x", "https://other.example/v1", 60.0, 20), 40,
                 "time unknown", id="remote, measured on another endpoint"),
    pytest.param(remote_client, ("gpt-y", "https://api.example/v1", 60.0, 20), 40,
                 "time unknown", id="remote, another model measured"),
])
def test_the_expected_time(tmp_path, client, kept, live, said):
    if kept:
        kept_pass(tmp_path, *kept)
    assert said in probe_pass.expected_time(client(), [REQUEST] * live, tmp_path)


def long_towns(i: int) -> str:
    """An article long enough that a probe's passage leaves some of it out."""
    return f"Town {i} is a town. " + " ".join(f"Its street {n} is long." for n in range(12)) \
        + f" Town {i} has {i + 2} bridges."


def test_the_store_key_follows_the_judge_and_the_probes(tmp_path):
    write_dataset(tmp_path / "data", 6, content=long_towns)
    dataset = load_dataset_dir(tmp_path / "data")

    def key(llm: LLMClient, k: int = 3, seed: int = 0, context: str = "passage") -> str:
        made = probes.make_probes(dataset.questions, dataset.articles, k, seed, context)
        return probe_pass.store_key([probe_pass.first_request(llm, p, dataset.articles)
                                     for p in made])

    other_model = LLMClient(LLMSettings(roles={"judge": RoleConfig("gpt-z",
                                                                   "https://api.example/v1")}))
    other_url = LLMClient(LLMSettings(roles={"judge": RoleConfig("gpt-x", "https://b.example/v1")}))
    keys = [key(remote_client()), key(other_model), key(other_url), key(remote_client(), 4),
            key(remote_client(), seed=1), key(remote_client(), context="article")]
    assert len(set(keys)) == len(keys)
    assert key(remote_client()) == keys[0]


def test_a_resume_probes_again_when_the_probe_context_changed(tmp_path, fake):
    write_dataset(tmp_path / "data", 6, content=long_towns)
    assert run(tmp_path, "a", "--no-cache") == 0
    assert manifest(tmp_path, "a")["judge_probe"]["context"] == "passage"
    assert probe_calls(fake) == 1
    assert run(tmp_path, "a", "--no-cache") == 0  # the same probes: the manifest's verdict
    assert probe_calls(fake) == 1
    assert run(tmp_path, "a", "--no-cache", "--probe-context", "article") == 0
    assert probe_calls(fake) == 2 and manifest(tmp_path, "a")["judge_probe"]["context"] == "article"


def test_probe_judge_keeps_and_reads_the_judges_verdict_as_a_run_does(tmp_path, fake, capsys,
                                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_dataset(tmp_path / "data", 6)
    # one probe question, as many as a run of 3 pairs probes: the same probe set
    assert main(["probe-judge", "--dataset", "data", "--probe-k", "1"]) == 1  # ties: not informative
    assert probe_calls(fake) == 1 and "cost: " in capsys.readouterr().out
    (kept,) = (tmp_path / "results" / JUDGE_PROBES).glob("*.json")
    assert main(["probe-judge", "--dataset", "data", "--probe-k", "1", "--no-cache"]) == 1
    assert probe_calls(fake) == 1  # no call: the kept verdict
    assert f"cost: none now, the verdict kept in {Path('results') / JUDGE_PROBES / kept.name}" \
        in capsys.readouterr().out
    assert run(tmp_path, "c", "--no-cache") == 0  # a run with the same judge reads it too
    assert probe_calls(fake) == 1 and manifest(tmp_path, "c")["judge_probe"]["reused"]


@pytest.mark.parametrize("questions, systems, k", [
    pytest.param(3, 1, 1, id="3-pairs-one-question"),
    pytest.param(3, 2, 1, id="6-pairs-one-question"),
    pytest.param(3, 4, 3, id="12-pairs-three-questions"),
    pytest.param(3, 13, 9, id="the-demo's-39-pairs"),
    pytest.param(40, 2, 12, id="80-pairs-as-asked"),
    pytest.param(48, 1, 12, id="48-pairs-as-asked"),
])
def test_a_run_probes_a_question_for_every_four_pairs_up_to_probe_k(questions, systems, k):
    settings = probes.scaled(probes.ProbeSettings(k=12), questions, systems)
    assert settings.k == k and settings.k * probes.PAIRS_PER_PROBE <= max(
        questions * systems, probes.PAIRS_PER_PROBE)
    assert probes.scaled(None, questions, systems) is None
