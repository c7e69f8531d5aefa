"""Monitoring as a library: a request-log window summarised into the reference profile's bins, the drift
judge, performance bands, bias drift, day summaries, feedback labels and the log's retention.

The drift-monitor step (``components/drift_monitor``), the command line, the monitoring pipeline and the
benchmarks share these; the step only orchestrates them.
"""
