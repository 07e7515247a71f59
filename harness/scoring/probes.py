"""Probes of the judge: before its grades are trusted, can it tell right from wrong?

From the run's own dataset, with no other model, k seeded questions each get three answers:

- *grounded*: the gold article's sentences that share the most words with the question;
- *wrong*: sentences chosen the same way from the article that shares the fewest words with the
  gold one (another topic), so it is fluent text that does not answer;
- *abstaining*: "I don't know.";
- *near miss*: the grounded answer with one number, month or name changed (a hard negative:
  on topic, fluent, sharing every other word with the article), where the grounded answer has
  one to change.

The judge grades each as it grades a run, against the passage of the gold article that the probe
tests (`passage`: the article's first sentence and the sentences around the grounded answer's),
or with `--probe-context article` against the whole article, as a run's answers are (a
multi-article question's against all its gold articles, its grounded answer drawn from all of
them). Every answer of a probe question is graded against the same text: the passage holds all
that the grounded answer and its near miss say, so the judge has what it needs to tell them
apart, at a fraction of a long article's prompt (docs/scoring.md#judge-probes). A judge that
works gives the grounded answer a higher truthfulness than the wrong one, and the abstaining
answer a lower relevance than the grounded one (the paper's instruction: relevance 1 for "I
don't know").
Discrimination per field is the share of probes ordered correctly, ties counted half, with a
bootstrap interval; below the threshold the judge's scores are reported as not informative.
Against the near misses the truthfulness discrimination is reported apart (`near_miss`): a judge
that matches words passes the wrong answer of another topic, and fails here. It does not decide
the verdict, which stays the paper's two fields.
The probes are judge calls like any other: cached, and counted apart from the run's tokens.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

from freshrag.core.concurrency import map_with_progress
from freshrag.core.errors import FreshragError
from freshrag.core.stats import bootstrap_interval
from freshrag.core.types import LLM, Article, Grade, Question, Usage, sum_usage_by_role
from freshrag.llm.client import EndpointError, EndpointUnreachable
from freshrag.scoring import judge

PROBES = 12
# A probe question is three or four judge calls, a pair two or more: one probe question for every
# four pairs keeps a small run's probes at most half its pairs' calls (`scaled`).
PAIRS_PER_PROBE = 4
THRESHOLD = 0.7
ABSTAIN = "I don't know."
SENTENCES = 2  # sentences per made-up answer
AROUND = 1  # sentences a probe's passage keeps either side of each it tests
GAP = "…"  # where a passage leaves sentences out
CONTEXTS = ("passage", "article")  # what the judge grades probes against (--probe-context)
KINDS = ("grounded", "wrong", "abstaining", "near_miss")
# field -> (the answer that should be graded higher, the one that should be graded lower)
ORDERINGS = {"truthfulness": ("grounded", "wrong"), "relevance": ("grounded", "abstaining")}
_STOPWORDS = frozenset("""a an and are as at be by did does for from had has have he her his how in
into is it its of on or she that the their them they this to was were what when where which who
whom whose why with would""".split())
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
_MONTH = re.compile(r"\b(" + "|".join(MONTHS) + r")\b")
# A capitalised word that does not start a sentence: a name, most often.
_NAME = re.compile(r"(?<=[a-z0-9,;:] )[A-Z][a-z]{2,}")


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 1}


def sentences(article: Article) -> list[str]:
    """The article's prose sentences, headings (`== Heading ==`) left out."""
    parts = (s.strip() for s in _SENTENCE_END.split(article.content))
    return [s for s in parts if s and not s.startswith("=")]


def closest(question: str, found: list[str], n: int = SENTENCES) -> list[int]:
    """The indexes of the n sentences of `found` sharing the most words with the question, in
    order (ties: the earlier sentence)."""
    asked = words(question)
    ranked = sorted(range(len(found)), key=lambda i: (-len(asked & words(found[i])), i))
    return sorted(ranked[:n])


def closest_sentences(question: str, article: Article, n: int = SENTENCES) -> str:
    """The n sentences sharing the most words with the question, in the article's order."""
    found = sentences(article)
    return " ".join(found[i] for i in closest(question, found, n))


def passage(article: Article, question: str, tested: str, around: int = AROUND) -> Article:
    """The article cut to what a probe tests: its first sentence (which names its subject), the
    sentences of `tested` (the grounded answer) that are the article's, or else the one closest
    to the question, and `around` sentences either side of each, in the article's order; a gap
    between kept sentences is marked with an ellipsis."""
    found = sentences(article)
    if not found:
        return article
    centres = [i for i, sentence in enumerate(found) if sentence in tested]
    kept = {0}.union(*(range(max(i - around, 0), min(i + around + 1, len(found)))
                       for i in centres or closest(question, found, 1)))
    parts: list[str] = []
    for i in sorted(kept):
        if parts and i - 1 not in kept:
            parts.append(GAP)
        parts.append(found[i])
    return Article(article.title, " ".join(parts), article.url, article.created)


def vocabularies(articles: dict[str, Article]) -> dict[str, set[str]]:
    """Title -> the words of each article that has a sentence to make an answer from."""
    return {a.title: words(a.full_text()) for a in articles.values() if sentences(a)}


def most_distant_article(gold: Article, articles: dict[str, Article], rng: random.Random,
                         vocabulary: dict[str, set[str]] | None = None,
                         golds: tuple[str, ...] = ()) -> Article:
    """The article sharing the smallest share of words with the gold one (ties: seeded), none of
    `golds` (a multi-article question's other gold articles) either.
    `vocabulary` (from `vocabularies`) saves reading every article again for each question."""
    vocabulary = vocabularies(articles) if vocabulary is None else vocabulary
    gold_words = vocabulary.get(gold.title) or words(gold.full_text())
    candidates = [title for title in vocabulary if title != gold.title and title not in golds]
    if not candidates:
        raise ProbeError("judge probes need a second article to make a wrong answer from")
    rng.shuffle(candidates)

    def overlap(title: str) -> float:
        other = vocabulary[title]
        return len(gold_words & other) / (len(gold_words | other) or 1)

    return articles[min(candidates, key=overlap)]


def near_miss(answer: str, rng: random.Random, names: list[str]) -> tuple[str, str] | None:
    """(the answer with one number, month or name changed, which of the three), or None when it
    has none. A number's last digit becomes another (a year stays a year); a month becomes
    another month; a name becomes one of `names` (from another article) that the answer lacks."""
    numbers = list(_NUMBER.finditer(answer))
    if numbers:  # its last digit becomes another: 1937 -> 1934, 4.5 -> 4.8
        found = rng.choice(numbers)
        last = found.end() - 1
        other = rng.choice([d for d in "0123456789" if d != answer[last]])
        return answer[:last] + other + answer[found.end():], "number"
    months = list(_MONTH.finditer(answer))
    if months:
        found = rng.choice(months)
        other = rng.choice([m for m in MONTHS if m != found.group()])
        return answer[:found.start()] + other + answer[found.end():], "month"
    present = list(_NAME.finditer(answer))
    others = sorted({n for n in names if n not in answer})
    if present and others:
        found = rng.choice(present)
        return answer[:found.start()] + rng.choice(others) + answer[found.end():], "name"
    return None


def names_in(text: str) -> list[str]:
    """The capitalised words of a text that do not start its sentences."""
    return [match.group() for match in _NAME.finditer(text)]


@dataclass(frozen=True)
class Probe:
    question: Question
    kind: str
    answer: str
    changed: str | None = None  # a near miss's: "number", "month" or "name"
    # What the judge grades it against: the passages of its question's gold articles that it
    # tests; empty, the whole gold articles (--probe-context article).
    evidence: tuple[Article, ...] = ()


class ProbeError(FreshragError, ValueError):
    """The dataset cannot give probes (a single article)."""


@dataclass(frozen=True)
class ProbeSettings:
    """How a run probes its judge (`freshrag run --probe-k/--probe-seed/--probe-threshold`)."""
    k: int = PROBES
    seed: int = 0
    threshold: float = THRESHOLD
    context: str = "passage"  # one of CONTEXTS


def scaled(settings: ProbeSettings | None, questions: int, systems: int = 1) -> ProbeSettings | None:
    """The probes of a run of `questions` questions through `systems` systems: a probe question
    for every PAIRS_PER_PROBE pairs at most (one at least), so that the probes' calls are at
    most half the pairs' and a small run is not mostly probes (docs/running.md#judge-probes)."""
    most = max(questions * systems // PAIRS_PER_PROBE, 1)
    if settings is None or most >= settings.k:
        return settings
    return replace(settings, k=most)


def half_width(k: int) -> float:
    """Half the width of the 95% interval of a share over k probe questions at chance (0.5),
    the widest it gets: Wilson's, which stays honest for a handful of outcomes where a
    bootstrap of three perfect ones would give [1, 1]."""
    from statsmodels.stats.proportion import proportion_confint  # heavy: only when said

    low, high = proportion_confint(k / 2, k, alpha=0.05, method="wilson")
    return round((high - low) / 2, 2)


def make_probes(questions: list[Question], articles: dict[str, Article], k: int = PROBES,
                seed: int = 0, context: str = "passage") -> list[Probe]:
    """Three probes (grounded, wrong, abstaining) for each of k seeded questions, and a near
    miss where the grounded answer has a number, month or name to change; graded against the
    passages they test, or the whole gold articles (`context`, one of CONTEXTS)."""
    if context not in CONTEXTS:
        raise ValueError(f"probe context: expected one of {', '.join(CONTEXTS)}, got {context!r}")
    rng = random.Random(seed)
    questions = [q for q in questions if q.gold_title is not None]  # general queries have none
    chosen = rng.sample(questions, min(k, len(questions)))
    vocabulary = vocabularies(articles)
    probes = []
    for question in chosen:
        gold = _gold(question, articles)
        other = most_distant_article(gold, articles, rng, vocabulary, question.golds)
        grounded = closest_sentences(question.text, gold)
        evidence = tuple(passage(article, question.text, grounded)
                         for article in _golds(question, articles)) if context == "passage" else ()
        probes += [Probe(question, "grounded", grounded, evidence=evidence),
                   Probe(question, "wrong", closest_sentences(question.text, other),
                         evidence=evidence),
                   Probe(question, "abstaining", ABSTAIN, evidence=evidence)]
        missed = near_miss(grounded, rng, names_in(other.full_text()))
        if missed:
            probes.append(Probe(question, "near_miss", missed[0], missed[1], evidence))
    return probes


def _gold(question: Question, articles: dict[str, Article]) -> Article:
    """The article a probe's question was asked of: probes are made only of questions that have
    one (a KeyError, as for a title the dataset lacks, if not). A multi-article question's
    articles make one, their texts in hop order, so that its grounded answer may come from any."""
    golds = _golds(question, articles)
    if len(golds) == 1:
        return golds[0]
    return Article(golds[0].title, "\n".join(gold.content for gold in golds))


def _golds(question: Question, articles: dict[str, Article]) -> tuple[Article, ...]:
    if question.gold_title is None:
        raise KeyError(f"question {question.id!r} has no gold article")
    return tuple(articles[title] for title in question.golds)


def grade_probe(llm: LLM, probe: Probe, articles: dict[str, Article]) -> tuple[Grade, list]:
    """One probe graded as a run grades an answer: against its passages, or its question's gold
    articles. The run's probe pass and the walks of its plan (harness/run/plan.py) both grade
    through this."""
    return judge.grade(llm, probe.question, probe.answer,
                       probe.evidence or _golds(probe.question, articles))


def probe_judge(llm: LLM, questions: list[Question], articles: dict[str, Article],
                k: int = PROBES, seed: int = 0, threshold: float = THRESHOLD,
                concurrency: int = 4, context: str = "passage") -> dict[str, Any]:
    """Make the probes of k seeded questions and grade them (`grade_probes`)."""
    try:
        made = make_probes(questions, articles, k, seed, context)
    except ProbeError as err:
        return {"unavailable": str(err), "threshold": threshold, "informative": False}
    return grade_probes(llm, made, articles, seed, threshold, concurrency)


def grade_probes(llm: LLM, made: list[Probe], articles: dict[str, Article], seed: int = 0,
                 threshold: float = THRESHOLD, concurrency: int = 4) -> dict[str, Any]:
    """Grade the probes with the judge role; the verdict, its cost, and every probe's grade."""
    started = time.monotonic()

    def grade(probe: Probe) -> tuple[Probe, Grade, list]:
        try:
            verdict, calls = grade_probe(llm, probe, articles)
        except EndpointUnreachable:
            raise
        except EndpointError as err:  # one refused call leaves its probe unscored, as in a run
            return probe, Grade(None, None, unscored_reason=f"{FAILED}{err}"), []
        return probe, verdict, calls

    graded = map_with_progress(grade, made, concurrency, desc="judge probes", unit="probe")
    grades = {(p.question.id, p.kind): g for p, g, _ in graded}
    calls = [call for _, _, calls_made in graded for call in calls_made]
    usage = sum_usage_by_role(calls).get("judge", Usage())
    fields = {name: discrimination(grades, *ORDERINGS[name], name, seed)
              for name in ORDERINGS}
    misses = [p for p in made if p.kind == "near_miss"]
    return {
        "k": len({p.question.id for p in made}), "seed": seed, "threshold": threshold,
        "context": "passage" if any(p.evidence for p in made) else "article",
        "fields": fields, "informative": informative(fields, threshold),
        "near_miss": {**discrimination(grades, "grounded", "near_miss", "truthfulness", seed),
                      "changed": {kind: sum(p.changed == kind for p in misses)
                                  for kind in ("number", "month", "name")}},
        "unscored": sum(not g.scored for g in grades.values()),
        "calls": len(calls), "cache_hits": sum(c.cache_hit for c in calls),
        "usage": asdict(usage), "seconds": round(time.monotonic() - started, 2),
        "probes": [{"question_id": p.question.id, "kind": p.kind, "answer": p.answer,
                    **({"changed": p.changed} if p.changed else {}), "grade": asdict(g)}
                   for p, g, _ in sorted(graded, key=_probe_order)],
    }


FAILED = "failed: "  # what an unscored probe's reason starts with when its call failed


def discrimination(grades: dict[tuple[str, str], Grade], higher: str, lower: str, field: str,
                   seed: int = 0) -> dict[str, Any]:
    """Share of questions where `higher` got the better `field` grade (ties half), over the
    questions where both were scored; with a 95% bootstrap interval."""
    outcomes = []
    for question_id in sorted({qid for qid, _ in grades}):
        a, b = grades[question_id, higher], grades[question_id, lower]
        if a.scored and b.scored:
            x, y = getattr(a, field), getattr(b, field)
            outcomes.append(1.0 if x > y else 0.5 if x == y else 0.0)
    if not outcomes:
        return {"discrimination": None, "interval": None, "pairs": 0}
    share = round(sum(outcomes) / len(outcomes), 4)
    low, high = bootstrap_interval(outcomes, lambda v: sum(v) / len(v), seed=seed)
    return {"discrimination": share, "interval": [low, high], "pairs": len(outcomes),
            "compared": f"{higher} > {lower}"}


def informative(fields: dict[str, dict[str, Any]], threshold: float) -> bool:
    """Every field discriminates at least at the threshold (a field nobody scored does not)."""
    return all(f["discrimination"] is not None and f["discrimination"] >= threshold
               for f in fields.values())


def _probe_order(item: tuple[Probe, Grade, list]) -> tuple[str, int]:  # as KINDS lists them
    return item[0].question.id, KINDS.index(item[0].kind)


def verdict_lines(probe: dict[str, Any] | None) -> list[str]:
    """What every output says about the judge: its probe discrimination, and a warning when it
    is below the threshold or the probes were off."""
    if probe is None or probe.get("skipped"):
        return ["WARNING: judge probes were off (--no-probe): nothing checked that the judge's "
                "scores tell right from wrong."]
    if probe.get("unavailable"):
        return [f"WARNING: the judge could not be probed: {probe['unavailable']}; nothing "
                "checked that its scores tell right from wrong."]
    shown = ", ".join(f"{name} {_share(field)}" for name, field in probe["fields"].items())
    if probe["informative"]:
        lines = [f"judge probes: discrimination {shown} over {_count(probe['k'], 'question')} "
                 f"(threshold {probe['threshold']}; 0.5 is chance): the judge tells right from "
                 f"wrong."]
    else:
        lines = [f"WARNING: the judge's scores are not informative: probe discrimination {shown} "
                 f"over {_count(probe['k'], 'question')}, below the threshold "
                 f"{probe['threshold']} (0.5 is chance).", JUDGE_HINT]
    return lines + scaled_lines(probe) + near_miss_lines(probe.get("near_miss"))


def scaled_lines(probe: dict[str, Any]) -> list[str]:
    """How wide the verdict of a probe set smaller than --probe-k is (`scaled`)."""
    asked = probe.get("scaled_from")
    if not asked or probe["k"] >= asked:
        return []
    return [f"judge probes: {probe['k']} of --probe-k {asked} questions (a small run): at chance "
            f"the verdict's 95% interval is ±{half_width(probe['k']):.2f} wide, against "
            f"±{half_width(asked):.2f} with {asked}."]


def near_miss_lines(near: dict[str, Any] | None) -> list[str]:
    """What the near misses showed, apart from the verdict (absent from runs before them)."""
    if not near or not near.get("pairs"):
        return []
    changed = ", ".join(f"{n} {kind}{'s' if n != 1 else ''}"
                        for kind, n in near["changed"].items() if n)
    return [f"judge probes, near misses (the grounded answer with one number, month or name "
            f"changed: {changed}): truthfulness discrimination {_share(near)} over "
            f"{_count(near['pairs'], 'pair')}."]


JUDGE_HINT = ("Point the judge role at a stronger model: FRESHRAG_JUDGE_BASE_URL, "
              "FRESHRAG_JUDGE_MODEL and FRESHRAG_JUDGE_API_KEY, or [roles.judge] in freshrag.toml.")


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}{'' if n == 1 else 's'}"


def _share(field: dict[str, Any]) -> str:
    if field["discrimination"] is None:
        return "– (no probe scored)"
    low, high = field["interval"]
    return f"{field['discrimination']:.2f} [{low:.2f}, {high:.2f}]"
