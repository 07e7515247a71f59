"""`--distractors K`: per question of a multi-hop set, K articles close to its gold ones put into
the retrieval database beside them, so that finding the gold articles is a real search
(docs/building.md#distractors; HotpotQA's distractor setting).

An article is close by three signs: it is a linked neighbour of a gold article (a gold one links
to it, or it to a gold one: the link table of `links.jsonl`), it has the infobox type of a gold
one (`facts.sqlite`), or it was created in the month of a gold one. The candidates are the
dataset's articles and the linked neighbours the sample left out, `FETCHED` x K at most per
question in link order, fetched from the build's source (the dump read again, or the wiki asked)
and kept if they would pass A_r's rules. The K with the most signs are the question's
distractors, ties in an order seeded by the build's seed and the question's id; never one of its
gold articles; fewer than K when fewer are close (counted as `short`). A distractor fetched from
the source is appended to `articles.jsonl`, so the index holds it; one there already is named.
`distractors.jsonl` holds each question's distractors and why each is close; written whole, so
that a resumed build does not choose again.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from freshrag.builders.records import read_records
from freshrag.builders.sources.pages import Page, classify
from freshrag.builders.styles.base import ARTICLES, QUESTIONS, read_articles
from freshrag.builders.styles.facts import FACTS, closing_db, infobox_facts
from freshrag.builders.styles.multihop_plan import read_links
from freshrag.core.jsonl import JsonlWriter, replace_jsonl

DISTRACTORS = "distractors.jsonl"
FETCHED = 3  # linked neighbours outside the dataset fetched per distractor asked for
SIGNS = ("linked", "infobox", "month")


def add_distractors(out: Path, per_question: int, seed: int, open_source: Callable[[], Any]) -> str:
    """Choose and add the distractors of questions.jsonl's questions, unless done; in words."""
    if not (out / DISTRACTORS).exists():
        questions = [row for row in read_records(out / QUESTIONS) if row.get("gold_titles")]
        articles = read_articles(out)
        near = Neighbourhood(out, articles)
        outside = [title for row in questions
                   for title in near.outside(row["gold_titles"], FETCHED * per_question)]
        fetched = near.fetch(open_source, list(dict.fromkeys(outside))) if outside else {}
        rows = [{"id": row["id"], "gold_titles": row["gold_titles"],
                 "distractors": near.choose(row, per_question, seed, fetched)}
                for row in questions]
        added = {d["title"] for row in rows for d in row["distractors"] if d["added"]}
        writer = JsonlWriter(out / ARTICLES)  # before the list, which marks the step finished
        try:
            for title in sorted(added):
                writer.write(fetched[title].article_row())
        finally:
            writer.close()
        replace_jsonl(out / DISTRACTORS, rows)
    counts = distractor_counts(out, per_question)
    return f"{counts['chosen']} distractors ({counts['added']} articles added)"


class Neighbourhood:
    """The closeness signs of the dataset's articles and of the pages fetched for it."""

    def __init__(self, out: Path, articles: dict[str, dict[str, Any]]):
        self.articles = articles
        self.links = {title: [link["title"] for link in links]
                      for title, links in read_links(out).items()}
        self.linked_to: dict[str, set[str]] = {}
        for title, targets in self.links.items():
            for target in targets:
                self.linked_to.setdefault(target, set()).add(title)
        self.months = {title: row.get("month") for title, row in articles.items()}
        self.infoboxes: dict[str, set[str]] = {}
        if (out / FACTS).exists():
            with closing_db(out / FACTS) as db:
                for article, infobox in db.execute("SELECT DISTINCT article, infobox FROM facts"):
                    self.infoboxes.setdefault(article, set()).add(infobox)

    def neighbours(self, golds: list[str]) -> list[str]:
        """The pages the gold articles link to, then those linking to them, each once."""
        found = [t for gold in golds for t in self.links.get(gold, [])] + \
            [t for gold in golds for t in sorted(self.linked_to.get(gold, ()))]
        return [title for title in dict.fromkeys(found) if title not in golds]

    def outside(self, golds: list[str], most: int) -> list[str]:
        return [t for t in self.neighbours(golds) if t not in self.articles][:most]

    def fetch(self, open_source: Callable[[], Any], titles: list[str]) -> dict[str, Page]:
        """The pages of `titles` the source has that pass A_r's rules, their signs noted."""
        pages: dict[str, Page] = {}
        for page in open_source().fetch_titles(titles):
            page = classify(page, {title: title for title in pages})
            if page.discard is None:
                pages[page.title] = page
                self.months[page.title] = page.month()
                if page.wikitext:
                    self.infoboxes[page.title] = {fact.infobox for fact in infobox_facts(
                        page.title, page.created, page.wikitext)}
        return pages

    def choose(self, question: dict[str, Any], k: int, seed: int,
               fetched: dict[str, Page]) -> list[dict[str, Any]]:
        golds = question["gold_titles"]
        linked = set(self.neighbours(golds))
        boxes = set().union(*(self.infoboxes.get(gold, set()) for gold in golds))
        months = {self.months.get(gold) for gold in golds} - {None}
        pool = [t for t in [*self.articles, *fetched] if t not in golds]
        random.Random(f"{seed}:{question['id']}").shuffle(pool)
        scored: list[tuple[int, int, str, list[str]]] = []
        for title in pool:
            signs = [name for name, close in (
                ("linked", title in linked), ("infobox", bool(self.infoboxes.get(title, set())
                                                             & boxes)),
                ("month", self.months.get(title) in months)) if close]
            if signs:
                scored.append((-len(signs), len(scored), title, signs))
        return [{"title": title, "signs": signs, "added": title not in self.articles}
                for _, _, title, signs in sorted(scored)[:k]]


def distractor_counts(out: Path, per_question: int) -> dict[str, Any]:
    """The funnel's distractors: asked per question, chosen, articles added, questions short of
    K, and how many distractors each sign made close."""
    rows = read_records(out / DISTRACTORS)
    chosen = [d for row in rows for d in row["distractors"]]
    return {"per_question": per_question, "chosen": len(chosen),
            "added": sum(d["added"] for d in chosen),
            "short": sum(len(row["distractors"]) < per_question for row in rows),
            "signs": dict(Counter(sign for d in chosen for sign in d["signs"]))}
