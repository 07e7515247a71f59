"""Reporting: tables, analysis, figures and the HTML page, read from run directories only.

identity.py says which rows may be compared (dataset, system, the model of every role);
outcomes.py what one answer came to (scored, score, tokens, decisions), which every table reads;
report.py prints the summary; analysis.py the intervals, attribution and router, with
decisions.py and savings.py for traffic of known need; render/ the figures and the page;
prices.py the cost table; judge_check.py the judge's verdict. Nothing in the core (runner,
results, cli's run path) depends on this package to produce rows.
"""
