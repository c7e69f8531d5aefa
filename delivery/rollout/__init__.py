"""Progressive delivery: shadow, canary steps and automatic promotion or rollback.

- :mod:`~delivery.rollout.config`: the typed :class:`~delivery.rollout.config.RolloutConfig`.
- :mod:`~delivery.rollout.metrics_window`: per-version figures of one interval, diffed from two scrapes
  of the server's Prometheus metrics.
- :mod:`~delivery.rollout.analysis`: challenger against champion over one interval → pass, fail
  or wait, with one :class:`mlops.gates.Decision` per check.
- :mod:`~delivery.rollout.controller`: the state machine that moves traffic through a
  :class:`~delivery.targets.base.TrafficTarget` and promotes or rolls back.
- :mod:`~delivery.rollout.history`: which version served, with what traffic, when (the audit trail).
- :mod:`~serving.routing.rollout_router` and :mod:`~serving.routing.rollout_admin`: the server side (two models
  in one ``mlops serve``, weights changed through an admin route).
"""
