"""The registry half of the MLflow seam: versions, their tags and gate verdicts, aliases and their audit record,
and the files a version names (downloads, signatures, reference profiles).

:class:`ModelRegistryStore` is what :class:`mlops.tracking.store.TrackingStore` delegates its registry work
to. Its light writes (version and model tags, alias moves) go through a :class:`RegistryWriter`: the store's
REST client when the local run serves the store, else its MLflow client, so a gate never imports MLflow on a
served store. Everything heavier (creating versions, searching, downloading) stays on the MLflow client.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mlops.tracking.registry_writer import RegistryWriter
from mlops.tracking.uris import local_path
from mlops.vocabulary import PROFILE_TAG, PROMOTED_AT_TAG, REPLACED_BY_TAG, clip, gate_tag

if TYPE_CHECKING:
    from mlflow.entities.model_registry import ModelVersion, RegisteredModel
    from mlflow.models.model import ModelInfo

    from mlops.governance.signing import Signed
    from mlops.model.reference_profile import ReferenceProfile
    from mlops.tracking.sqlite_registry import StoredVersion
    from mlops.tracking.store_connection import StoreConnection


@dataclass
class RegistrationProgress:
    """How far a registration got: the version it created, and whether that version is recorded (what
    :mod:`mlops.tracking.registration_faults` reads to say what is left)."""

    model_name: str
    created: str = ""
    recorded: bool = False


class ModelRegistryStore:
    """The registered models of one :class:`~mlops.tracking.store.TrackingStore` (its settings, its clients)."""

    def __init__(self, store: StoreConnection) -> None:
        self.store = store

    @property
    def writer(self) -> RegistryWriter:
        """Where the light registry writes go: over REST on a served store (:attr:`TrackingStore.rest`), else
        through the store's MLflow client."""
        return self.store.rest or self.store._client

    # --- registered models and versions (reads) ------------------------------------------------

    def registered_model_names(self) -> list[str]:
        """Every registered model's name in this store's registry, sorted (one per dataset in a workspace)."""
        from mlflow.store.model_registry import SEARCH_REGISTERED_MODEL_MAX_RESULTS_DEFAULT

        names: list[str] = []
        token = None
        while True:
            page = self.store._client.search_registered_models(
                max_results=SEARCH_REGISTERED_MODEL_MAX_RESULTS_DEFAULT, page_token=token
            )
            names += [model.name for model in page]
            token = page.token
            if not token:
                return sorted(names)

    def registered_model(self, model_name: str) -> RegisteredModel:
        """The registered model (its aliases and model tags); MLflow's error when there is none."""
        return self.store._client.get_registered_model(model_name)

    def model_version(self, model_name: str, version: str) -> ModelVersion:
        """One registered version; MLflow's error (naming it) when there is none."""
        return self.store._client.get_model_version(model_name, version)

    def version_tags(self, model_name: str, version: str) -> dict[str, str]:
        """The tags of one registered version (over REST on a served store); an error when there is none."""
        if self.store.rest is not None:
            return self.store.rest.model_version_tags(model_name, version)
        if (found := self._light_version(model_name, version)) is not None:
            return found.tags
        return dict(self.model_version(model_name, version).tags)

    def version_aliases_and_tags(self, model_name: str, version: str) -> tuple[list[str], dict[str, str]]:
        """One registered version's aliases and tags (over REST on a served store: no MLflow import)."""
        if self.store.rest is not None:
            return self.store.rest.model_version(model_name, version)
        if (light := self._light_version(model_name, version)) is not None:
            return light.aliases, light.tags
        found = self.model_version(model_name, version)
        return list(found.aliases), dict(found.tags)

    def version_by_alias(self, model_name: str, alias: str) -> ModelVersion | StoredVersion:
        """The version ``alias`` points at (its ``version``, ``tags``, ``aliases``, ``run_id``); MLflow's error
        when the model or the alias does not exist (:meth:`alias_version` answers None instead)."""
        if (found := self._light_alias(model_name, alias)) is not None:
            return found
        return self.store._client.get_model_version_by_alias(model_name, alias)

    def search_versions(self, filter_string: str) -> list[ModelVersion]:
        """The registered versions matching ``filter_string`` (e.g. ``name = 'credit-default'``)."""
        return list(self.store._client.search_model_versions(filter_string))

    def version_download_uri(self, model_name: str, version: str) -> str:
        """Where a version's files are stored, resolved in this store's registry (never the process-wide
        one, which MLflow's ``models:/`` download would ask)."""
        reader = self.store.sqlite_reads
        if reader is not None and (found := reader.download_uri(model_name, version)) is not None:
            return found
        return str(self.store._client.get_model_version_download_uri(model_name, version))

    def _light_alias(self, model_name: str, alias: str) -> StoredVersion | None:
        """The version ``alias`` points at as the SQLite store's light reader finds it; None: ask MLflow."""
        reader = self.store.sqlite_reads
        return None if reader is None else reader.version_by_alias(model_name, alias)

    def _light_version(self, model_name: str, version: str) -> StoredVersion | None:
        """The version as the SQLite store's light reader finds it; None: ask MLflow (not found, or not SQLite)."""
        reader = self.store.sqlite_reads
        return None if reader is None else reader.version(model_name, version)

    # --- tags, gates, aliases -----------------------------------------------------------------

    def create_version(
        self,
        model_name: str,
        source: str,
        run_id: str | None,
        tags: Mapping[str, str],
        *,
        model_id: str | None = None,
    ) -> str:
        """Create a version of ``model_name`` (the registered model too, on first use) with every tag in the
        one request that creates it; return its number. The version never exists without its tags. ``run_id``
        None: a version no run produced (a fixture, a benchmark's store)."""
        from mlflow.exceptions import MlflowException
        from mlflow.protos.databricks_pb2 import RESOURCE_ALREADY_EXISTS, ErrorCode

        client = self.store._client
        try:
            client.create_registered_model(model_name)
        except MlflowException as exc:
            if exc.error_code != ErrorCode.Name(RESOURCE_ALREADY_EXISTS):
                raise
        created = client.create_model_version(
            model_name, source, run_id=run_id, tags=dict(tags), model_id=model_id
        )
        return str(created.version)

    def create_signed_version(
        self,
        model_name: str,
        logged: ModelInfo,
        run_id: str,
        tags: Mapping[str, str],
        progress: RegistrationProgress,
        record: Callable[[str, str], None] = lambda number, digest: None,
    ) -> tuple[str, str]:
        """Register a model logged in the open run ``run_id`` as a whole version; return its number and digest.

        The stored files are read back (the digest covers what the server will load) and signed; one request
        creates the version with ``tags``, the digest and the signature; then ``record(number, digest)`` and
        ``model.signed`` go to the audit trail. ``progress`` says how far it got, for
        :func:`mlops.tracking.registration_faults.registration_failure`.
        """
        from mlops.governance.signing import record_signed
        from mlops.origin_facts import file_sha256
        from mlops.vocabulary import DIGEST_TAG, ONNX_FILE

        with tempfile.TemporaryDirectory(prefix="mlops-register-") as tmp:
            stored = self.download(logged.model_uri, tmp)  # what the artifact store holds, not our copy
            digest = file_sha256(stored / ONNX_FILE)
            signed = self.sign_files(stored)
        number = self.create_version(
            model_name,
            logged.model_uri,
            run_id,
            {**tags, DIGEST_TAG: digest, **signed.version_tags()},
            model_id=logged.model_id,
        )
        progress.created = number
        record(number, digest)
        record_signed(model_name, number, signed, self.store.pipeline_run_id)
        progress.recorded = True  # whatever fails from here on leaves a whole version behind
        return number, digest

    def delete_version(self, model_name: str, version: str) -> None:
        """Delete one version (a registration that could not be completed takes its version back)."""
        self.store._client.delete_model_version(model_name, version)

    def tag_version(self, model_name: str, version: str, tags: Mapping[str, str]) -> None:
        """Set ``tags`` on one registered version."""
        writer = self.writer
        for key, value in tags.items():
            writer.set_model_version_tag(model_name, version, key, str(value))

    def tag_model(self, model_name: str, tags: Mapping[str, str]) -> None:
        """Set ``tags`` on the registered model itself (not one version)."""
        writer = self.writer
        for key, value in tags.items():
            writer.set_registered_model_tag(model_name, key, str(value))

    def record_gate(self, model_name: str, version: str, gate: str, decision: str, reason: str) -> None:
        """A gate's verdict on the version: ``mlops.gate.<gate>.decision`` and ``.reason`` (clipped to
        MLflow's limit), so the registry alone tells why a version is or is not live."""
        self.tag_version(
            model_name,
            version,
            {gate_tag(gate, "decision"): decision, gate_tag(gate, "reason"): clip(reason)},
        )

    def alias_version(self, model_name: str, alias: str) -> str | None:
        """The version ``alias`` points at, or None when the model or the alias does not exist."""
        if self.store.rest is not None:
            return self.store.rest.alias_version(model_name, alias)
        if (found := self._light_alias(model_name, alias)) is not None:
            return found.version
        from mlflow.exceptions import MlflowException

        try:
            return str(self.store._client.get_model_version_by_alias(model_name, alias).version)
        except MlflowException:
            return None

    def point_alias(self, model_name: str, alias: str, version: str) -> str | None:
        """Point a working alias (``challenger``) at ``version``; return the version it left.

        No history tags: ``mlops.promoted_at``/``mlops.replaced_by`` are the live alias's history,
        which a rollback follows (:meth:`move_alias`). The caller records the move in its run.
        """
        previous = self.alias_version(model_name, alias)
        self.writer.set_registered_model_alias(model_name, alias, version)
        return previous

    def delete_alias(self, model_name: str, alias: str) -> None:
        """Remove a working alias (``challenger``) from the model; the versions and their tags stay."""
        self.writer.delete_registered_model_alias(model_name, alias)

    def move_alias(
        self,
        model_name: str,
        alias: str,
        version: str,
        previous: str | None,
        *,
        reason: str = "",
        links: Mapping[str, str] | None = None,
    ) -> None:
        """Point the live ``alias`` at ``version`` and record the move on both versions and in the audit trail.

        The one place a live alias moves (a gate's promotion, a deployment target's deploy or
        rollback): ``mlops.promoted_at`` on the new version, ``mlops.replaced_by`` on the one it
        replaced (``previous``, read by the caller before the move), so the registry alone holds
        the history a rollback follows; an ``alias.moved`` audit record says why (``reason``) and
        links it (``links``: deployment; this store's pipeline run), which ``mlops history`` reads.
        """
        from datetime import UTC, datetime

        from mlops.governance.audit import record

        client = self.writer
        client.set_registered_model_alias(model_name, alias, version)
        client.set_model_version_tag(model_name, version, PROMOTED_AT_TAG, datetime.now(UTC).isoformat())
        if previous is not None and previous != version:
            client.set_model_version_tag(model_name, previous, REPLACED_BY_TAG, version)
        run_link = {"pipeline_run_id": self.store.pipeline_run_id} if self.store.pipeline_run_id else {}
        record(
            "alias.moved",
            f"{model_name}/{version}",
            {"alias": alias, "from": previous or "", "to": version, "reason": reason},
            links={**run_link, **(links or {}), "model_version": f"{model_name}/{version}"},
            tracking_uri=self.store.tracking_uri,
        )

    # --- artifacts, signatures, profiles ------------------------------------------------------

    def download(self, artifact_uri: str, dst_path: str | Path | None = None) -> Path:
        """Download an artifact (``runs:/…``, ``s3://…``, ``mlflow-artifacts:/…``) of this store: into
        ``dst_path/<its last name>``, as MLflow does. One stored on this machine's disk (a ``file:`` location, or
        a ``runs:/`` path of a run whose artifacts are, read through the light reader) is copied without
        importing MLflow."""
        local = self._local_artifact(artifact_uri)
        if local is not None and dst_path is not None:
            return copy_artifact(local, Path(dst_path))
        import mlflow

        return Path(
            mlflow.artifacts.download_artifacts(
                artifact_uri=artifact_uri,
                dst_path=None if dst_path is None else str(dst_path),
                tracking_uri=self.store.mlflow_uris[0],
                registry_uri=self.store.mlflow_uris[1],
            )
        )

    def _local_artifact(self, artifact_uri: str) -> Path | None:
        """The file or folder ``artifact_uri`` names on this machine's disk; None when it is elsewhere, or
        not known without MLflow."""
        if artifact_uri.startswith("runs:/"):
            reader = self.store.sqlite_reads
            run_id, _, path = artifact_uri.removeprefix("runs:/").partition("/")
            root = None if reader is None else reader.run_artifact_uri(run_id)
            if root is None:
                return None
            artifact_uri = f"{root.rstrip('/')}/{path}" if path else root
        local = local_path(artifact_uri)
        return local if local is not None and local.exists() else None

    def download_version(self, model_name: str, version: str, dst_path: str | Path | None = None) -> Path:
        """A registered version's files, found through this store's registry (MLflow's own ``models:/``
        download looks versions up in the process-wide registry, whatever registry it is given)."""
        return self.download(self.store._client.get_model_version_download_uri(model_name, version), dst_path)

    def sign_version(self, model_name: str, version: str, local_dir: Path) -> Signed:
        """Inside the registering task run: sign the version's files (``local_dir``), tag the version and
        record ``model.signed`` (:func:`mlops.governance.signing.sign_registered_version`)."""
        from mlops.governance.signing import sign_registered_version

        return sign_registered_version(
            self.store._client, model_name, version, local_dir, self.store.pipeline_run_id
        )

    def sign_files(self, local_dir: Path) -> Signed:
        """Inside the registering task run: sign a model's stored files and log the bundle, before any
        version names it (:func:`mlops.governance.signing.sign_run_files`)."""
        from mlops.governance.signing import sign_run_files

        return sign_run_files(self.store._client, local_dir)

    def verify_version(self, model_name: str, version: str, local_dir: Path) -> None:
        """Verify a downloaded version against its signature bundle before anything loads it."""
        from mlops.governance.signing import verify_registered

        verify_registered(self.store._client, model_name, version, local_dir)

    def log_reference_profile(self, run_id: str, profile: ReferenceProfile) -> str:
        """Log ``profile`` into run ``run_id``; return the URI a version names in its ``mlops.reference_profile``
        tag, which the drift monitor reads back through :meth:`reference_profile`."""
        from mlops.model.reference_profile import PROFILE_FILE

        client = self.store._client
        client.log_text(run_id, profile.to_json(), PROFILE_FILE)
        return f"{client.get_run(run_id).info.artifact_uri.rstrip('/')}/{PROFILE_FILE}"

    def write_reference_profile(
        self, run_id: str, model_name: str, version: str, profile: ReferenceProfile
    ) -> str:
        """:meth:`log_reference_profile`, then name it on an existing version; return its URI."""
        uri = self.log_reference_profile(run_id, profile)
        self.store._client.set_model_version_tag(model_name, version, PROFILE_TAG, uri)
        return uri

    def reference_profile(self, model_name: str, version: str) -> ReferenceProfile:
        """The profile a registered version was stored with; :class:`ProfileError` when it has none."""
        from mlops.model.reference_profile import ProfileError, ReferenceProfile

        uri = self.store._client.get_model_version(model_name, version).tags.get(PROFILE_TAG)
        if not uri:
            raise ProfileError(
                f"model {model_name!r} version {version} has no reference profile (no {PROFILE_TAG} tag): it was "
                "registered before profiles existed or outside the register step. Retrain it (mlops run training) "
                "so the new version carries one; nothing was triggered"
            )
        try:
            with tempfile.TemporaryDirectory(prefix="mlops-profile-") as tmp:
                text = self.download(uri, tmp).read_text(encoding="utf-8")
        except Exception as exc:  # MLflow raises several types for a missing artifact
            raise ProfileError(
                f"cannot read the reference profile of {model_name} v{version} at {uri}: {exc}"
            ) from exc
        return ReferenceProfile.from_json(text, f"profile of {model_name} v{version}")


def copy_artifact(source: Path, dst: Path) -> Path:
    """``source`` (a file or a folder) copied to ``dst/<its name>``, as MLflow's download lays it out."""
    import shutil

    target = dst / source.name
    dst.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True)
    else:
        shutil.copy2(source, target)
    return target
