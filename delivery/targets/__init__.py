"""Deployment targets: where a model version serves, behind one interface a rollout drives.

:class:`~delivery.targets.base.DeploymentTarget` is what a rollout (shadow → canary
steps → promote | rollback) needs from the place a model serves.
:class:`~delivery.targets.local.LocalServerTarget` drives today's ``mlops serve``; a
KServe InferenceService target goes beside it as ``delivery/targets/kserve.py``.
"""
