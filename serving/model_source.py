"""Find the model version an alias points at, fetch its ``model.onnx`` and prove it is the registered file.

The registry is the only source of truth for "which model is live": the server
never serves a path, only ``models:/<name>@<alias>``. The version's model-signing
bundle is verified against the configured public key (:mod:`mlops.governance.signing`) and the
SHA-256 recorded at registration (version tag ``mlops.onnx_sha256``) is checked on
every fetch, so a file altered in the artifact store after the gates approved it, or
signed by another key, is refused rather than served.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from mlops.governance.signing import SignatureError, public_key_for, verify_directory
from mlops.origin_facts import file_sha256
from mlops.tracking.store import TrackingStore, redact_uri
from mlops.vocabulary import (
    CHAMPION,
    DIGEST_TAG,
    EXPLAIN_REFERENCE_TAG,
    ONNX_FILE,
    PRECISION_TAG,
    QUANTIZED_FROM_TAG,
    SIGNATURE_URI_TAG,
)

if TYPE_CHECKING:
    from mlflow.exceptions import MlflowException

__all__ = ["DIGEST_TAG", "PRECISION_TAG", "QUANTIZED_FROM_TAG", "RegisteredModelSource", "RegistryError"]


class RegistryError(ValueError):
    """The registry cannot provide a servable model; the message says what to fix."""


class DigestMismatchError(RegistryError):
    """The downloaded file is not the one registered: never serve it."""


@dataclass(frozen=True)
class ModelArtifact:
    """A verified local copy of one registered model version."""

    name: str
    """Registered model name."""
    version: str
    """Registry version number, as a string."""
    path: Path
    """The verified ``model.onnx``."""
    sha256: str
    """Its digest, equal to the version's ``mlops.onnx_sha256`` tag."""
    tags: dict[str, str]
    """All version tags (lineage, precision, gate decisions), for metadata endpoints."""
    reference_path: Path | None = None
    """The version's reference rows for served reasons (``explain_reference.parquet``); None without them."""


class RegisteredModelSource:
    """Where a server or a job gets a registered model's files: it resolves aliases to versions and fetches a
    version's files into a local cache, checking digest and signature (a loader over the registry, not the
    registry itself: that is :class:`mlops.tracking.store.TrackingStore`'s)."""

    def __init__(self, tracking: TrackingStore | str, model_name: str, cache_dir: Path):
        self.store = tracking if isinstance(tracking, TrackingStore) else TrackingStore.from_uri(tracking)
        """The registry's store (a URI is the server's ``--tracking-uri``); its client is built on first use."""
        self.tracking_uri = self.store.tracking_uri
        self.model_name = model_name
        self.cache_dir = Path(cache_dir)

    def version_for(self, alias: str) -> str:
        """The version ``alias`` points at now."""
        try:
            return str(self.store.version_by_alias(self.model_name, alias).version)
        except _mlflow_error() as exc:
            if _unreachable(exc):
                raise RegistryError(
                    f"cannot reach the MLflow registry at {redact_uri(self.tracking_uri)}: {_first_line(exc.message)}; "
                    "start the server or fix --tracking-uri / MLFLOW_TRACKING_URI"
                ) from exc
            raise RegistryError(
                f"models:/{self.model_name}@{alias} does not resolve in {redact_uri(self.tracking_uri)}: "
                f"{_first_line(exc.message)}. {_alias_fix(self.model_name, alias)}"
            ) from exc

    def fetch(self, version: str) -> ModelArtifact:
        """Download ``version`` (or reuse a verified cached copy) and check its digest."""
        try:
            tags = self.store.version_tags(self.model_name, version)
        except _mlflow_error() as exc:
            raise RegistryError(
                f"model {self.model_name!r} has no version {version!r} in {redact_uri(self.tracking_uri)}: "
                f"{exc.message}"
            ) from exc
        expected = tags.get(DIGEST_TAG, "")
        if not expected:
            raise RegistryError(
                f"{self.model_name} version {version} has no {DIGEST_TAG} tag, so its file cannot be verified; "
                "register models with components.register (mlops run training) which records the digest"
            )

        public_key = self._public_key(tags, version)
        target = self.cache_dir / self.model_name / version
        cached = target / ONNX_FILE
        if (
            cached.is_file()
            and file_sha256(cached) == expected
            and self._verified(target, tags, version, public_key)
        ):
            return ModelArtifact(
                self.model_name, version, cached, expected, tags, self._reference(tags, version)
            )

        self.cache_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{self.model_name}-{version}-", dir=self.cache_dir))
        try:
            # Resolve the storage location in our own registry: mlflow's models:/ download path
            # looks the version up in the *global* registry URI, not the one passed to it.
            location = self.store.version_download_uri(self.model_name, version)
            (staging / "model").mkdir()
            (staging / "signature").mkdir()
            downloaded = self._download(location, staging / "model", version)
            onnx_path = downloaded / ONNX_FILE
            if not onnx_path.is_file():
                raise RegistryError(
                    f"{self.model_name} version {version} has no {ONNX_FILE} in its artifacts "
                    f"({sorted(p.name for p in downloaded.iterdir())}); it was not logged with mlflow.onnx"
                )
            actual = file_sha256(onnx_path)
            if actual != expected:
                raise DigestMismatchError(
                    f"refusing to load {self.model_name} version {version}: {ONNX_FILE} has SHA-256 {actual} "
                    f"but the registry recorded {expected} at registration. The artifact was changed after "
                    "it passed the gates; re-register the model instead of editing its files."
                )
            # The digest tag alone trusts whoever can edit tags; the signature needs the private key.
            if public_key is not None:
                signature = self._download(tags[SIGNATURE_URI_TAG], staging / "signature", version)
                verify_directory(downloaded, signature, public_key, f"{self.model_name} version {version}")
            if target.exists():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            downloaded.replace(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return ModelArtifact(self.model_name, version, cached, expected, tags, self._reference(tags, version))

    def _reference(self, tags: dict[str, str], version: str) -> Path | None:
        """The version's reference rows (tag :data:`~mlops.vocabulary.EXPLAIN_REFERENCE_TAG`), downloaded beside
        its model; None for a version registered without them (it serves, and refuses only ``explain``)."""
        uri = tags.get(EXPLAIN_REFERENCE_TAG, "")
        if not uri:
            return None
        target = self.cache_dir / self.model_name / f"{version}.explain"
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        return self._download(uri, target, version)

    def _public_key(self, tags: dict[str, str], version: str) -> Path | None:
        """The key to verify ``version`` with; None for an unsigned version when signatures are optional."""
        return public_key_for(tags, f"{self.model_name} version {version}", self.tracking_uri)

    def _verified(self, directory: Path, tags: dict[str, str], version: str, public_key: Path | None) -> bool:
        """A cached copy is reused only if it verifies against the signature the registry names *now*
        (a bundle replaced or a key rotated since it was cached sends it through the full fetch)."""
        if public_key is None:
            return True
        with tempfile.TemporaryDirectory(
            prefix=f".{self.model_name}-{version}-sig-", dir=self.cache_dir
        ) as tmp:
            current = self._download(tags[SIGNATURE_URI_TAG], Path(tmp), version)
            try:
                verify_directory(directory, current, public_key, f"cached {directory}")
            except SignatureError:
                return False
        return True

    def _download(self, location: str, staging: Path, version: str) -> Path:
        """Fetch a version's artifacts; any store failure becomes one :class:`RegistryError` line with the fix."""
        try:
            return self.store.download(location, staging)
        except _mlflow_error() as exc:
            raise RegistryError(
                f"cannot download {self.model_name} version {version} from {location}: "
                f"{_first_line(exc.message)}"
            ) from exc
        except Exception as exc:  # boto3/botocore, requests, OSError: whatever the artifact store raised
            from mlops.storage.s3 import describe_error

            raise RegistryError(
                f"cannot download {self.model_name} version {version}: {describe_error(exc, 'download', location)}"
            ) from exc


class _NotRaised(Exception):
    """Stands for MLflow's exception while MLflow is not imported: nothing raises it."""


def _mlflow_error() -> type[MlflowException]:
    """MLflow's exception class, looked up when an error is being matched (an ``except`` clause evaluates it
    then): a read the light reader answered never imported MLflow, and nothing else can raise its error."""
    import sys

    module = sys.modules.get("mlflow.exceptions")
    found: type[MlflowException] = (
        module.MlflowException if module is not None else cast("type[MlflowException]", _NotRaised)
    )
    return found


def _unreachable(exc: Exception) -> bool:
    text = str(exc)
    return any(s in text for s in ("Max retries exceeded", "Connection refused", "Failed to establish"))


def _alias_fix(model_name: str, alias: str) -> str:
    """What to run when ``alias`` points nowhere: the command line, never library code."""
    if alias == CHAMPION:
        return (
            f"No version of {model_name!r} has passed the gates yet (mlops run training promotes one). To serve "
            f"the latest trained version anyway: mlops serve --model-name {model_name} --alias challenger"
        )
    return (
        f"Point {alias!r} at a version first (mlops run training moves 'challenger' and 'champion'), or serve "
        f"the champion: mlops serve --model-name {model_name} --alias {CHAMPION}"
    )


def _first_line(text: str) -> str:
    """MLflow messages can carry a server traceback; the first line is the useful part."""
    lines = text.strip().splitlines()
    return lines[0][:400] if lines else text
