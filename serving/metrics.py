"""Prometheus metrics, labelled by model and version so a canary's numbers never blend with the champion's.

Each server owns its own :class:`CollectorRegistry` (not the process-global one),
so several servers in one process, e.g. in tests, do not share counters. What every inference request
records goes through a :class:`~serving.metric_tally.MetricTally` (folded in bulk, exact whenever the
registry is read); the rest goes to prometheus_client directly.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from serving.metric_tally import MetricTally

# Sub-millisecond buckets: a small model answers in ~0.1 ms; the top buckets catch queueing under load.
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)
LOOKUP_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""An online feature lookup is an HTTP round trip to Feast's server: milliseconds, up to its timeout."""
SCORE_BUCKETS = tuple(round(0.05 * i, 2) for i in range(1, 20))
"""Twenty equal-width bins of the predicted probability: enough for a score-distribution shift test."""
ROLES = ("champion", "challenger", "shadow")
"""Which part a version plays in a rollout: answers by default, answers a canary share, scores a copy."""
CONTENT_TYPE = CONTENT_TYPE_LATEST
MULTIPROCESS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""prometheus_client's multiprocess mode: set before the library is imported, each process writes its
values to files there (read when its module chooses how values are kept, so only a new process can join)."""


class ServingMetrics:
    """The server's counters and histograms."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.tally = MetricTally(hold=not os.environ.get(MULTIPROCESS_DIR_ENV))
        """The inference path's counts and observations until they are folded into the metrics below (held
        only in a single server process: see :mod:`serving.metric_tally`)."""
        self.registry.register(
            self.tally.collector()
        )  # first: a read of the registry folds before it collects
        self.requests = Counter(
            "mlops_serving_requests",
            "Inference requests answered, by protocol and HTTP status code.",
            ["model", "version", "protocol", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "mlops_serving_request_latency_seconds",
            "Time from request received to response built, for successful inference requests.",
            ["model", "version", "protocol"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.batch_size = Histogram(
            "mlops_serving_batch_size_rows",
            "Rows per ONNX Runtime call after dynamic batching.",
            ["model", "version"],
            buckets=BATCH_BUCKETS,
            registry=self.registry,
        )
        self.errors = Counter(
            "mlops_serving_errors",
            "Failed requests, by reason (bad_request, not_found, payload_too_large, unauthorized, internal...).",
            ["model", "version", "reason"],
            registry=self.registry,
        )
        self.model_info = Gauge(
            "mlops_serving_model_info",
            "1 for the model version being served, 0 for versions served earlier.",
            ["model", "version", "sha256", "precision"],
            registry=self.registry,
            multiprocess_mode="max",  # with several workers: 1 while any of them serves the version
        )
        self.process_up = Gauge(
            "mlops_serving_process_up",
            "1 while this server process answers; with --workers N one series per worker (its pid label), so "
            "a scrape shows how many are up.",
            registry=self.registry,
            multiprocess_mode="liveall",
        )
        self.reloads = Counter(
            "mlops_serving_reloads",
            "Hot reload attempts, by outcome (swapped, refused, registry_error).",
            ["model", "outcome"],
            registry=self.registry,
        )
        self.scored_requests = Counter(
            "mlops_serving_scored_requests",
            "Requests each model version scored, by role (champion, challenger, shadow) and outcome (ok, error).",
            ["model", "version", "role", "outcome"],
            registry=self.registry,
        )
        self.scoring_latency = Histogram(
            "mlops_serving_scoring_latency_seconds",
            "Time one version took to score a request (queueing for its batch included), by role.",
            ["model", "version", "role"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.scores = Histogram(
            "mlops_serving_scores",
            "Predicted probabilities per version and role: the score distribution a rollout compares.",
            ["model", "version", "role"],
            buckets=SCORE_BUCKETS,
            registry=self.registry,
        )
        self.shadow_rows = Counter(
            "mlops_serving_shadow_rows",
            "Rows scored by a shadow version, by whether its predicted class agreed with the champion's.",
            ["model", "version", "agreement"],
            registry=self.registry,
        )
        self.log_dropped_rows = Counter(
            "mlops_serving_request_log_dropped_rows",
            "Sampled rows the request log did not keep: its buffer was full while the writer process was "
            "behind (the requests were answered as usual).",
            ["model"],
            registry=self.registry,
        )

        self.explained_rows = Counter(
            "mlops_serving_explained_rows",
            "Rows answered with their reasons (V1 :explain, V2 parameters.explain).",
            ["model", "version"],
            registry=self.registry,
        )
        self.explain_latency = Histogram(
            "mlops_serving_explain_latency_seconds",
            "Time the reasons of one request took to compute (after its scores), per request.",
            ["model", "version"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.lookup_latency = Histogram(
            "mlops_serving_feature_lookup_seconds",
            "Time one request's online feature lookup took (requests by entity id; one batched call each).",
            ["model"],
            buckets=LOOKUP_BUCKETS,
            registry=self.registry,
        )
        self.lookup_rows = Counter(
            "mlops_serving_feature_lookup_rows",
            "Entity ids whose features were looked up.",
            ["model"],
            registry=self.registry,
        )
        self.lookups_failed = Counter(
            "mlops_serving_feature_lookups_failed",
            "Online feature lookups refused, by reason (missing: an id without values, stale: values older than "
            "the view's TTL, unavailable: the feature server did not answer).",
            ["model", "reason"],
            registry=self.registry,
        )

        self._children: dict[tuple[Any, ...], Any] = {}

    def _child(self, metric: Any, *labels: str) -> Any:
        # prometheus_client's labels() takes a lock and builds a key on every call; the label
        # sets here are few and fixed, so each is resolved once.
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def answered(
        self, model: str, version: str, protocol: str, code: int, seconds: float | None = None
    ) -> None:
        """Count one inference request; ``seconds`` (successful requests only) feeds the latency histogram."""
        tally = self.tally
        tally.count(self.requests, (model, version, protocol, str(code)))
        if seconds is not None:
            tally.observe(self.latency, (model, version, protocol), seconds)

    def scored(self, model: str, version: str, role: str, seconds: float, scores: Any | None) -> None:
        """One request scored by ``version`` in ``role``; ``scores`` None means it failed."""
        tally = self.tally
        if scores is None:
            tally.count(self.scored_requests, (model, version, role, "error"))
            return
        tally.count(self.scored_requests, (model, version, role, "ok"))
        tally.observe(self.scoring_latency, (model, version, role), seconds)
        tally.observe(self.scores, (model, version, role), scores)

    def compared(self, model: str, version: str, agree: int, disagree: int) -> None:
        """Rows a shadow version scored, split by agreement with the champion's predicted class."""
        if agree:
            self._child(self.shadow_rows, model, version, "agree").inc(agree)
        if disagree:
            self._child(self.shadow_rows, model, version, "disagree").inc(disagree)

    def batch(self, model: str, version: str, rows: int) -> None:
        self.tally.observe(self.batch_size, (model, version), rows)

    def explained(self, model: str, version: str, rows: int, seconds: float) -> None:
        """One request's ``rows`` answered with reasons, which took ``seconds`` to compute."""
        self._child(self.explained_rows, model, version).inc(rows)
        self._child(self.explain_latency, model, version).observe(seconds)

    def looked_up(self, model: str, rows: int, seconds: float) -> None:
        self._child(self.lookup_latency, model).observe(seconds)
        self._child(self.lookup_rows, model).inc(rows)

    def lookup_failed(self, model: str, reason: str) -> None:
        self._child(self.lookups_failed, model, reason).inc()

    def log_dropped(self, model: str, rows: int) -> None:
        self._child(self.log_dropped_rows, model).inc(rows)

    def error(self, model: str, version: str, reason: str) -> None:
        self._child(self.errors, model, version, reason).inc()

    def served(
        self, model: str, version: str, sha256: str, precision: str, previous: tuple[str, ...] = ()
    ) -> None:
        """Mark ``version`` live and any ``previous`` (version, sha256, precision) as retired."""
        if previous:
            self.model_info.labels(model, *previous).set(0)
        self.model_info.labels(model, version, sha256, precision).set(1)

    def process_started(self) -> None:
        self.process_up.set(1)

    def process_stopping(self) -> None:
        """This process no longer answers: its series leaves the scrape (a worker's files too)."""
        self.process_up.set(0)
        if os.environ.get(MULTIPROCESS_DIR_ENV):
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(os.getpid())

    def render(self) -> bytes:
        """The text exposition; with several server processes (``PROMETHEUS_MULTIPROC_DIR`` set before they
        started, :mod:`serving.workers`) the sum over all of them, read from the directory they share."""
        directory = os.environ.get(MULTIPROCESS_DIR_ENV)
        if not directory:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=directory)
        return generate_latest(registry)
