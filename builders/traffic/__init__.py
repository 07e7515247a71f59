"""Traffic beside the fresh questions: control and general queries, mixes of a chosen composition, and information needs derived from a query log."""
