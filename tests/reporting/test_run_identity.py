"""Reports keep runs apart (docs/reports.md#how-runs-are-told-apart): rows are keyed by dataset,
system, the model of every role and the run directory; paired comparisons and the decision analysis
pair only like with like, and say which runs they compared."""

from __future__ import annotations

import json
import pickle

import pytest

from freshrag.cli.main import main
from freshrag.core.stats import mean
from freshrag.reporting import analysis, identity, loading, report, summary_table
from freshrag.reporting import answers as answers_module
from freshrag.reporting.answers import Answers
from freshrag.run.legacy import import_legacy
from tests.support.dom import parse, viewer_samples
from tests.support.rows import summaries
from tests.support.runs import sample, write_run

SCORES = [(5, 5), (4, 4), (2, 3), (1, 2), (3, 3)]
OTHER_SCORES = [(1, 1), (2, 2), (5, 4), (4, 5), (2, 2)]


def rows_of(system, scores=SCORES, **models):
    return [sample(f"q{i}", system, t, r, **models) for i, (t, r) in enumerate(scores)]


def test_two_runs_with_other_models_are_two_rows_each_of_its_own_answers(tmp_path, capsys):
    one = write_run(tmp_path / "one", rows_of("naive", answer="model-a"))
    two = write_run(tmp_path / "two", rows_of("naive", OTHER_SCORES, answer="model-b"))
    code = main(["report", str(one), str(two), "--format", "json", "--out", str(tmp_path / "r")])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["system"], r["n"], r["models"]["answer"]) for r in summary] == [
        ("naive", len(SCORES), "model-a"), ("naive", len(OTHER_SCORES), "model-b")]
    assert [r["truthfulness"] for r in summary] == [
        mean([t for t, _ in scores], places=4) for scores in (SCORES, OTHER_SCORES)]


# (what the second run changes, whether the run directory must be shown, whether the two are
# compared question by question)
VARIANTS = [
    pytest.param({"answer": "model-b"}, False, True, id="answer-model"),
    pytest.param({"decision": "small-decider"}, False, True, id="decision-model"),
    pytest.param({"judge": "judge-2"}, False, False, id="judge-model-only"),
    pytest.param({}, True, True, id="identical-settings-in-two-directories"),
]


@pytest.mark.parametrize("change, run_shown, paired", VARIANTS)
def test_runs_that_differ_in_one_setting_are_never_pooled(tmp_path, change, run_shown, paired):
    settings = {"answer": "model-a", "decision": "decider-1", "judge": "judge-1"}
    one = write_run(tmp_path / "one", rows_of("boolean", **settings))
    two = write_run(tmp_path / "two", rows_of("boolean", OTHER_SCORES, **{**settings, **change}))
    rows = loading.load_runs([one, two])
    summary = summary_table.summarise(summaries(rows))
    assert [r["n"] for r in summary] == [len(SCORES), len(OTHER_SCORES)]
    assert [r.get("run") for r in summary] == ([str(one), str(two)] if run_shown else [None] * 2)
    assert [r["models"] for r in summary] == [settings, {**settings, **change}]

    labels = list(identity.labels(identity.group_rows(summaries(rows))).values())
    for label, source, models in zip(labels, (one, two), (settings, {**settings, **change})):
        shown = [f"run: {source.name}"] if run_shown else [models[role] for role in change]
        assert all(part in label for part in shown), label
        assert models["answer"] not in label or "answer" in change  # only what tells them apart
    result = analysis.analyse(summaries(rows))
    compared = [(p["a"], p["b"], p["questions"]) for p in result["paired"]]
    assert compared == ([(labels[0], labels[1], len(SCORES))] if paired else [])
    if not paired:
        assert any("judge-1" in note and "judge-2" in note for note in result["notes"])


def test_the_same_directory_named_twice_is_read_once(tmp_path):
    one = write_run(tmp_path / "one", rows_of("naive"))
    named = [one, tmp_path / "." / "one"]
    rows = loading.load_summaries(named)
    [row] = summary_table.summarise(rows)
    assert row["n"] == len(SCORES)
    runs = loading.read_runs(named)
    assert [run.name for run in runs] == [str(one)]
    assert loading.run_notes(runs, rows) == []  # the second name is not a run with no rows


def released(n, tag):
    return [{"title": f"T{i}", "question": f"{tag} question {i}?", "answer": "a",
             "n_input_tokens": 10, "n_output_tokens": 2, "truthfulness": 4, "relevance": 4}
            for i in range(n)]


def test_two_imports_with_different_models_are_two_rows(tmp_path):
    """The case that showed the need: two imports of `naive` A_f runs with different --model."""
    for name, model, n in (("paper", "gpt-4-0613", 3), ("local", "local-7b", 4)):
        path = tmp_path / f"{name}.pkl"
        path.write_bytes(pickle.dumps(released(n, name)))
        import_legacy(path, "A_f", "naive", tmp_path / name, model=model)
    rows = loading.load_runs([tmp_path / "paper", tmp_path / "local"])
    summary = summary_table.summarise(summaries(rows))
    assert [(r["n"], r["models"]) for r in summary] == [
        (3, {"answer": "gpt-4-0613"}), (4, {"answer": "local-7b"})]
    # imported question ids repeat across files; questions that differ are never paired
    assert analysis.paired_comparisons(Answers(summaries(rows))) == []


def test_decisions_are_judged_only_against_references_with_the_same_models(tmp_path):
    refs = write_run(tmp_path / "refs", rows_of("baseline") + [
        sample(f"q{i}", "naive", 5, 5, retrieved=True) for i in range(len(SCORES))])
    mine = write_run(tmp_path / "mine", [
        sample(f"q{i}", "boolean", 4, 4, decision="model-a", retrieved=i < 2,
               decided="retrieve" if i < 2 else "no-retrieve") for i in range(len(SCORES))])
    other = write_run(tmp_path / "other", [
        sample(f"q{i}", "boolean", 4, 4, answer="model-b", decision="model-b", retrieved=True,
               decided="retrieve") for i in range(len(SCORES))])
    result = analysis.analyse(summaries(loading.load_runs([refs, mine, other])))
    decisions = result["decisions"]
    assert [(d["system"], d["questions"]) for d in decisions] == [
        ("oracle-router", len(SCORES)), ("boolean", len(SCORES))]
    assert decisions[1]["models"]["decision"] == "model-a"
    assert decisions[1]["retrieved"] == 2
    assert any("boolean" in note and "model-b" in note for note in result["notes"])


def test_references_judged_by_different_judges_give_no_decision_analysis(tmp_path):
    run = write_run(tmp_path / "run", rows_of("baseline", judge="judge-1") + [
        sample(f"q{i}", "naive", 5, 5, retrieved=True, judge="judge-2") for i in range(3)])
    result = analysis.analyse(summaries(loading.load_runs([run])))
    assert result["decisions"] == []
    assert any("baseline" in note and "naive" in note for note in result["notes"])


def test_one_directory_resumed_with_another_model_is_one_row_that_says_so(tmp_path):
    rows = [sample(f"q{i}", "naive", answer="model-a" if i < 3 else "model-b") for i in range(5)]
    loaded = loading.load_runs([write_run(tmp_path / "run", rows)])
    [row] = summary_table.summarise(summaries(loaded))
    assert row["n"] == 5 and "model-a" in row["models"]["answer"] and \
        "model-b" in row["models"]["answer"]
    assert any("model-a" in note and "model-b" in note for note in analysis.analyse(summaries(loaded))["notes"])


def test_every_table_and_the_html_page_show_the_models(tmp_path, capsys):
    one = write_run(tmp_path / "one", rows_of("naive", answer="model-a"))
    two = write_run(tmp_path / "two", rows_of("naive", OTHER_SCORES, answer="model-b"))
    page = tmp_path / "report.html"
    assert main(["report", str(one), str(two), "--out", str(tmp_path / "r"),
                 "--html", str(page)]) == 0
    printed = capsys.readouterr().out
    summary = summary_table.summarise(summaries(loading.load_runs([one, two])))
    # the whole table has a models column; the narrow printed one names them where they differ
    wide = (tmp_path / "r" / report.SUMMARY_MD).read_text()
    for lines in (report.render(summary, "csv").splitlines(), wide.splitlines()):
        assert "models" in lines[0]
    for lines in (report.render(summary, "csv").splitlines(), wide.splitlines(),
                  report.render(summary, "markdown").splitlines()):
        assert [any(model in line for line in lines) for model in ("model-a", "model-b")] == \
            [True, True]
    assert "model-b" in printed.split("Paired comparisons")[1]

    dom = parse(page.read_text(encoding="utf-8"))
    cells = dom.by_id("summary-table").rows()
    assert len(cells) == 2 and ["model-a" in " ".join(c) for c in cells] == [True, False]
    answers: dict[str, list[str]] = {}  # the viewer's answers by question, headed by their label
    for answer in viewer_samples(dom):
        answers.setdefault(answer["q"][1], []).append(answer["label"])
    assert answers and all(len(heads) == 2 and "model-a" in heads[0] and "model-b" in heads[1]
                           for heads in answers.values())


def test_the_embedding_model_tells_retrieving_runs_apart_and_costs_nothing(tmp_path):
    runs = [write_run(tmp_path / name, rows_of("baseline") + [
                sample(f"q{i}", "naive", 5, 5, retrieved=True) for i in range(3)],
                {"dataset": {"name": "A_f"}, "index": {"embedding_model": embedder}})
            for name, embedder in (("one", "minilm"), ("two", "ada-002"))]
    rows = loading.load_runs(runs)
    summary = summary_table.summarise(summaries(rows))
    assert [(r["system"], r["models"].get("embeddings")) for r in summary] == [
        ("baseline", None), ("naive", "minilm"), ("baseline", None), ("naive", "ada-002")]
    naive_labels = [label for key, label in identity.labels(identity.group_rows(summaries(rows))).items()
                    if key.system == "naive"]
    assert ["minilm" in naive_labels[0], "ada-002" in naive_labels[1]] == [True, True]
    costs = analysis.quality_and_cost(Answers(summaries(rows)), {})
    assert all(e["unpriced_models"] == ["model-a"] for e in costs)


def test_a_reports_tables_share_one_grouping_each_handed_its_own(monkeypatch):
    """A report groups its rows once (the Answers its tables share): a table changing what it
    was handed does not change what the next table is handed."""
    rows = rows_of("naive", answer="model-a") + rows_of("baseline", answer="model-a")
    groupings = []
    monkeypatch.setattr(answers_module, "group_rows",
                        lambda made: groupings.append(len(made)) or identity.group_rows(made))
    shared = Answers(summaries(rows))
    for group in shared.groups().values():
        group.clear()
    again = shared.groups()
    assert [len(group) for group in again.values()] == [len(SCORES), len(SCORES)]
    assert groupings == [len(rows)]
