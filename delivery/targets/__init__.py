"""Deployment targets: where a model version serves, behind one interface a rollout drives.

:class:`~delivery.targets.base.DeploymentTarget` is what a rollout (shadow → canary
steps → promote | rollback) needs from the place a model serves.
:class:`~delivery.targets.local.LocalServerTarget` drives one local ``mlops serve``;
:class:`~delivery.targets.kserve.KServeTarget` drives a KServe InferenceService (RawDeployment)
whose predictor pods each run ``mlops serve``, through the same admin route on every pod.
"""
