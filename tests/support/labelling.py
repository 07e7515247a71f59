"""The labelling page's test helpers (docs/reports.md#labelling-answers): rows written by hand
whose names no text meets by chance, the page's data, and a headless Chromium tab on the page
(tests/support/dom.py) that fails its test on any request, script error or unexpected dialog."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from freshrag.scoring.judge import ARTICLE_MARK
from tests.support.dom import parse

ALPHA, BETA, GAMMA = "zqxsys-alpha-7731", "zqxsys-beta-4410", "zqxsys-gamma-2259"
RUNS = ("run-zqxrun-one", "run-zqxrun-two")
MODELS = ("model-zqxans-9", "judge-zqxjdg-5")
REASON = "JUDGEREASON-zqx: the year matches the article"
ARTICLE = "Gold q1 is a bridge over the Foo, opened in 2024."
SECRETS = (ALPHA, BETA, GAMMA, *RUNS, *MODELS, REASON, "zqx")
ITEM_FIELDS = {"dataset", "question_id", "question", "reference", "gold_titles", "passage",
               "answer", "key", "answer_sha256"}


def row(question: str, system: str, answer: str | None, *, status: str = "ok",
        reference: str | None = None) -> dict[str, Any]:
    text = f"When did the {question} bridge open?"
    user = f"Query: {text}\n\nChatbot's answer: {answer}{ARTICLE_MARK}{ARTICLE}"
    judge = {"role": "judge", "model": MODELS[1], "text": None, "tool_name": "submit_grade",
             "tool_arguments": json.dumps({"truthfulness": 4, "relevance": 3, "reason": REASON}),
             "usage": {"input": 900, "output": 90, "estimated": False}, "latency_s": 0.5,
             "cache_hit": False, "messages": [{"role": "user", "content": user}]}
    ok = status == "ok"
    return {"dataset": "A_f", "question_id": question, "question": text,
            "gold_title": f"Gold {question}", "reference": reference, "system": system,
            "status": status, "answer": answer, "retrievals": 0,
            "usage": {"answer": {"input": 100, "output": 10, "estimated": False}},
            "grade": {"truthfulness": 4, "relevance": 3, "unscored_reason": None,
                      "raw": [judge["tool_arguments"]], "reason": REASON} if ok else None,
            "calls": [{"role": "answer", "model": MODELS[0], "text": answer,
                       "usage": {"input": 100, "output": 10, "estimated": False},
                       "latency_s": 1.0, "cache_hit": False, "messages": []}]
            + ([judge] if ok else []),
            "details": {}, "error": None if ok else "HTTP 500 after 6 attempts"}


def page_data(page: str) -> dict[str, Any]:
    return json.loads(parse(page).by_id("label-data").text())


def pressed(tab, field: str) -> list[str]:
    return tab.eval_on_selector_all(f"#label-{field} button[aria-pressed=true]",
                                    "buttons => buttons.map(b => b.textContent)")


def saved(tab, path: Path) -> Path:
    with tab.expect_download() as download:
        tab.keyboard.press("s")
    download.value.save_as(path)
    return path


@contextlib.contextmanager
def labelling_tab(chromium, url: str):
    """A tab on the page; at the end no request beyond its own file and its download, no
    script error and no dialog but the question before leaving (counted in `tab.warned`)."""
    tab = chromium.new_page(accept_downloads=True)
    requests, errors = [], []
    tab.on("request", lambda r: requests.append(r.url)
           if not r.url.startswith(("file:", "data:", "blob:")) else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.warned = []  # the page's question before leaving: answered "leave"

    def dialog(d) -> None:
        if d.type == "beforeunload":
            tab.warned.append(d.type)
            d.accept()
        else:
            errors.append(f"dialog {d.message}")
            d.dismiss()

    tab.on("dialog", dialog)
    tab.goto(url)
    yield tab
    assert requests == [] and errors == []
