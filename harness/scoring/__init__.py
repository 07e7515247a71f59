"""Scoring: everything that grades an answer the systems gave.

One file per scorer, registered in `SCORERS` below as systems/ registers strategies: the judge of
the paper's section III.B (judge.py) and the scorers of docs/scoring.md#scorers
(faithfulness.py, answer_relevance.py, context_relevance.py, claims.py,
abstention.py; what they share in base.py and answer_statements.py). scorepass.py runs chosen scorers
over a run's rows into scores.jsonl (store.py), resumably. Beside them: the judge's probes
(probes.py, checked before a run trusts the judge); the agreement between two gradings is
reported by freshrag.reporting.agreement. A scorer depends only on core types and the LLM client,
as a strategy in systems/ does; the runner asks this package for scorers and never imports
freshrag.reporting.
"""

from freshrag.scoring.abstention import Abstention
from freshrag.scoring.answer_relevance import AnswerRelevance
from freshrag.scoring.claims import Claims
from freshrag.scoring.context_relevance import ContextRelevance
from freshrag.scoring.faithfulness import Faithfulness
from freshrag.scoring.judge import Judge

# name -> factory; answer-relevance is given the embeddings role's function by its caller
SCORERS = {
    "judge": Judge,
    "faithfulness": Faithfulness,
    "answer-relevance": AnswerRelevance,
    "context-relevance": ContextRelevance,
    "claims": Claims,
    "abstention": Abstention,
}
