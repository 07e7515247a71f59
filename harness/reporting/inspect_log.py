"""Run directories' answers as one inspect_ai eval log (docs/export.md#inspect_ai-eval-logs). It is
for inspect_ai's `read_eval_log` and `inspect view`; reading only the runs' rows, it makes no call.

The log is written as the JSON of inspect_ai's log format version 2 (`EvalLog`, the `.json`
kind of log), by freshrag itself rather than through inspect_ai's types: freshrag does not
depend on inspect_ai, and the tests read every log written with inspect_ai's own
`read_eval_log` (the release in pyproject.toml's test extra) and open it in `inspect view`
(docs/design.md#the-inspect_ai-export). One `EvalSample` per pair, failed ones too:

    id, epoch        SYSTEM/QUESTION_ID (the run and dataset before it where the rows hold
                     several), the pair's epoch
    input, target    the question; its reference answer ("" where the set has none)
    messages         the question (user); each step: a search or a read as an assistant's tool
                     call and the tool's result (the chunks found: title, index, score, text
                     where the row kept it), a decision, a reasoning step or an earlier answer as
                     assistant text, with the model and tokens of the step's calls in the
                     message's metadata; the answer (assistant) last
    scores           `judge`: {truthfulness, relevance} (both null when unscored, `reason` then
                     why), the judge's one line in `explanation`; each scorer: its metrics, its
                     status in `reason` where it gave none
    model_usage      tokens per model from the pair's calls; role_usage per role
    error            a failed pair's error (and its traceback where the row kept one)

No value is NaN (freshrag writes no non-finite number: an unscored grade is null inside the
score's value). `eval.viewer.trust_content` is false: questions, answers and chunk texts come
from models and Wikipedia, so the viewer shows them as plain text, never as markdown or HTML.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping, Sequence

from freshrag import __version__
from freshrag.core.records import CallRecord, SampleRow, StepRecord
from freshrag.core.samples import judge_scores
from freshrag.core.stats import mean
from freshrag.core.summary import models_of, summary_of, whole_calls
from freshrag.reporting.export_rows import (
    READ_TOOL,
    SEARCH_TOOL,
    answered,
    chunk_texts,
    gold_titles,
    pair_ids,
)

LOG_VERSION = 2  # inspect_ai's log format version written here
JUDGE = "judge"
NO_TIME = "1970-01-01T00:00:00+00:00"  # rows without `finished_at` (made by hand, imported)


def eval_log(rows: Sequence[SampleRow]) -> dict[str, Any]:
    """The whole log: its spec, the results (each score's mean per system), the tokens per
    model, and one sample per row."""
    ids = pair_ids(rows, ("run", "dataset", "system"))
    samples = [eval_sample(row, ident) for row, ident in zip(rows, ids)]
    times = sorted(moment for row in rows if (moment := _time(row.get("finished_at"))))
    started, completed = ((times[0].isoformat(), times[-1].isoformat()) if times
                          else (NO_TIME, NO_TIME))
    return {
        "version": LOG_VERSION, "status": "success",
        "eval": _spec(rows, ids, started),
        "results": _results(rows),
        "stats": {"started_at": started, "completed_at": completed,
                  "model_usage": _summed(sample["model_usage"] for sample in samples),
                  "role_usage": _summed(sample["role_usage"] for sample in samples)},
        "samples": samples,
    }


def _time(text: Any) -> datetime | None:
    """A row's time in UTC (one without a zone taken as UTC, as the runner writes them); None
    for none, or for text that is no ISO 8601 time, which inspect_ai would refuse."""
    try:
        moment = datetime.fromisoformat(str(text).replace("Z", "+00:00")) if text else None
    except ValueError:
        return None
    if moment is None:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
            ).astimezone(timezone.utc)


def _spec(rows: Sequence[SampleRow], ids: Sequence[str], created: str) -> dict[str, Any]:
    systems = list(dict.fromkeys(row["system"] for row in rows))
    datasets = list(dict.fromkeys(str(row.get("dataset")) for row in rows))
    models = list(dict.fromkeys(model for row in rows
                                if (model := _role_models(row).get("answer"))))
    runs = list(dict.fromkeys(str(row.get("run")) for row in rows))
    digest = hashlib.sha256(json.dumps([runs, systems], ensure_ascii=False)
                            .encode("utf-8", "surrogatepass")).hexdigest()[:22]
    return {
        "eval_id": digest, "run_id": digest, "created": created,
        "task": f"freshrag/{'+'.join(datasets)}", "task_id": digest,
        "solver": ",".join(systems),
        "dataset": {"name": "+".join(datasets), "samples": len(set(ids)),
                    "sample_ids": list(dict.fromkeys(ids))},
        "model": ", ".join(models) or "none",
        "config": {"epochs": max((row.get("epoch") or 1 for row in rows), default=1)},
        "packages": {"freshrag": __version__},
        "metadata": {"runs": runs, "systems": systems},
        "viewer": {"trust_content": False},
    }


# --------------------------------------------------------------------------- a sample

def eval_sample(row: SampleRow, ident: str) -> dict[str, Any]:
    """One pair as an `EvalSample`."""
    answer = row.get("answer") if answered(row) else None
    reference = row.get("reference")
    sample: dict[str, Any] = {
        "id": ident, "epoch": row.get("epoch") or 1, "input": row.get("question") or "",
        "target": reference if isinstance(reference, str) else "",
        "messages": messages(row),
        "output": _output(row, answer),
        "scores": scores(row),
        "metadata": _identity(row),
        "model_usage": model_usage(row), "role_usage": role_usage(row),
    }
    if isinstance(row.get("latency_s"), (int, float)):
        sample["total_time"] = row["latency_s"]
    if finished := _time(row.get("finished_at")):
        sample["completed_at"] = finished.isoformat()
    if row["status"] != "ok":
        sample["error"] = {"message": str(row.get("error") or "failed"),
                           "traceback": str(row.get("error_detail") or ""),
                           "traceback_ansi": str(row.get("error_detail") or "")}
    return sample


def messages(row: SampleRow) -> list[dict[str, Any]]:
    """The question, each step as messages, the answer: see the module docstring."""
    steps = list(row.get("steps") or [])
    calls = list(row.get("calls") or [])
    texts = chunk_texts(row)
    made: list[dict[str, Any]] = [{"role": "user", "content": row.get("question") or "",
                                   "source": "input"}]
    used = 0
    for number, step in enumerate(steps, 1):
        count = max(0, min(int(step.get("calls") or 0), len(calls) - used))
        spent, used = calls[used:used + count], used + count
        last = number == len(steps) and step["kind"] == "answer" and answered(row)
        made += _step_messages(step, spent, texts, f"call-{number}",
                               str(row.get("answer")) if last else None)
    if answered(row) and not (steps and steps[-1]["kind"] == "answer"):
        made.append(_assistant(str(row.get("answer") or ""), []))
    return made


def _step_messages(step: StepRecord, calls: Sequence[CallRecord],
                   texts: Mapping[tuple[str, int], str], call_id: str,
                   answer: str | None) -> list[dict[str, Any]]:
    """A step as messages: a search or a read as the assistant's tool call and the tool's
    result, the row's answer (`answer`, on its last step) or any other step with text as
    assistant text; a step without text, none."""
    if step["kind"] == "search" or (step["kind"] == "read" and step.get("title")):
        name, arguments = ((SEARCH_TOOL, {"query": step.get("query") or ""})
                           if step["kind"] == "search" else (READ_TOOL,
                                                             {"title": step.get("title")}))
        found = [_chunk(chunk, texts) for chunk in step.get("retrieved") or []] \
            if step["kind"] == "search" else [{"title": step.get("title")}]
        call = _assistant("", calls, step)
        call["tool_calls"] = [{"id": call_id, "function": name, "arguments": arguments,
                               "type": "function"}]
        return [call, {"role": "tool", "content": json.dumps(found, ensure_ascii=False),
                       "tool_call_id": call_id, "function": name}]
    if answer is not None:  # the row's answer: its text as written, not the step's
        return [_assistant(answer, calls, step)]
    text = step.get("text")
    if not text:
        return []
    return [_assistant(f"decide: {text}" if step["kind"] == "decide" else text, calls, step)]


def _assistant(text: str, calls: Sequence[CallRecord],
               step: StepRecord | None = None) -> dict[str, Any]:
    """An assistant message; the step's kind and its calls' models and tokens in metadata."""
    message: dict[str, Any] = {"role": "assistant", "content": text, "source": "generate"}
    models = list(dict.fromkeys(call["model"] for call in calls if call.get("model")))
    if models:
        message["model"] = ", ".join(models)
    if step is not None:
        message["metadata"] = {"step": step["kind"], "calls": len(calls),
                               "usage": _summed(_call_usage(call) for call in calls)}
    return message


def _chunk(chunk: Mapping[str, Any], texts: Mapping[tuple[str, int], str]) -> dict[str, Any]:
    found = {"title": chunk.get("title"), "index": chunk.get("index"),
             "score": chunk.get("score")}
    text = texts.get((chunk.get("title"), chunk.get("index", -1)))  # type: ignore[arg-type]
    return {**found, "text": text} if text is not None else found


def _output(row: SampleRow, answer: Any) -> dict[str, Any]:
    """The answer as the model's output (empty for a failed pair, with its error)."""
    model = _role_models(row).get("answer") or ""
    if not isinstance(answer, str):
        return {"model": model, "choices": [], "error": str(row.get("error") or "failed")}
    stop = "max_tokens" if row.get("stopped") == "budget" else "stop"
    return {"model": model, "completion": answer, "choices": [
        {"message": {"role": "assistant", "content": answer, "source": "generate"},
         "stop_reason": stop}]}


def scores(row: SampleRow) -> dict[str, Any]:
    """The judge's grade (its two fields, null when unscored, with why) and each scorer's."""
    found: dict[str, Any] = {}
    grade = row.get("grade")
    if grade is not None and row["status"] == "ok":
        graded = judge_scores(summary_of(row))
        found[JUDGE] = {
            "value": {"truthfulness": None if graded is None else graded["truthfulness"],
                      "relevance": None if graded is None else graded["relevance"]},
            "answer": row.get("answer"),
            "explanation": grade.get("reason") if graded is not None else None,
            "reason": None if graded is not None else grade.get("unscored_reason"),
            "metadata": {"graded_by": grade.get("graded_by")} if grade.get("graded_by")
            else None}
    for scorer, score in sorted((row.get("scores") or {}).items()):
        status = score.get("status")
        found[scorer] = {"value": dict(score.get("metrics") or {}),
                         "explanation": score.get("reason"),
                         "reason": None if status == "scored" else status}
    return {name: {key: value for key, value in score.items() if value is not None}
            for name, score in found.items()}


def _identity(row: SampleRow) -> dict[str, Any]:
    details = row.get("details") or {}
    return {"run": row.get("run"), "dataset": row.get("dataset"), "system": row["system"],
            "question_id": row["question_id"], "status": row["status"],
            "gold_titles": gold_titles(row), "retrievals": row.get("retrievals"),
            "decision": details.get("decision"), "stopped": row.get("stopped"),
            "tokens_estimated": any(u.get("estimated") for u in (row.get("usage") or {}).values()),
            "tokens_unknown": sorted(details.get("unknown") or [])}


# --------------------------------------------------------------------------- tokens

def model_usage(row: SampleRow) -> dict[str, dict[str, int]]:
    """Tokens per model: from the pair's calls, and for a role that made none (an imported
    system's answer, which reports its tokens but not its calls) from the role's tokens under
    the model the row names for it; a role whose tokens its system did not report is left out."""
    calls = [call for call in row.get("calls") or [] if call.get("model") and call.get("usage")]
    found: dict[str, list[dict[str, int]]] = {}
    for call in calls:
        found.setdefault(call["model"], []).append(_call_usage(call))
    called, models = {call.get("role") for call in calls}, _role_models(row)
    for role, spent in role_usage(row).items():
        if role not in called:
            found.setdefault(models.get(role, role), []).append(spent)
    return {model: _summed(spent) for model, spent in found.items()}


def role_usage(row: SampleRow) -> dict[str, dict[str, int]]:
    """Tokens per role (answer, decision, judge, ...), as the row sums them."""
    unknown = (row.get("details") or {}).get("unknown") or ()
    return {role: _usage(spent.get("input", 0), spent.get("output", 0))
            for role, spent in (row.get("usage") or {}).items()
            if role == JUDGE or not unknown}


def _call_usage(call: CallRecord) -> dict[str, int]:
    spent = call.get("usage") or {"input": 0, "output": 0}
    return _usage(spent.get("input", 0), spent.get("output", 0))


def _usage(given: int, made: int) -> dict[str, int]:
    return {"input_tokens": int(given), "output_tokens": int(made),
            "total_tokens": int(given) + int(made)}


def _summed(usages: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Usages summed key by key: a dict of counts, or of models (or roles) to counts."""
    total: Counter[str] = Counter()
    nested: dict[str, list[Mapping[str, Any]]] = {}
    for usage in usages:
        for key, value in usage.items():
            if isinstance(value, Mapping):
                nested.setdefault(key, []).append(value)
            else:
                total[key] += value
    return {**{key: _summed(values) for key, values in nested.items()}, **dict(total)}


# --------------------------------------------------------------------------- results

def _results(rows: Sequence[SampleRow]) -> dict[str, Any]:
    """Each score's mean per system (one system: its mean), over the pairs it scored."""
    systems = list(dict.fromkeys(row["system"] for row in rows))
    values: dict[tuple[str, str], dict[str, list[float]]] = {}
    for row in rows:
        for scorer, fields in _values(row).items():
            for name, value in fields.items():
                per_system = values.setdefault((scorer, name), {})
                per_system.setdefault(row["system"], [])
                if value is not None:
                    per_system[row["system"]].append(float(value))
    scored = []
    for (scorer, name), per_system in values.items():
        counted = sum(len(found) for found in per_system.values())
        metrics = {}
        for system in systems:
            average = mean(per_system.get(system) or [], places=4)
            if average is not None:
                key = "mean" if len(systems) == 1 else system
                metrics[key] = {"name": key, "value": average,
                                **({"group": "mean"} if len(systems) > 1 else {})}
        scored.append({"name": name, "scorer": scorer, "scored_samples": counted,
                       "unscored_samples": len(rows) - counted, "metrics": metrics})
    return {"total_samples": len(rows),
            "completed_samples": sum(row["status"] == "ok" for row in rows), "scores": scored}


def _values(row: SampleRow) -> dict[str, dict[str, float | None]]:
    """A row's score values by scorer and name (the judge's null where unscored)."""
    found: dict[str, dict[str, float | None]] = {}
    if row["status"] == "ok" and row.get("grade") is not None:
        graded = judge_scores(summary_of(row)) or {}
        found[JUDGE] = {name: graded.get(name) for name in ("truthfulness", "relevance")}
    for scorer, score in (row.get("scores") or {}).items():
        found[scorer] = dict(score.get("metrics") or {})
    return found


def _role_models(row: SampleRow) -> dict[str, str]:
    """Which model played each role in a whole row (the answer summary's rule)."""
    return models_of(row, whole_calls(row.get("calls") or []))
