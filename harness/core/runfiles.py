"""The run directory's layout in one place (docs/run-format.md): the name of every file a run
directory holds, and of what sits beside the run directories of one `results/` folder, shared by
them. Every module that names one of these files imports it from here.
"""

from __future__ import annotations

from pathlib import Path

SAMPLES = "samples.jsonl"  # one row per (question, system): the answer, its grade, every call
MANIFEST = "manifest.json"  # the run's settings, versions, hashes and times
SCORES = "scores.jsonl"  # one row per (question, system, scorer, repeat) beyond the judge's
PROBES = "judge-probes.json"  # every probe the judge graded before the run's pairs
BATCHES = "batches.jsonl"  # every upload, batch and collection of --batch
LOCK = ".lock"  # the pid of the process writing
SUMMARY = "summary.json"  # the report's tables, written by `run` and `report`
SUMMARY_MD = "summary.md"  # the whole summary table as markdown; the terminal shows a narrow one
# What a run writes into its directory, so that no input of the run is among them.
RUN_FILES = (SAMPLES, MANIFEST, SUMMARY, SUMMARY_MD, PROBES, BATCHES, SCORES, LOCK)

# Beside the run directories, shared by the runs of one results folder.
RESULTS = Path("results")  # where a run goes by default: results/DATASET_NAME
CACHE_FILE = ".llm-cache.sqlite"  # the response cache (harness/llm/cache.py)
INDEX_DIR = ".index"  # embedded Qdrant's storage of the retrieval indexes
JUDGE_PROBES = ".judge-probes"  # each judge's probe verdicts, for every run with that judge
