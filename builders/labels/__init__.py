"""Question labels (fact_single, summary, reasoning, unanswerable): the labeller, its prompts, and the label composition of a dataset."""
