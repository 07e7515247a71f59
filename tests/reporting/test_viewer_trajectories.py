"""The HTML viewer on agents' trajectories (docs/reports.md#the-viewer), driven in headless
Chromium (tests/support/dom.py): the first step that found each gold article, marked in the
timeline; the list's filters by why an agent stopped, by steps wasted after all gold was found
and by hops, with their counts, alone and with the other filters; two answers' steps side by side
by step number, by mouse and by keyboard, a row without steps saying so; and a `<script>` query
staying text there.

The rows are made as the runner makes them (core/samples.py sample_row) from Steps made here, on
two-article questions whose gold articles are found at known steps. What each filter must show is
written beside each row (`KNOWN`), by hand, not computed by the code under test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from freshrag.core.samples import sample_row
from freshrag.core.types import (
    Grade,
    LLMResponse,
    Question,
    RetrievedChunk,
    Step,
    SystemAnswer,
    Usage,
)
from tests.support.dom import report_url, viewer_tab
from tests.support.runs import write_run

pytestmark = pytest.mark.integration

SCRIPT_QUERY = "<script>alert('side')</script> Alpha's river"
GOLDS = {"m1": ("Alpha", "Beta"), "m2": ("Gamma", "Delta"), "s1": ("Solo",), "g1": ()}


def reply(role: str, tokens: tuple[int, int]) -> LLMResponse:
    return LLMResponse(role=role, model=f"{role}-model", text="...", tool_name=None,
                       tool_arguments=None, usage=Usage(*tokens), latency_s=0.25,
                       cache_hit=False, messages=[{"role": "user", "content": "..."}])


def search(query: str, *titles: str) -> Step:
    return Step("search", query=query, retrieved=tuple(
        RetrievedChunk(title, index, f"text of {title}", round(0.9 - index / 10, 2))
        for index, title in enumerate(titles)), calls=(reply("answer", (40, 8)),))


def reason(text: str) -> Step:
    return Step("reason", text=text, calls=(reply("answer", (70, 12)),))


def answer(text: str) -> Step:
    return Step("answer", text=text, calls=(reply("answer", (300, 30)),))


def question(ident: str) -> Question:
    golds = GOLDS[ident]
    if not golds:
        return Question(ident, f"What is new today ({ident})?", None, kind="general")
    if len(golds) == 1:
        return Question(ident, f"What is {golds[0]} ({ident})?", golds[0])
    return Question(ident, f"Which river crosses {golds[1]} ({ident})?", golds[0],
                    gold_titles=golds, hops=2, multihop="bridge")


def answered(ident: str, system: str, steps: list[Step], stopped: str | None = None,
             grade: int = 4) -> dict[str, Any]:
    calls = [call for step in steps for call in step.calls]
    given = SystemAnswer(text=f"{system}'s answer to {ident}", calls=calls,
                         retrievals=sum(step.kind == "search" for step in steps), steps=steps,
                         stopped=stopped)
    return dict(sample_row("A_f", question(ident), system, given, Grade(grade, max(grade - 1, 1)),
                           [*calls, reply("judge", (900, 90))], 2.0))


def without_steps(row: dict[str, Any]) -> dict[str, Any]:
    """`row` as a run written before steps existed holds it."""
    return {key: value for key, value in row.items() if key not in ("steps", "stopped")}


# (question, system) -> the step that first found each gold article, the steps wasted after all
# gold was found (None: not all found, or no steps), why it stopped, its hops (None: no gold)
KNOWN: dict[tuple[str, str], dict[str, Any]] = {
    ("m1", "react"): {"first": {"Alpha": 1, "Beta": 2}, "wasted": 0, "stopped": None, "hops": 2},
    ("m1", "iterative"): {"first": {"Alpha": 3, "Beta": 5}, "wasted": 2, "stopped": None,
                          "hops": 2},
    ("m1", "baseline"): {"first": {}, "wasted": None, "stopped": None, "hops": 2},
    ("m2", "react"): {"first": {"Gamma": 1, "Delta": 2}, "wasted": 2, "stopped": "max_steps",
                      "hops": 2},
    ("m2", "iterative"): {"first": {"Gamma": 1}, "wasted": None, "stopped": "budget", "hops": 2},
    ("m2", "baseline"): {"first": {}, "wasted": None, "stopped": None, "hops": 2},
    ("s1", "react"): {"first": {"Solo": 1}, "wasted": 0, "stopped": None, "hops": 1},
    ("s1", "iterative"): {"first": {"Solo": 2}, "wasted": 1, "stopped": "budget", "hops": 1},
    ("s1", "baseline"): {"first": {}, "wasted": None, "stopped": None, "hops": 1},
    ("g1", "baseline"): {"first": {}, "wasted": None, "stopped": None, "hops": None},
}


def rows() -> list[dict[str, Any]]:
    return [
        answered("m1", "react", [search("alpha", "Alpha", "Other"), search("beta", "Beta"),
                                 answer("Alpha and Beta")]),
        # found late, then two more steps before answering: a search and a reasoning step
        answered("m1", "iterative", [
            search("the river", "Other"), reason("Look for the river."),
            search(SCRIPT_QUERY, "Alpha", "Other", "Alpha"), reason("Now the town."),
            search("town", "Beta", "Alpha"), search("town again", "Beta"),
            reason("Both found."), answer("Alpha, through Beta")]),
        answered("m1", "baseline", [answer("from memory")]),
        answered("m2", "react", [search("gamma", "Gamma"), search("delta", "Other", "Delta"),
                                 search("delta", "Other", "Delta"), search("more", "Other"),
                                 answer("out of steps")], stopped="max_steps", grade=2),
        answered("m2", "iterative", [search("gamma", "Gamma"), answer("budget spent")],
                 stopped="budget", grade=1),
        without_steps(answered("m2", "baseline", [answer("from memory")])),
        answered("s1", "react", [search("solo", "Solo"), answer("Solo")]),
        answered("s1", "iterative", [search("s", "Other"), search("solo", "Solo"),
                                     search("solo", "Solo"), answer("Solo")], stopped="budget"),
        answered("s1", "baseline", []),  # a system that recorded no steps
        answered("g1", "baseline", [answer("nothing new")]),
    ]


def row_of(ident: str, system: str) -> dict[str, Any]:
    return next(r for r in rows() if (r["question_id"], r["system"]) == (ident, system))


def test_the_rows_hold_what_known_says():
    """The hand-made expectations agree with the rows they describe (a typo in KNOWN would
    otherwise test the wrong thing)."""
    made = rows()
    assert {(r["question_id"], r["system"]) for r in made} == set(KNOWN)
    for row in made:
        known = KNOWN[row["question_id"], row["system"]]
        assert row.get("stopped") == known["stopped"]
        for title, number in known["first"].items():
            step = row["steps"][number - 1]
            assert step["kind"] == "search" and title in [c["title"] for c in step["retrieved"]]
            assert all(title not in [c["title"] for c in earlier["retrieved"]]
                       for earlier in row["steps"][:number - 1])


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


def listed(tab) -> set[tuple[str, str]]:
    """(question, system) of every answer the list shows (all fit in its box)."""
    shown = tab.eval_on_selector_all("#viewer-spacer .vrow", """rows => rows.map(r =>
        [r.firstChild.textContent.split(' ')[0].split('/')[1], r.dataset.system])""")
    return {(q, system) for q, system in shown}


def count(tab) -> str:
    return tab.text_content("#viewer-count")


def options(tab, select: str) -> list[str]:
    return tab.eval_on_selector_all(f"#{select} option", "os => os.map(o => o.textContent)")


def matching(**wanted: Any) -> set[tuple[str, str]]:
    """The answers of KNOWN whose facets are as `wanted` (a callable tests a value)."""
    return {key for key, known in KNOWN.items()
            if all(test(known[name]) if callable(test) else known[name] == test
                   for name, test in wanted.items())}


def some(n: int | None) -> bool:
    return n is not None and n > 0


def two_or_more(n: int | None) -> bool:
    return n is not None and n >= 2


@pytest.mark.parametrize(("select", "value", "wanted"), [
    ("f-stopped", "max_steps", {"stopped": "max_steps"}),
    ("f-stopped", "budget", {"stopped": "budget"}),
    ("f-stopped", "no", {"stopped": None}),
    ("f-wasted", "some", {"wasted": some}),
    ("f-wasted", "none", {"wasted": 0}),
    ("f-hops", "1", {"hops": 1}),
    ("f-hops", "2+", {"hops": two_or_more}),
], ids=lambda v: v if isinstance(v, str) else None)
def test_each_filter_shows_exactly_its_answers(page, select, value, wanted):
    expected = matching(**wanted)
    assert expected  # every option of the test has answers to show
    page.select_option(f"#{select}", value)
    assert listed(page) == expected
    assert count(page) == f"{len(expected)} of {len(KNOWN)} answers"


def test_the_options_count_their_answers_and_follow_the_other_filters(page):
    def stopped_counts() -> list[str]:
        return options(page, "f-stopped")

    every = len(KNOWN)
    assert stopped_counts() == [
        f"any ({every})", f"max_steps ({len(matching(stopped='max_steps'))})",
        f"budget ({len(matching(stopped='budget'))})",
        f"not stopped ({len(matching(stopped=None))})"]
    assert options(page, "f-hops") == [f"any ({every})", f"1 ({len(matching(hops=1))})",
                                       f"2+ ({len(matching(hops=two_or_more))})"]
    page.select_option("#f-hops", "2+")  # the stopped options count two-article answers only
    assert stopped_counts() == [
        f"any ({len(matching(hops=two_or_more))})",
        f"max_steps ({len(matching(hops=two_or_more, stopped='max_steps'))})",
        f"budget ({len(matching(hops=two_or_more, stopped='budget'))})",
        f"not stopped ({len(matching(hops=two_or_more, stopped=None))})"]
    # a filter's own options still count as if it were unset: any answer could be chosen
    assert options(page, "f-hops")[1:] == [f"1 ({len(matching(hops=1))})",
                                           f"2+ ({len(matching(hops=two_or_more))})"]


def test_the_filters_combine_with_each_other_and_the_others_and_reset(page):
    page.select_option("#f-system", "iterative")
    page.select_option("#f-wasted", "some")
    assert listed(page) == {k for k in matching(wasted=some) if k[1] == "iterative"}
    page.select_option("#f-hops", "1")
    assert listed(page) == {("s1", "iterative")}
    page.select_option("#f-stopped", "no")
    assert listed(page) == set() and count(page) == f"0 of {len(KNOWN)} answers"
    page.select_option("#f-stopped", "budget")
    page.fill("#f-search", "s1")
    assert listed(page) == {("s1", "iterative")}
    # opening and closing an answer keeps the filters, as it keeps the others
    page.click("#viewer-spacer .vrow")
    page.click("#viewer-close")
    assert listed(page) == {("s1", "iterative")}
    assert [page.input_value(f"#f-{name}") for name in ("stopped", "wasted", "hops")] == [
        "budget", "some", "1"]
    page.click("#f-reset")  # the list follows once the form has reset
    page.wait_for_function("every => document.getElementById('viewer-count').textContent "
                           "=== every", arg=f"{len(KNOWN)} of {len(KNOWN)} answers")
    assert len(listed(page)) == len(KNOWN)
    assert [page.input_value(f"#f-{name}") for name in ("stopped", "wasted", "hops")] == [""] * 3


def opened(tab, system: str, ident: str):
    tab.select_option("#f-system", system)
    tab.fill("#f-search", f"A_f/{ident}")
    assert tab.locator("#viewer-spacer .vrow").count() == 1
    tab.click("#viewer-spacer .vrow")
    return tab.locator("#viewer-detail")


def gold_line(known: dict[str, Any], golds: tuple[str, ...]) -> str:
    found = [f"{title} (step {known['first'][title]})" for title in golds
             if title in known["first"]]
    missed = [title for title in golds if title not in known["first"]]
    wasted = known["wasted"]
    return ("gold found: " + (", ".join(found) or "none")
            + (f"; not found: {', '.join(missed)}" if missed else "")
            + ("" if wasted is None else
               f"; {wasted} step{'' if wasted == 1 else 's'} after all gold was found"))


@pytest.mark.parametrize("key", [k for k in KNOWN if GOLDS[k[0]] and row_of(*k).get("steps")],
                         ids="/".join)
def test_the_timeline_marks_the_step_that_first_found_each_gold_article(page, key):
    known = KNOWN[key]
    detail = opened(page, key[1], key[0])
    assert detail.locator(".viewer-gold-found").inner_text() == gold_line(known, GOLDS[key[0]])
    marked = detail.locator(".viewer-steps > li").evaluate_all("""items => items.map(li => [
        li.classList.contains('gold-first'),
        [...li.querySelectorAll('.viewer-step-found li.first .title')].map(t => t.textContent),
        [...li.querySelectorAll('.viewer-step-found li.gold .title')].map(t => t.textContent)])""")
    steps = row_of(*key)["steps"]
    assert len(marked) == len(steps)
    for number, (flagged, first, gold) in enumerate(marked, start=1):
        here = [t for t in GOLDS[key[0]] if known["first"].get(t) == number]
        assert flagged == bool(here) and first == here, number
        found = [c["title"] for c in steps[number - 1]["retrieved"]]
        assert gold == [t for t in found if t in GOLDS[key[0]]], number
    head = detail.locator(".viewer-steps > li.gold-first .viewer-step-head").all_inner_texts()
    assert [h.split("gold found: ")[1] for h in head] == [
        ", ".join(t for t in GOLDS[key[0]] if known["first"].get(t) == n)
        for n in sorted(set(known["first"].values()))]


@pytest.mark.parametrize("key", [("m2", "baseline"), ("s1", "baseline")], ids="/".join)
def test_an_answer_without_steps_has_no_gold_line(page, key):
    detail = opened(page, key[1], key[0])
    assert detail.locator(".viewer-gold-found, .viewer-steps").count() == 0


def side_by_side(tab) -> dict[str, Any]:
    """The side-by-side table as text: its column heads, fact rows and step rows (each cell's
    step kind, or its text where it has no step)."""
    return tab.locator("#viewer-trajectories table").evaluate("""t => ({
        heads: [...t.querySelectorAll('thead th')].map(th => th.textContent),
        facts: [...t.querySelectorAll('tbody.viewer-traj-facts tr')].map(tr =>
            [...tr.children].map(c => c.innerText)),
        steps: [...t.querySelectorAll('tbody.viewer-traj-steps tr')].map(tr =>
            [tr.querySelector('th').textContent, ...[...tr.querySelectorAll('td')].map(td =>
                td.dataset.kind ?? td.textContent)]),
        queries: [...t.querySelectorAll('tbody.viewer-traj-steps tr')].map(tr =>
            [...tr.querySelectorAll('td')].map(td =>
                td.querySelector('.viewer-step-query')?.childNodes[1]?.textContent ?? null))})""")


def tokens(row: dict[str, Any]) -> str:
    spent = [u for role, u in row["usage"].items() if role != "judge"]
    return f"{sum(u['input'] for u in spent):,} in / {sum(u['output'] for u in spent):,} out"


def kinds(row: dict[str, Any], n: int) -> list[str]:
    steps = row.get("steps") or []
    if not steps:
        return ["no steps recorded"] + [""] * (n - 1)
    return [s["kind"] for s in steps] + [""] * (n - len(steps))


def test_two_answers_steps_side_by_side_by_step_number(page):
    opened(page, "react", "m1")
    page.click("#viewer-trajectories-open")
    pane = page.locator("#viewer-trajectories")
    assert pane.is_visible()
    left, right = row_of("m1", "react"), row_of("m1", "iterative")  # the first other answer
    shown = side_by_side(page)
    assert shown["heads"] == ["step", "react", "iterative"]
    facts = {row[0]: row[1:] for row in shown["facts"]}
    assert facts["answer"] == [left["answer"], right["answer"]]
    assert facts["grade"] == ["truthfulness 4 · relevance 3"] * 2
    assert facts["tokens"] == [tokens(left), tokens(right)]
    assert facts["stopped"] == ["no", "no"]
    assert facts["gold"] == [gold_line(KNOWN["m1", "react"], GOLDS["m1"]),
                             gold_line(KNOWN["m1", "iterative"], GOLDS["m1"])]
    n = len(right["steps"])
    assert shown["steps"] == [[str(k + 1), a, b] for k, (a, b) in enumerate(
        zip(kinds(left, n), kinds(right, n)))]
    assert [q for q in shown["queries"]] == [
        [(left["steps"][k]["query"] if k < len(left["steps"]) else None),
         right["steps"][k]["query"]] for k in range(n)]
    # each step row holds both answers' step of that number, left column left of the right one
    cells = pane.locator("tbody.viewer-traj-steps tr").nth(1).locator("td")
    a, b = cells.nth(0).bounding_box(), cells.nth(1).bounding_box()
    assert abs(a["y"] - b["y"]) < 1 and a["x"] + a["width"] <= b["x"]
    pane.scroll_into_view_if_needed()
    page.screenshot(path=str(artefact("trajectories-m1")))


def test_choosing_the_answers_redraws_and_a_row_without_steps_says_so(page):
    opened(page, "react", "m2")
    page.click("#viewer-trajectories-open")
    page.select_option("#viewer-traj-b", label="baseline")  # a row written before steps
    shown = side_by_side(page)
    react = row_of("m2", "react")
    assert shown["heads"] == ["step", "react", "baseline"]
    assert shown["steps"] == [[str(k + 1), a, b] for k, (a, b) in enumerate(
        zip(kinds(react, 5), kinds({}, 5)))]
    assert {row[0]: row[1:] for row in shown["facts"]}["stopped"] == [
        "stopped at its most steps (max_steps)", "no"]
    page.select_option("#viewer-traj-a", label="iterative")
    shown = side_by_side(page)
    assert shown["heads"] == ["step", "iterative", "baseline"]
    assert shown["steps"] == [["1", "search", "no steps recorded"], ["2", "answer", ""]]
    assert {row[0]: row[1:] for row in shown["facts"]}["stopped"] == [
        "stopped when its token budget was spent (budget)", "no"]


def test_markup_in_the_side_by_side_view_is_text(page):
    scripts = page.locator("script").count()
    opened(page, "iterative", "m1")
    page.click("#viewer-trajectories-open")
    page.select_option("#viewer-traj-b", label="react")
    pane = page.locator("#viewer-trajectories")
    third = pane.locator("tbody.viewer-traj-steps tr").nth(2).locator("td").first
    assert third.locator(".viewer-step-query").inner_text() == f"query {SCRIPT_QUERY}"
    assert pane.locator("script, img").count() == 0
    assert page.locator("script").count() == scripts  # none added; `page` checks no dialog ran


def test_the_side_by_side_view_works_from_the_keyboard(page):
    page.select_option("#f-system", "react")
    page.fill("#f-search", "A_f/m1")
    page.focus("#viewer-spacer .vrow")
    page.keyboard.press("Enter")
    assert page.locator("#viewer-detail h3").inner_text() == "react · A_f / m1"
    assert page.evaluate("document.activeElement.id") == "viewer-close"
    page.keyboard.press("Tab")  # the compare-with list
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "viewer-trajectories-open"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "viewer-traj-a"
    assert side_by_side(page)["heads"] == ["step", "react", "iterative"]
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "viewer-traj-b"
    page.keyboard.press("ArrowDown")  # iterative -> baseline, the next answer to m1
    assert side_by_side(page)["heads"] == ["step", "react", "baseline"]
    assert side_by_side(page)["steps"][0] == ["1", "search", "answer"]


def artefact(name: str) -> Path:
    folder = Path(__file__).resolve().parents[2] / "results" / "artefacts" / "viewer"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.png"
