"""A scripted model with a knowledge cutoff, for the effective-cutoff tests: each article states
one distinctive fact (its registry code); closed book the model knows the codes of the articles
it was "trained" on and says "I don't know" for the rest; with an article in its prompt it reads
the code from it; as the judge it grades 5 an answer that holds the article's code, 1 any other. SawChangesBefore
adds changed facts: the value now of the changes it saw, the value then of the others.
"""

from __future__ import annotations

import re

from tests.support.fakes import grade_call

FACT = re.compile(r"registry code is ([A-Z]{2}-[0-9]{4})")
QUESTION = "What is the registry code of {title}?"
ASKED = re.compile(r"What is the registry code of (.+)\?")
DONT_KNOW = "I don't know."


def fact_sentence(code: str) -> str:
    return f"Its registry code is {code}."


class KnowsBefore:
    """The fake server's reply (FakeOpenAIServer(reply=...)): `known` maps the titles the model
    knows closed-book to their codes."""

    def __init__(self, known: dict[str, str]):
        self.known = known

    def __call__(self, request: dict) -> dict:
        if request.get("tool_choice") not in (None, "auto"):
            return self.judge(request)
        system = request["messages"][0]["content"]
        user = request["messages"][-1]["content"]
        if read := FACT.search(system):  # the oracle: the article is in the system prompt
            return {"content": f"The registry code is {read.group(1)}."}
        asked = ASKED.fullmatch(user.strip())
        code = self.known.get(asked.group(1)) if asked else None
        return {"content": f"The registry code is {code}." if code else DONT_KNOW}

    @staticmethod
    def judge(request: dict) -> dict:
        user = request["messages"][-1]["content"]
        answer, _, article = user.partition("\n\nWikipedia article:\n")
        fact = FACT.search(article)
        return grade_call(5, 5) if fact and fact.group(1) in answer else grade_call(1, 1)


# Changed facts (docs/cutoff.md#from-changed-facts): each page states a town's population now;
# closed book the model gives the population now of the towns whose change it saw, the
# population then of the others.
POPULATION = "What is the current population of {title}?"
ASKED_POPULATION = re.compile(r"What is the current population of (.+)\?")
STATED = re.compile(r"has ([0-9]+) inhabitants")


def population_sentence(value: str) -> str:
    return f"It has {value} inhabitants."


class SawChangesBefore(KnowsBefore):
    """KnowsBefore for the articles in `known`; `values` maps a changed fact's town to its
    (value then, value now) and `seen` holds the towns whose change the model saw."""

    def __init__(self, known: dict[str, str], values: dict[str, tuple[str, str]],
                 seen: set[str]):
        super().__init__(known)
        self.values, self.seen = values, seen

    def __call__(self, request: dict) -> dict:
        user = request["messages"][-1]["content"]
        asked = ASKED_POPULATION.fullmatch(user.strip())
        if request.get("tool_choice") not in (None, "auto") or not asked:
            return super().__call__(request)
        if read := STATED.search(request["messages"][0]["content"]):  # the oracle
            return {"content": f"It has {read.group(1)} inhabitants."}
        then, now = self.values[asked.group(1)]
        return {"content": f"It has {now if asked.group(1) in self.seen else then} inhabitants."}

    @staticmethod
    def judge(request: dict) -> dict:
        user = request["messages"][-1]["content"]
        answer, _, article = user.partition("\n\nWikipedia article:\n")
        if stated := STATED.search(article):
            return grade_call(5, 5) if stated.group(1) in answer else grade_call(1, 1)
        return KnowsBefore.judge(request)
