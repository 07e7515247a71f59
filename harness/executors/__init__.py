"""Executors: the ways of walking a list of work items, in this process or on a Ray cluster
(docs/design.md#executors). What is generic lives here — which executor and which cluster
(`choice.py`), connecting to the cluster (`cluster.py`), and the bounded walk over Ray actors
with its faults, and its local twin on threads (`walk.py`); what an item is and what an actor
holds is the caller's (a run's pairs: harness/run/on_ray.py; an index's batches:
harness/retrieval/batches.py). Ray is imported only when the Ray executor is chosen."""
