"""What tells one report row from another: the identity of a run
(docs/reports.md#how-runs-are-told-apart).

Every table, figure and comparison of a report is made per *identity*: dataset, system, the
model that played each role, and the run directory. The rule:

- Rows are taken per (run directory, dataset, system): two run directories are never pooled,
  even with identical settings (two runs of one configuration are two samples, and pooling them
  would give each question twice).
- The models come from the rows themselves: each call records its role and model
  (`calls[*].role`, `calls[*].model`); imported rows, which have no calls, name theirs in
  `models` (harness/run/legacy.py); `loading.load_runs` adds the run's embedding model (manifest
  `index.embedding_model`) as role `embeddings` to rows that retrieved, with the text weight
  when the lexical side took part (`retriever_model`), so that runs at two weights are two rows
  and are never compared as one retriever. A role that played more
  than one model in one directory (a run resumed with other settings) shows them all, joined by
  " + ", and the analysis notes it.
- The run directory is shown (a `run` field in every row of every table) only when it is needed,
  i.e. when two rows of the report have the same dataset, system and models. A report on one
  run directory never shows it.
- Short labels name an identity in figures and paired comparisons: the system, followed in
  brackets by what tells it from the other rows of its dataset and system (the roles whose
  models differ, and the run directory when one has the same models: its name, or as many of
  its path's last parts as tell it apart), e.g. `naive [answer: gpt-4o-mini]`,
  `naive [run: run-b]`. A system that ran once is labelled by its name alone. The summary's
  system cell shows the label, in the terminal and on the HTML page.
- Like with like (`comparable`): the same dataset and judge model, and the same model in every
  other role both used. Paired comparisons, the decision analysis and the Pareto front compare
  only such identities; scores from two judges are not on one scale.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any, Final, Iterable, Iterator

from freshrag.core.summary import AnswerSummary

ROLE_ORDER = ("answer", "decision", "judge", "embeddings")
MIXED = " + "  # between the models one role played in one run directory
RUN: Final = "run"  # the field and column added when two rows differ only by their run directory


@dataclass(frozen=True)
class Identity:
    """One row of a report. `models` is ((role, model), ...) in ROLE_ORDER; `run` is the run
    directory, set only when the report needs it to tell rows apart."""

    dataset: str
    system: str
    models: tuple[tuple[str, str], ...]
    run: str | None = None
    mixed: tuple[str, ...] = field(default=(), compare=False)  # roles with several models

    @property
    def model_map(self) -> dict[str, str]:
        return dict(self.models)

    @property
    def judge(self) -> str | None:
        return self.model_map.get("judge")

    def fields(self) -> dict[str, Any]:
        """What every table row says about its identity."""
        return {"dataset": self.dataset, "system": self.system, "models": self.model_map,
                **({RUN: self.run} if self.run is not None else {})}


def retriever_model(index: dict[str, Any] | None) -> str | None:
    """The `embeddings` model of a run's index record, e.g. `all-MiniLM-L6-v2-int8` (dense, as
    every run before the lexical side) or `all-MiniLM-L6-v2-int8 (text weight 0.2)`, and the
    background corpus it searched, e.g. `… + corpus wiki-100k (102,400 passages, sha256 …)`."""
    if not index or not index.get("embedding_model"):
        return None
    weight = index.get("text_weight") or 0
    corpus = index.get("corpus")  # a background corpus: another world, another retriever
    return index["embedding_model"] + (f" (text weight {weight:g})" if weight else "") + (
        f" + corpus {corpus['name']} ({corpus['passages']:,} passages, sha256 "
        f"{str(corpus['sha256'])[:12]})" if corpus else "")


def group_rows(answers: list[AnswerSummary]) -> dict[Identity, list[AnswerSummary]]:
    """Answers by identity, in order of first appearance (see the module docstring for the
    rule). A report's tables share one grouping through their `Answers`
    (harness/reporting/answers.py)."""
    buckets: dict[tuple[Any, Any, Any], list[AnswerSummary]] = {}
    for answer in answers:
        buckets.setdefault((answer.dataset, answer.system, answer.run), []).append(answer)
    keys = [_identity(dataset, system, run, group)
            for (dataset, system, run), group in buckets.items()]
    if len({(k.dataset, k.system, k.models) for k in keys}) == len(keys):
        keys = [replace(k, run=None) for k in keys]  # the run directory tells nothing apart
    return dict(zip(keys, buckets.values()))


def _identity(dataset: str, system: str, run: str | None,
              answers: list[AnswerSummary]) -> Identity:
    seen: dict[str, set[str]] = {}
    for answer in answers:  # which model played each role: core/summary.py models_of
        for role, model in answer.models.items():
            seen.setdefault(role, set()).add(str(model))
    roles = ordered_roles(seen)
    return Identity(dataset, system, tuple((r, MIXED.join(sorted(seen[r]))) for r in roles), run,
                    tuple(r for r in roles if len(seen[r]) > 1))


def ordered_roles(roles: Iterable[str]) -> list[str]:
    """ROLE_ORDER first, any other role after them alphabetically."""
    roles = set(roles)
    return [r for r in ROLE_ORDER if r in roles] + sorted(roles - set(ROLE_ORDER))


def models_label(models: dict[str, Any]) -> str:
    """`answer, decision: m1; judge: m2` (roles sharing a model named together); `–` for none."""
    by_model: dict[Any, list[str]] = {}
    for role in ordered_roles(models):
        by_model.setdefault(models[role], []).append(role)
    return "; ".join(f"{', '.join(roles)}: {'–' if model is None else model}"
                     for model, roles in by_model.items()) or "–"


def labels(keys: Iterable[Identity]) -> dict[Identity, str]:
    """A short, unique name for each identity (see the module docstring)."""
    keys = list(keys)
    named = {}
    for key in keys:
        siblings = [k for k in keys
                    if k != key and (k.dataset, k.system) == (key.dataset, key.system)]
        mine = key.model_map
        roles = ordered_roles({r for k in [key, *siblings] for r in k.model_map})
        differing = {r: mine.get(r) for r in roles
                     if any(k.model_map.get(r) != mine.get(r) for k in siblings)}
        parts = [models_label(differing)] if differing else []
        twins = [k.run for k in siblings if k.models == key.models and k.run is not None]
        if key.run is not None and twins:
            parts.append(f"run: {short_run(key.run, twins)}")
        named[key] = f"{key.system} [{'; '.join(parts)}]" if parts else key.system
    return named


def short_run(run: str, others: Iterable[str]) -> str:
    """The run directory by as few of its path's last parts as tell it from `others`: its name
    (`run-b` for results/run-b), or more where two share it (`a/run`, `b/run`)."""
    parts = PurePath(run).parts
    theirs = [PurePath(other).parts for other in others if other != run]
    for n in range(1, len(parts)):
        if all(other[-n:] != parts[-n:] for other in theirs):
            return "/".join(parts[-n:])
    return run


def row_labels(rows: list[dict[str, Any]]) -> list[str]:
    """Each table row's short name (`labels`), from the identity fields it carries (dataset,
    system, models, run: `Identity.fields`); a row without models is named by its system."""
    keys = [Identity(row["dataset"], row["system"],
                     tuple((role, row["models"][role]) for role in ordered_roles(row["models"])),
                     row.get(RUN)) if isinstance(row.get("models"), dict) else None
            for row in rows]
    named = labels([key for key in keys if key is not None])
    return [named[key] if key is not None else str(row.get("system")) for row, key in
            zip(rows, keys)]


def comparable(a: Identity, b: Identity) -> bool:
    """Like with like: same dataset and judge, and the same model in every other shared role."""
    first, second = a.model_map, b.model_map
    return a.dataset == b.dataset and a.judge == b.judge and all(
        first[role] == second[role] for role in first.keys() & second.keys())


def judged_alike(keys: Iterable[Identity]) -> Iterator[tuple[Identity, Identity]]:
    """Every two identities, in their order, of one dataset judged by one model: the pairs a
    paired comparison is made for (two judges' scores are not on one scale)."""
    keys = list(keys)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            if (a.dataset, a.judge) == (b.dataset, b.judge):
                yield a, b


def mixed_notes(keys: Iterable[Identity]) -> list[str]:
    """One line per identity whose run directory mixes models in a role."""
    keys = list(keys)
    names = labels(keys)
    return [f"{k.dataset} / {names[k]}: {role} played by "
            f"{k.model_map[role].replace(MIXED, ' and ')} in one run directory (resumed with "
            f"other settings); reported as one row" for k in keys for role in k.mixed]
