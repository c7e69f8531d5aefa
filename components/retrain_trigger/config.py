"""Settings of the retraining a drift check triggers."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from mlops.settings import SETTINGS_CONFIG


class RetrainSettings(BaseModel):
    """Where a triggered retraining runs, and how often it may run."""

    model_config = SETTINGS_CONFIG
    section: ClassVar[str] = "retrain"

    target: Literal["local", "kfp"] = "local"
    """local: run the training pipeline with KFP's local runner in `workspace`; kfp: submit a run of the
    uploaded training pipeline to KFP (host from retrain.kfp_host or KFP_HOST, token from KFP_TOKEN / KFP_TOKEN_FILE)."""
    workspace: str = Field(default="")
    """Workspace of a local retraining run (and of the audit trail unless MLOPS_AUDIT_URI is set); filled in by
    mlops monitor / mlops run."""
    cooldown_hours: float = Field(default=24.0, ge=0)
    """No second retraining within this many hours of the last one this model's monitor triggered."""
    force: bool = False
    """Trigger even within the cooldown."""
    overrides: dict[str, str] = Field(default_factory=dict)
    """Training pipeline settings of the triggered run by address, e.g. {"train.epochs": "5"}; the rest keep their defaults."""
    kfp_host: str = Field(default="")
    """KFP API URL for target kfp. Empty: KFP_HOST, else the kube config."""
    kfp_pipeline: str = Field(default="training")
    """Name of the uploaded training pipeline on KFP (mlops upload --pipeline)."""
    kfp_experiment: str = Field(default="retraining")
    """KFP experiment of the triggered runs."""
