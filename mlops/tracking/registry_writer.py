"""What the registry's light writes need from a client: the protocol both of the store's clients satisfy.

A served store (:attr:`mlops.tracking.store.TrackingStore.rest`) sends version tags, model tags and alias moves
over MLflow's REST API without importing MLflow (:class:`mlops.tracking.rest_client.MlflowRestClient`); an
unserved one sends them through :class:`mlflow.MlflowClient`. The registry half of the store
(:mod:`mlops.tracking.model_registry_store`) writes through whichever it has, so both must answer these
methods with MLflow's names and arguments; declaring them here lets mypy check that neither drifts.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class RegistryWriter(Protocol):
    """The MLflow client methods the registry writes through (MLflow's own names and argument names)."""

    def set_model_version_tag(self, name: str, version: str, key: str, value: str) -> None:
        """Set tag ``key`` to ``value`` on version ``version`` of registered model ``name``."""

    def set_registered_model_tag(self, name: str, key: str, value: str) -> None:
        """Set tag ``key`` to ``value`` on registered model ``name`` itself."""

    def set_registered_model_alias(self, name: str, alias: str, version: str) -> None:
        """Point ``alias`` of registered model ``name`` at ``version``."""

    def delete_registered_model_alias(self, name: str, alias: str) -> None:
        """Remove ``alias`` from registered model ``name``."""
