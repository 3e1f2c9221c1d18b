"""The standard benchmark: ``workload`` generates the deterministic catalog and
patterns; ``runner`` times the fast path against its baselines on them and
renders the ratio table (``toolfilter bench``, ``benches/report.py``).

Nothing is imported here: the runner's modules load only for a benchmark.
"""
