"""A run's options declared once (docs/api.md, docs/cli.md#freshrag-run): each option's name,
default, help and range in one table, from which `RunOptions` (run/inputs.py) takes its fields'
defaults and checks and `freshrag run` its flags. This module imports nothing but core/types.py,
so that a command's `--help` reads the table without loading what a run needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from freshrag.core.types import DEFAULT_MAX_STEPS, DEFAULT_TOKEN_BUDGET

PAPER_CUTOFF = "2021-09-30"  # GPT-4-0613's knowledge cutoff, the model of the paper's datasets
DEFAULT_SYSTEMS = "baseline,oracle,naive,advanced"
MAX_CONCURRENCY = 256  # threads; endpoints rate-limit far below this
MAX_STEPS = 100  # an agent's bound: more calls than any answer needs, fewer than a runaway bill
MAX_EPOCHS = 100  # times each pair is asked: enough to see a judge's noise, not a runaway bill
MAX_SEED = 2**31 - 1  # fits every server's seed (llama.cpp's is 32 bits, and -1 means "random")
MAX_QUESTIONS = 1_000_000_000
# 8 requests in flight suit a remote endpoint (the embedded server queues what its slots cannot
# take); seed 0 makes a rerun send the same requests, so that the cache answers them.
DEFAULT_CONCURRENCY = 8
DEFAULT_SEED = 0


@dataclass(frozen=True)
class RunOption:
    """One option: `RunOptions.NAME` in a notebook, `--NAME` (with dashes) on the command line."""

    name: str
    default: Any  # RunOptions' default; the flag's too, unless `unset` stands for it
    help: str  # what it does, as the command's help says it (its default is added there)
    range: tuple[int, int] | None = None  # a whole number's, both ends included; None: a date
    unset: Any = None  # what the flag takes for RunOptions' None ("today", 0)
    metavar: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def optional(self) -> bool:
        """Whether RunOptions takes None for it."""
        return self.default is None or self.unset is not None


RUN_OPTIONS = {option.name: option for option in (
    RunOption("limit", None, "only the first N questions", (1, MAX_QUESTIONS)),
    RunOption("epochs", 1, "answer and grade each pair this many times, each epoch asked anew "
              "(not from the cache); the tables read the first, the report's epochs section "
              "the spread; raising it on resume adds epochs", (1, MAX_EPOCHS)),
    RunOption("knowledge_cutoff", PAPER_CUTOFF, "the answering model's knowledge cutoff, "
              "YYYY-MM-DD, stated by dated-boolean; by default GPT-4-0613's"),
    RunOption("today", None, "today's date as dated-boolean states it, YYYY-MM-DD or today",
              unset="today", metavar="DATE"),
    RunOption("context_tokens", 8192, "the answering model's context window; retrieved text is "
              "cut to fit", (1, 10_000_000)),
    RunOption("max_steps", DEFAULT_MAX_STEPS, "an agent's most model calls for one answer "
              "(react, iterative, decompose, router); its last call answers", (1, MAX_STEPS)),
    RunOption("token_budget", DEFAULT_TOKEN_BUDGET, "an agent's most tokens, in and out, for one "
              "answer; once spent it makes its closing answer call; 0: no bound but "
              "--max-steps (RunOptions: None)", (1, 1_000_000_000), unset=0),
)}

# --shard's, for the flag (cli/commands/run.py) and RunOptions.shard alike (run/shard.py).
SHARD_HELP = ("answer only shard i of N of the pairs, chosen by a hash of question and system "
              "(one task of a Slurm array or Kubernetes Jobs); `freshrag merge` joins the shards")
# Which executor walks a run's pairs, and on which Ray cluster
# (docs/running.md#running-on-a-ray-cluster); harness/executors/choice.py checks the choice,
# loading no Ray either.
EXECUTOR_HELP = ("how the pairs are answered: local (this process's threads) or ray (actors on a "
                 "Ray cluster, each holding the systems once; --concurrency pairs in flight in "
                 "all)")
ADDRESS_HELP = ("with --executor ray, the cluster: ray://HOST:PORT (Ray Client), HOST:PORT (the "
                "head's GCS address, from a node of the cluster) or auto (the cluster running on "
                "this machine); none: a local cluster started for the run")
# --otlp-endpoint's, for the flag (cli/commands/run.py) and RunOptions.otlp_endpoint alike
# (docs/export.md#live-to-an-otlp-endpoint).
OTLP_HELP = ("send each answered pair's trace, as it finishes, to this OTLP/HTTP endpoint "
             "(http://HOST:4318, or its /v1/traces URL; headers such as an API key from "
             "OTEL_EXPORTER_OTLP_HEADERS, never written); needs the traces extra")
# --corpus's, for the flag (cli/options.py) and RunOptions.corpus alike
# (docs/retrieval.md#runs-in-a-large-world).
CORPUS_HELP = ("a background corpus (a directory `freshrag corpus` wrote): the retrieval index "
               "holds its passages beside the dataset's articles, whose twins it leaves out, and "
               "every system that retrieves searches both")
