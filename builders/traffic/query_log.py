"""Information needs derived from a log of real user queries (docs/methods.md#information-needs).

`freshrag needs --queries log.jsonl` reads the log (JSON Lines, a `query` field a line), embeds
the distinct queries with the `embeddings` role (harness/retrieval/embeddings.py), and clusters them without
fixing the number of clusters in advance: scikit-learn's agglomerative clustering, average linkage
on cosine distance, cut where clusters lie further apart than `--distance-threshold`. Clusters of
fewer than `--min-size` queries (singletons, stray queries) are not needs: they are counted and
shown apart. Each remaining cluster gets one forced `describe_need` call of the `builder` role,
given its representative queries (those nearest its centroid), which returns one sentence; a reply
that does not parse is asked once more, then the cluster is recorded as not described, with the
reason and the raw replies, and left out of the needs file.

Written: the needs file (one description a line, ready for `freshrag build --needs`), and beside it
a JSON document and a markdown table with each need's description, size and example queries.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from freshrag.builders.styles.needs import MAX_NEED_CHARS, NeedsError
from freshrag.core import tables
from freshrag.core.concurrency import map_with_progress
from freshrag.core.files import write_json, write_text
from freshrag.core.jsonl import loads
from freshrag.core.textfile import lines
from freshrag.core.types import LLMResponse, Usage
from freshrag.llm.client import LLMClient
from freshrag.llm.toolcall import ReplyError, line_of_text, room_for, tool_arguments

if TYPE_CHECKING:  # numpy is imported where it is used: `freshrag --help` imports this module
    import numpy as np

DESCRIBED, FAILED, DUPLICATE = "described", "failed", "duplicate"
DESCRIBE_TRIES = 2
DESCRIPTION_CHARS = 200  # one sentence
DESCRIBE_MAX_TOKENS = room_for(DESCRIPTION_CHARS)  # a reply cut short is unparseable
EMBED_BATCH = 256  # texts per embedding request: endpoints cap the inputs of one request

DESCRIBE_PROMPT = (
    "Below are questions that users asked a search system. They were grouped together because "
    "they are alike. Call describe_need with one sentence that names the information need they "
    "share: what these users want to know, general enough to cover every question of the group "
    "and specific enough to tell it apart from other needs. Do not list the questions."
)
DESCRIBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "describe_need",
        "description": "Describe in one sentence the information need a group of queries shares.",
        "parameters": {
            "type": "object",
            "properties": {"description": line_of_text(DESCRIPTION_CHARS) | {
                "description": "one sentence naming the need"}},
            "required": ["description"],
        },
    },
}
DESCRIBE_FUNCTION = DESCRIBE_TOOL["function"]["name"]


@dataclass(frozen=True)
class NeedLogConfig:
    distance_threshold: float = 0.85  # cosine; docs/measurements.md#information-needs
    min_size: int = 3       # queries a cluster needs to be a need
    examples: int = 5       # representative queries per cluster, in the prompt and the table
    max_queries: int = 5000  # distinct queries clustered; above, a seeded sample (memory is n²)
    seed: int = 0
    concurrency: int = 4


def read_queries(path: Path) -> list[str]:
    """The `query` of every line of a JSON Lines log; blank lines are skipped, anything else that
    is not an object with a non-empty string `query` is refused naming the file and line."""
    queries = []
    for line_no, line in lines(path, NeedsError):
        if not line.strip():
            continue
        try:
            row = loads(line)
        except json.JSONDecodeError as err:
            raise NeedsError(f"{path}:{line_no}: not valid JSON: {err.msg} "
                             f"(column {err.colno})") from None
        query = row.get("query") if isinstance(row, dict) else None
        if not isinstance(query, str) or not query.strip():
            what = "not a JSON object" if not isinstance(row, dict) else \
                "field 'query' is missing" if query is None else "field 'query' is empty or not a string"
            raise NeedsError(f"{path}:{line_no}: {what}; each line must be an object with a "
                             f"'query' string")
        queries.append(" ".join(query.split()))
    if not queries:
        raise NeedsError(f"{path}: no queries")
    return queries


def distinct_queries(queries: list[str]) -> tuple[list[str], list[int]]:
    """Each query once (compared without case), in first-seen order, with how often it came."""
    first: dict[str, int] = {}
    texts: list[str] = []
    counts: list[int] = []
    for query in queries:
        key = query.casefold()
        if key not in first:
            first[key] = len(texts)
            texts.append(query)
            counts.append(0)
        counts[first[key]] += 1
    return texts, counts


def cluster(vectors: np.ndarray, distance_threshold: float) -> np.ndarray:
    """A cluster label per vector; how many clusters there are follows from the threshold."""
    import numpy as np

    if len(vectors) == 1:
        return np.zeros(1, dtype=int)  # scikit-learn needs two samples to cluster
    from sklearn.cluster import AgglomerativeClustering  # 1.3 s to import: only when used
    model = AgglomerativeClustering(n_clusters=None, distance_threshold=distance_threshold,
                                    metric="cosine", linkage="average")
    return model.fit_predict(vectors)


def representatives(vectors: np.ndarray, members: np.ndarray, k: int) -> list[int]:
    """The `k` members nearest the cluster's centroid by cosine, nearest first."""
    import numpy as np

    unit = vectors[members] / np.linalg.norm(vectors[members], axis=1, keepdims=True)
    centroid = unit.mean(axis=0)
    order = np.argsort(-(unit @ centroid), kind="stable")
    return [int(members[i]) for i in order[:k]]


def describe_messages(examples: list[str]) -> list[dict[str, str]]:
    return [{"role": "system", "content": DESCRIBE_PROMPT},
            {"role": "user", "content": "\n".join(f"- {query}" for query in examples)}]


def parse_description(response: LLMResponse) -> tuple[str | None, str | None]:
    """(the one-sentence description, None) from a `describe_need` call, or (None, why not).
    Whitespace, line breaks included, becomes single spaces: a need is one line of a file."""
    try:
        value = tool_arguments(response, DESCRIBE_FUNCTION).get("description")
    except ReplyError as err:
        return None, str(err)
    if not isinstance(value, str) or not value.strip():
        return None, f"description is {value!r}, not a non-empty string"
    text = " ".join(value.split())
    if len(text) > MAX_NEED_CHARS:
        return None, f"description of {len(text):,} characters, more than {MAX_NEED_CHARS}"
    return text, None


def derive_needs(queries: list[str], llm: LLMClient, embed: Callable[[list[str]], list[list[float]]],
                 config: NeedLogConfig) -> dict[str, Any]:
    """The needs document: every cluster of at least `min_size` queries with its description (or
    why it has none), size and examples, largest first; the small clusters apart."""
    import numpy as np

    texts, counts = distinct_queries(queries)
    distinct, sampled = len(texts), None
    if len(texts) > config.max_queries:
        keep = sorted(random.Random(config.seed).sample(range(len(texts)), config.max_queries))
        sampled = {"distinct": len(texts), "kept": len(keep), "seed": config.seed}
        texts, counts = [texts[i] for i in keep], [counts[i] for i in keep]
    vectors = np.array([vector for start in range(0, len(texts), EMBED_BATCH)
                        for vector in embed(texts[start:start + EMBED_BATCH])], dtype=float)
    labels = cluster(vectors, config.distance_threshold)
    groups = [np.flatnonzero(labels == label) for label in np.unique(labels)]
    sizes = [sum(counts[i] for i in members) for members in groups]
    order = sorted(range(len(groups)), key=lambda g: (-sizes[g], int(groups[g][0])))
    kept = [g for g in order if sizes[g] >= config.min_size]
    small = [g for g in order if sizes[g] < config.min_size]

    def entry(g: int) -> tuple[int, dict[str, Any]]:
        examples = [texts[i] for i in representatives(vectors, groups[g], config.examples)]
        return g, {"size": sizes[g], "distinct": len(groups[g]), "examples": examples,
                   **_describe(llm, examples)}

    described = dict(map_with_progress(entry, kept, config.concurrency, desc="needs",
                                       unit="cluster"))
    entries = [described[g] for g in kept]  # largest first, as `order` put them
    _mark_duplicates(entries)
    return {"queries": len(queries), "distinct": distinct,
            "sampled": sampled, "clustering": {
                "method": "agglomerative, average linkage, cosine distance (scikit-learn)",
                "distance_threshold": config.distance_threshold, "min_size": config.min_size,
                "clusters": len(groups)},
            "needs": entries,
            "small_clusters": {"clusters": len(small), "queries": sum(sizes[g] for g in small),
                               "examples": [texts[int(groups[g][0])] for g in small][:20]},
            "calls": sum(len(e["raw"]) for e in entries),
            "usage": asdict(sum((Usage(**e["usage"]) for e in entries), Usage()))}


def _describe(llm: LLMClient, examples: list[str]) -> dict[str, Any]:
    raws: list[str | None] = []
    usage, reason = Usage(), None
    for attempt in range(DESCRIBE_TRIES):
        response = llm.chat("builder", describe_messages(examples), tools=[DESCRIBE_TOOL],
                            tool_choice=DESCRIBE_FUNCTION, temperature=0.0 if not attempt else 1.0,
                            max_tokens=DESCRIBE_MAX_TOKENS, attempt=attempt)
        raws.append(response.tool_arguments if response.tool_name else response.text)
        usage += response.usage
        description, reason = parse_description(response)
        if description:
            return {"need": description, "status": DESCRIBED, "reason": None, "raw": raws,
                    "model": response.model, "usage": asdict(usage)}
    return {"need": None, "status": FAILED, "reason": reason, "raw": raws,
            "model": response.model, "usage": asdict(usage)}


def _mark_duplicates(entries: list[dict[str, Any]]) -> None:
    """A description given to two clusters is one need: the larger cluster keeps it."""
    seen: dict[str, int] = {}
    for number, entry in enumerate(entries, start=1):
        if entry["status"] != DESCRIBED:
            continue
        key = entry["need"].casefold()
        if key in seen:
            entry["status"], entry["reason"] = DUPLICATE, f"the same description as need {seen[key]}"
        else:
            seen[key] = number


def needs_lines(document: dict[str, Any]) -> list[str]:
    return [entry["need"] for entry in document["needs"] if entry["status"] == DESCRIBED]


def needs_paths(out: Path) -> list[Path]:
    """The needs file `out`, and its `.json` and `.md` beside it."""
    return [out, out.with_suffix(".json"), out.with_suffix(".md")]


def write_needs(document: dict[str, Any], out: Path) -> list[Path]:
    """The needs file, and its `.json` and `.md` beside it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    paths = needs_paths(out)
    write_text(paths[0], "".join(f"{need}\n" for need in needs_lines(document)))
    write_json(paths[1], document)
    write_text(paths[2], render(document) + "\n")
    return paths


def render(document: dict[str, Any]) -> str:
    """The markdown table: one row per cluster kept, then what was left out and why."""
    clustering = document["clustering"]
    lines_out = [f"{len(needs_lines(document))} needs from {document['queries']:,} queries "
                 f"({document['distinct']:,} distinct; {clustering['clusters']} clusters at cosine "
                 f"distance {clustering['distance_threshold']}, needs of at least "
                 f"{clustering['min_size']} queries)", "",
                 *tables.header(["#", "need", "queries", "example queries"])]
    for number, entry in enumerate(document["needs"], start=1):
        need = entry["need"] if entry["status"] == DESCRIBED else tables.Markdown(
            f"*not used: {tables.cell(entry['reason'])}*"
            + (f" ({tables.cell(entry['need'])})" if entry["need"] else ""))
        lines_out.append(tables.row([number, need, entry["size"], "; ".join(entry["examples"])]))
    small = document["small_clusters"]
    if small["clusters"]:  # the users' own queries, escaped as in the table
        lines_out += ["", f"{small['queries']} queries in {small['clusters']} clusters smaller than "
                      f"{clustering['min_size']}, not needs: "
                      + tables.cell("; ".join(small["examples"][:5]))]
    if document["sampled"]:
        lines_out += ["", f"clustered a seeded sample of {document['sampled']['kept']:,} of "
                      f"{document['sampled']['distinct']:,} distinct queries (--max-queries)"]
    return "\n".join(lines_out)

