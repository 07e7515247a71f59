"""Scoring: everything that grades an answer the systems gave.

One file per scorer (the judge of the paper's section 3.3 first), the judge's probes
(probes.py, checked before a run trusts the judge) and the agreement between two gradings
(agreement.py). A scorer depends only on core types and the LLM client, as a strategy in
systems/ does; the runner asks this package for scorers and never imports harness.reporting.
"""
