"""Reporting: tables, analysis, figures and the HTML page, read from run directories only.

identity.py says which rows may be compared (dataset, system, the model of every role);
report.py prints the summary; analysis.py the intervals, attribution and router; plots.py and
html_report.py the figures and page; prices.py the cost table; judge_check.py the judge's verdict.
Nothing in the core (runner, results, cli's run path) depends on this package to produce rows.
"""
