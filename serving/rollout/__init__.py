"""Progressive delivery: shadow, canary steps and automatic promotion or rollback.

- :mod:`~serving.rollout.config`: the typed :class:`~serving.rollout.config.RolloutConfig`.
- :mod:`~serving.rollout.window`: per-version figures of one interval, diffed from two scrapes
  of the server's Prometheus metrics.
- :mod:`~serving.rollout.analysis`: challenger against champion over one interval → pass, fail
  or wait, with one :class:`mlops.gates.Decision` per check.
- :mod:`~serving.rollout.controller`: the state machine that moves traffic through a
  :class:`~serving.targets.base.TrafficTarget` and promotes or rolls back.
- :mod:`~serving.rollout.history`: which version served, with what traffic, when (the audit trail).
- :mod:`~serving.rollout.router` and :mod:`~serving.rollout.admin`: the server side (two models
  in one ``mlops serve``, weights changed through an admin route).
"""
