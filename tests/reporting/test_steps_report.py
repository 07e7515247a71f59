"""An answer's steps in the reports (docs/reports.md): the summary's columns on them (searches
per answer, the share repeated, answers stopped by reason), the JSON report's `answers` (each
answer's trajectory as its row holds it), and the HTML viewer's timeline, driven in headless
Chromium (tests/support/dom.py): the steps in order, a repeated search marked, why an agent
stopped, a step's `<script>` query shown as text, and an answer written before steps existed
shown without a timeline.

The rows are made as the runner makes them (core/samples.py sample_row) from Steps made here."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from freshrag.cli.main import main
from freshrag.core.samples import SAMPLES, read_samples, sample_row
from freshrag.core.types import (
    Grade,
    LLMResponse,
    Question,
    RetrievedChunk,
    Step,
    SystemAnswer,
    Usage,
)
from freshrag.reporting import loading, report, summary_table
from tests.support.dom import report_url, viewer_tab
from tests.support.runs import EVIL_TITLE, write_run

SCRIPT_QUERY = "<script>alert('step')</script> bridge"
QUERY = "Marrowgate crossing main span"


def reply(role: str, tokens: tuple[int, int], latency: float, text: str = "") -> LLMResponse:
    return LLMResponse(role=role, model=f"{role}-model", text=text, tool_name=None,
                       tool_arguments=None, usage=Usage(*tokens), latency_s=latency,
                       cache_hit=False, messages=[{"role": "user", "content": "..."}])


def search(query: str, *found: tuple[str, float]) -> Step:
    return Step("search", query=query, retrieved=tuple(
        RetrievedChunk(title, index, f"text of {title}", score)
        for index, (title, score) in enumerate(found)))


def answered(question: str, system: str, steps: list[Step], stopped: str | None = None,
             grade: int | None = 4) -> dict[str, Any]:
    """The row of `system`'s answer to `question`, whose steps are `steps`; the calls are the
    steps' and a judge's."""
    calls = [call for step in steps for call in step.calls]
    answer = SystemAnswer(text=f"{system}'s answer to {question}", calls=calls,
                          retrievals=sum(step.kind == "search" for step in steps),
                          steps=steps, stopped=stopped)
    judge = reply("judge", (900, 90), 0.5)
    row = sample_row("A_f", Question(question, f"How long is bridge {question}?",
                                     f"Gold {question}"), system, answer,
                     Grade(grade, grade) if grade else None, [*calls, judge], 2.0)
    return dict(row)


def agent_steps() -> list[Step]:
    """Decide, search, the same search again, a search with a `<script>` query, read, reason,
    answer: every kind, a repeated search, markup in a query and a title."""
    return [
        Step("decide", calls=(reply("decision", (50, 2), 0.1, "retrieve"),), text="retrieve"),
        search(QUERY, ("Gold q1", 0.875), ("Other", 0.5)),
        search(QUERY, ("Gold q1", 0.875), ("Other", 0.5)),
        search(SCRIPT_QUERY, (EVIL_TITLE, 0.25)),
        Step("read", title="Gold q1"),
        Step("reason", calls=(reply("answer", (300, 40), 0.75, "It is 420 m."),),
             text="The article gives the main span: 420 m."),
        Step("answer", calls=(reply("answer", (600, 20), 1.5, "420 m"),), text="420 m"),
    ]


def old(row: dict[str, Any]) -> dict[str, Any]:
    """`row` as a run written before steps and agents existed holds it."""
    return {key: value for key, value in row.items() if key not in ("steps", "stopped")}


def rows() -> list[dict[str, Any]]:
    """agent: q1 the whole trajectory, q2 stopped at its most steps, q3 out of budget, q4
    failed (no steps); baseline: q1 an old row, q2 a system outside freshrag that gave none."""
    loop = [search("span", ("Other", 0.5)), search("span", ("Other", 0.5)),
            search("span", ("Other", 0.5)), Step("answer", text="I could not find it")]
    failed = answered("q4", "agent", [])
    failed.update(status="failed", answer=None, grade=None, error="HTTP 500 after 6 attempts")
    return [
        answered("q1", "agent", agent_steps()),
        answered("q2", "agent", loop, stopped="max_steps", grade=1),
        answered("q3", "agent", [search("span", ("Other", 0.5)),
                                 Step("answer", text="budget spent")], stopped="budget"),
        failed,
        old(answered("q1", "baseline", [Step("answer", text="from memory")])),
        answered("q2", "baseline", []),
    ]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", rows())


def summary_of(run: Path) -> dict[str, dict[str, Any]]:
    return {row["system"]: row for row in summary_table.summarise(loading.load_summaries([run]))}


# --------------------------------------------------------------------------- the JSON report


def test_the_summary_counts_searches_repeats_and_stops(run):
    agent, baseline = summary_of(run)["agent"], summary_of(run)["baseline"]
    # answered: q1 3 searches (1 repeated), q2 3 (2 repeated), q3 1; the failed q4 not counted
    assert agent["searches_per_answer"] == pytest.approx(7 / 3, abs=1e-4)
    assert agent["repeated_search_share"] == pytest.approx(3 / 7, abs=1e-4)
    assert (agent["stopped_max_steps"], agent["stopped_budget"]) == (1, 1)
    # no answer recorded steps: unknown, never 0; nothing stopped
    assert (baseline["searches_per_answer"], baseline["repeated_search_share"]) == (None, None)
    assert (baseline["stopped_max_steps"], baseline["stopped_budget"]) == (0, 0)


def test_answers_that_never_search_make_none_and_repeat_none(tmp_path):
    written = write_run(tmp_path / "run", [answered("q1", "oracle", [
        Step("read", title="Gold q1"), Step("answer", text="420 m")])])
    oracle = summary_of(written)["oracle"]
    assert (oracle["searches_per_answer"], oracle["repeated_search_share"]) == (0.0, None)


def test_the_json_report_lists_each_answers_steps_as_its_row_holds_them(run):
    loaded = loading.load_summaries([run])  # as `freshrag report --format json` reads
    summary = summary_table.summarise(loaded)
    document = json.loads(report.render(summary, "json",
                                        answers=report.trajectories(loaded)))
    assert document["rows"] == summary  # the summary's rows, with the new columns
    written = {(row["question_id"], row["system"]): row
               for row in read_samples(run / SAMPLES)}
    answers = {(a["question_id"], a["system"]): a for a in document["answers"]}
    # every answer with steps (the failed q4's: none); the old row has no trajectory
    assert sorted(answers) == sorted(key for key, row in written.items() if "steps" in row)
    for key, entry in answers.items():
        assert entry["steps"] == written[key]["steps"], key
        assert entry["stopped"] == written[key]["stopped"]
        assert entry["status"] == written[key]["status"]
    identity = {row["system"]: (row["dataset"], row["models"]) for row in summary}
    assert all((a["dataset"], a["models"]) == identity[a["system"]] for a in answers.values())
    steps = answers["q1", "agent"]["steps"]
    assert [step["kind"] for step in steps] == [
        "decide", "search", "search", "search", "read", "reason", "answer"]
    assert [step["repeated"] for step in steps[1:4]] == [False, True, False]
    assert steps[1]["retrieved"] == [{"title": "Gold q1", "index": 0, "score": 0.875},
                                     {"title": "Other", "index": 1, "score": 0.5}]
    assert steps[3]["query"] == SCRIPT_QUERY  # JSON keeps it as it is: text
    assert steps[5]["usage"] == {"answer": {"input": 300, "output": 40, "estimated": False}}
    assert (answers["q2", "agent"]["stopped"], answers["q3", "agent"]["stopped"]) == (
        "max_steps", "budget")
    assert answers["q4", "agent"]["steps"] == [] and answers["q2", "baseline"]["steps"] == []


def test_the_report_command_prints_the_answers_as_json(run, tmp_path, capsys):
    assert main(["report", str(run), "--format", "json", "--out", str(tmp_path / "out")]) == 0
    printed = json.loads(capsys.readouterr().out)
    loaded = loading.load_summaries([run])
    assert printed["answers"] == list(report.trajectories(loaded))
    assert {a["system"] for a in printed["answers"]} >= {"agent"}
    assert main(["report", str(run), "--out", str(tmp_path / "md")]) == 0
    assert '"answers"' not in capsys.readouterr().out  # the markdown table lists no steps


def test_runs_from_before_steps_print_no_answers(tmp_path):
    written = write_run(tmp_path / "run", [old(row) for row in rows()])
    loaded = loading.load_summaries([written])
    assert list(report.trajectories(loaded)) == []
    document = json.loads(report.render(summary_table.summarise(loaded), "json",
                                        answers=report.trajectories(loaded)))
    assert set(document) == {"rows"}
    assert {row["searches_per_answer"] for row in document["rows"]} == {None}


def test_the_csv_and_the_whole_table_carry_the_new_columns(run, tmp_path):
    summary = summary_table.summarise(loading.load_summaries([run]))
    parsed = list(csv.DictReader(io.StringIO(report.render(summary, "csv"))))
    agent = next(row for row in parsed if row["system"] == "agent")
    assert (agent["searches_per_answer"], agent["repeated_search_share"],
            agent["stopped_max_steps"], agent["stopped_budget"]) == ("2.3333", "0.4286", "1", "1")
    report.write_summary(tmp_path / "out", summary)
    wide = (tmp_path / "out" / report.SUMMARY_MD).read_text().splitlines()
    head = [cell.strip() for cell in wide[0].strip("|").split("|")]
    cells = dict(zip(head, (cell.strip() for cell in wide[2].strip("|").split("|"))))
    assert (cells["system"], cells["searches_per_answer"], cells["repeated_search_share"],
            cells["stopped_max_steps"]) == ("agent", "2.33", "0.43", "1")


# --------------------------------------------------------------------------- the viewer


@pytest.fixture(scope="module")
def page_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    run_dir = write_run(tmp_path_factory.mktemp("run"), rows())
    return report_url(run_dir)


@pytest.fixture
def page(page_url: str):
    """The report in Chromium (tests/support/dom.py viewer_tab: offline, no script error, no
    dialog)."""
    with viewer_tab(page_url) as tab:
        yield tab


def opened(tab, system: str, question: str):
    """The detail pane of `system`'s answer to `question`, opened from the list."""
    tab.select_option("#f-system", system)
    tab.fill("#f-search", f"A_f/{question}")
    assert tab.locator("#viewer-spacer .vrow").count() == 1
    tab.click("#viewer-spacer .vrow")
    return tab.locator("#viewer-detail")


def row_of(question: str, system: str) -> dict[str, Any]:
    return next(r for r in rows() if (r["question_id"], r["system"]) == (question, system))


def shown_steps(detail) -> list[dict[str, Any]]:
    return detail.locator(".viewer-steps > li").evaluate_all("""items => items.map(li => ({
        kind: li.dataset.kind, repeated: li.classList.contains('repeated'),
        head: li.querySelector('.viewer-step-head').innerText,
        query: li.querySelector('.viewer-step-query')?.childNodes[1]?.textContent ?? null,
        found: [...li.querySelectorAll('.viewer-step-found li')].map(f => [
            f.querySelector('.title').textContent, f.querySelector('.score').textContent]),
        read: li.querySelector('.viewer-step-read')?.childNodes[1]?.textContent ?? null,
        text: li.querySelector('.viewer-step-text')?.textContent ?? null}))""")


@pytest.mark.integration
def test_the_timeline_shows_every_step_in_order(page):
    detail = opened(page, "agent", "q1")
    steps = row_of("q1", "agent")["steps"]
    shown = shown_steps(detail)
    assert [s["kind"] for s in shown] == [step["kind"] for step in steps]
    for k, (entry, step) in enumerate(zip(shown, steps)):
        tokens = [sum(u[part] for u in step["usage"].values()) for part in ("input", "output")]
        cost = (f"{tokens[0]:,} in / {tokens[1]:,} out" if step["usage"] else "no tokens")
        assert entry["head"].split("\n")[:2] == [f"{k + 1}. {step['kind']}",
                                                 f"{cost} · {step['latency_s']:g} s"], entry
        assert entry["repeated"] == step["repeated"]
        assert ("repeated search" in entry["head"]) == step["repeated"]
        assert entry["query"] == step["query"]
        assert entry["found"] == [[c["title"], f"{c['score']:g}"] for c in step["retrieved"]]
        assert entry["read"] == step["title"] and entry["text"] == step["text"]
    assert "Steps (7; 3 searches, 1 repeated)" in detail.locator("h4").all_inner_texts()
    assert detail.locator(".viewer-stopped").count() == 0  # it answered when it chose
    assert "Steps (2; 1 search)" in opened(page, "agent", "q3").locator("h4").all_inner_texts()
    detail.locator(".viewer-steps").scroll_into_view_if_needed()
    page.screenshot(path=str(artefact("timeline-agent-q1")))


@pytest.mark.integration
def test_markup_in_a_step_is_text(page):
    detail = opened(page, "agent", "q1")
    scripts = page.locator("script").count()
    search = detail.locator(".viewer-steps > li").nth(3)
    assert SCRIPT_QUERY in search.inner_text() and EVIL_TITLE in search.inner_text()
    assert detail.locator("script, img").count() == 0
    assert page.locator("script").count() == scripts  # none added; `page` checks no dialog ran


@pytest.mark.integration
@pytest.mark.parametrize(("question", "why"), [
    ("q2", "stopped at its most steps (max_steps)"),
    ("q3", "stopped when its token budget was spent (budget)")])
def test_a_stopped_answer_says_why(page, question, why):
    detail = opened(page, "agent", question)
    assert detail.locator(".viewer-stopped").inner_text() == why
    facts = detail.locator(".viewer-facts").first.inner_text()
    assert f"stopped\n{why}" in facts
    assert [s["kind"] for s in shown_steps(detail)] == [
        step["kind"] for step in row_of(question, "agent")["steps"]]
    if question == "q2":
        assert [s["repeated"] for s in shown_steps(detail)] == [False, True, True, False]


@pytest.mark.integration
@pytest.mark.parametrize("question", ["q1", "q2"])  # an old row; a row of no steps
def test_an_answer_without_steps_has_no_timeline(page, question):
    detail = opened(page, "baseline", question)
    assert detail.locator(".viewer-answer").inner_text() == row_of(question, "baseline")["answer"]
    assert detail.locator(".viewer-steps, .viewer-stopped").count() == 0
    assert not any(h.startswith("Steps") for h in detail.locator("h4").all_inner_texts())
    assert "stopped" not in detail.locator(".viewer-facts").first.inner_text()


def artefact(name: str) -> Path:
    folder = Path(__file__).resolve().parents[2] / "results" / "artefacts" / "viewer"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.png"
