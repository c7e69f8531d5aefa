"""Model signing with OpenSSF ``model-signing``: every registered version is signed, every loader verifies.

At registration the version's artifact directory (``model.onnx``, ``MLmodel`` …) is signed
with a P-256 private key: the bundle lists each file's SHA-256 and is signed as a whole.
It is logged as an artifact of the registering run and named on the version (tag
``mlops.signature_uri``, plus ``mlops.signing_key_id``, the key's fingerprint — never the
key). A loader verifies the files it downloaded against the bundle and the configured
*public* key before ONNX Runtime sees a byte; a changed file or another key's signature
is refused (:class:`SignatureError`).

Keys are configuration, never data: ``MLOPS_SIGNING_KEY`` (private key file, e.g. a
Kubernetes Secret mounted into the registering pod) and ``MLOPS_SIGNING_PUBLIC_KEY`` (what
servers verify against). Locally both default to ``<workspace>/keys/`` and the pair is
generated on the first registration (``mlops keys init`` makes it explicitly).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mlops.settings import EnvSettings

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes
    from mlflow.entities.model_registry import ModelVersion


class SigningClient(Protocol):
    """What signing needs from a tracking store's MLflow client (:class:`mlflow.MlflowClient` answers it;
    the store hands its own, :meth:`mlops.tracking.store.TrackingStore.sign_version`): declared here so
    nothing outside :mod:`mlops.tracking` names MLflow's client."""

    @property
    def tracking_uri(self) -> str:
        """The store the client reads and writes (its workspace holds the keys)."""

    def log_artifact(self, run_id: str, local_path: str, artifact_path: str | None = None) -> None:
        """Store ``local_path`` in run ``run_id`` at ``artifact_path``."""

    def set_model_version_tag(self, name: str, version: str, key: str, value: str) -> None:
        """Set tag ``key`` on version ``version`` of model ``name``."""

    def get_model_version(self, name: str, version: str) -> ModelVersion:
        """One registered version (its tags name the signature)."""


KEYS_DIR = "keys"
PRIVATE_KEY_FILE = "signing.key"
PUBLIC_KEY_FILE = "signing.pub"
SIGNATURE_FILE = "model.sig"
SIGNATURE_ARTIFACT_DIR = "signature"
REGISTRY_DOWNLOAD_FILES = ("registered_model_meta",)
"""Files MLflow writes into a ``models:/`` download that are not artifacts of the version."""


class SignatureError(ValueError):
    """A model's files do not match a signature by the configured key, or no usable key/signature exists."""


class SigningSettings(EnvSettings):
    """Where the signing keys are and whether loaders insist on a signature (``MLOPS_<FIELD>`` each)."""

    env_error = SignatureError
    env_subject = "signing settings"

    signing_key: str = ""
    """Private key (P-256 PEM) that signs registered versions; empty: <workspace>/keys/signing.key, made on first use."""
    signing_public_key: str = ""
    """Public key (PEM) loaders verify versions against; empty: <workspace>/keys/signing.pub."""
    signing_required: bool = True
    """Refuse to load a version that carries no signature (turn off only for models registered before signing)."""

    def private_key(self, workspace_root: Path | None) -> Path:
        """The private key file; the workspace default is generated when missing, a configured one never."""
        if self.signing_key:
            path = Path(self.signing_key).expanduser()
            if not path.is_file():
                raise SignatureError(
                    f"{self.env_name('signing_key')}={path} does not exist; mount the signing key there "
                    "(a Kubernetes Secret) or run `mlops keys init`"
                )
            return path
        directory = _keys_dir(workspace_root, self.env_name("signing_key"))
        if not (directory / PRIVATE_KEY_FILE).is_file():
            generate_key_pair(directory)
        return directory / PRIVATE_KEY_FILE

    def public_key(self, workspace_root: Path | None) -> Path:
        if self.signing_public_key:
            path = Path(self.signing_public_key).expanduser()
        else:
            path = _keys_dir(workspace_root, self.env_name("signing_public_key")) / PUBLIC_KEY_FILE
        if not path.is_file():
            raise SignatureError(
                f"no public key to verify model signatures at {path}; set {self.env_name('signing_public_key')} "
                "to the signer's public key file (or register a model in this workspace first)"
            )
        return path


def _keys_dir(workspace_root: Path | None, variable: str) -> Path:
    if workspace_root is None:
        raise SignatureError(f"no signing key configured: set {variable} (no local workspace to keep one in)")
    return Path(workspace_root) / KEYS_DIR


def generate_key_pair(directory: Path) -> tuple[Path, Path]:
    """A new P-256 key pair: ``signing.key`` (mode 0600) and ``signing.pub`` in ``directory``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    directory.mkdir(parents=True, exist_ok=True)
    private, public = directory / PRIVATE_KEY_FILE, directory / PUBLIC_KEY_FILE
    if private.exists():
        raise SignatureError(f"{private} exists; remove it first if you really mean to replace the key")
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    descriptor = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(pem)
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public


def key_id(public_key: Path) -> str:
    """Fingerprint of a public key file (:func:`fingerprint`)."""
    from cryptography.hazmat.primitives import serialization

    return fingerprint(serialization.load_pem_public_key(public_key.read_bytes()))


def fingerprint(public_key: PublicKeyTypes) -> str:
    """A loaded public key's id: SHA-256 of its DER form, first 16 hex digits (safe to log and tag). The one
    definition, so a key named by its ``.pub`` file and by its private half (an approver's
    :func:`mlops.governance.approvers.private_key_id`) always get the same id."""
    from cryptography.hazmat.primitives import serialization

    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()[:16]


class NotAPublicKey(ValueError):
    """A file that is no P-256 public key; the message says what it is not, for the caller's sentence."""

    def __init__(self, message: str, *, unreadable: bool):
        super().__init__(message)
        self.unreadable = unreadable
        """Not PEM public key text at all (a private key given by mistake, say), rather than another curve."""


def public_key_id(public_key: Path) -> str:
    """:func:`key_id` of a file that must be a P-256 public key in PEM; :class:`NotAPublicKey` otherwise."""
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        key = load_pem_public_key(public_key.read_bytes())
    except ValueError as exc:
        raise NotAPublicKey(f"is not a PEM public key ({exc})", unreadable=True) from exc
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise NotAPublicKey("is not an EC (P-256) public key", unreadable=False)
    return key_id(public_key)


def public_key_of(private_key: Path) -> bytes:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(private_key.read_bytes(), password=None)
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def sign_directory(model_dir: Path, signature: Path, private_key: Path) -> None:
    """Sign every file under ``model_dir``; the bundle goes to ``signature`` (outside ``model_dir``)."""
    from model_signing import signing

    signing.Config().use_elliptic_key_signer(private_key=private_key).sign(model_dir, signature)


def verify_directory(model_dir: Path, signature: Path, public_key: Path, what: str) -> None:
    """Raise :class:`SignatureError` unless ``model_dir``'s files match ``signature`` made by ``public_key``'s pair.

    Files the bundle does not list (e.g. metadata a registry adds on download) are ignored;
    every file it lists must be present with the signed digest.
    """
    from model_signing import verifying

    try:
        verifying.Config().use_elliptic_key_verifier(public_key=public_key).set_ignore_unsigned_files(
            True
        ).verify(model_dir, signature)
    except Exception as exc:  # model_signing raises ValueError and library-specific errors alike
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SignatureError(
            f"refusing to load {what}: its signature does not verify with the public key {public_key} "
            f"(key id {key_id(public_key)}): {first}. The files were changed after signing or were signed "
            "with another key; re-register the model instead of editing it"
        ) from exc


@dataclass(frozen=True)
class Signed:
    signature_uri: str
    key_id: str
    files: tuple[str, ...] = ()
    """The signed files' names (the version's artifacts, without MLflow's registry download files)."""

    def version_tags(self) -> dict[str, str]:
        """The tags that name this signature on a version (what every loader reads)."""
        from mlops.vocabulary import SIGNATURE_URI_TAG, SIGNING_KEY_ID_TAG

        return {SIGNATURE_URI_TAG: self.signature_uri, SIGNING_KEY_ID_TAG: self.key_id}


def sign_run_files(client: SigningClient, local_dir: Path) -> Signed:
    """Inside the registering MLflow run: sign ``local_dir`` (the model's stored artifacts, as downloaded)
    and log the bundle into the run. Nothing names a version yet: registration creates the version with
    :meth:`Signed.version_tags` in the same request, so no version ever exists unsigned."""
    import mlflow

    from mlops.workspace import workspace_of

    run = mlflow.active_run()
    if run is None:
        raise SignatureError("signing must run inside the registering MLflow run")
    workspace = workspace_of(client.tracking_uri)
    private = SigningSettings.from_env().private_key(workspace)
    with tempfile.TemporaryDirectory(prefix="mlops-signature-") as tmp:
        bundle = Path(tmp) / SIGNATURE_FILE
        # MLflow adds registered_model_meta to a models:/ download; it is not one of the version's
        # artifacts (a loader downloading the version's source does not get it), so it is not signed.
        signed = Path(tmp) / "model"
        shutil.copytree(local_dir, signed, ignore=shutil.ignore_patterns(*REGISTRY_DOWNLOAD_FILES))
        sign_directory(signed, bundle, private)
        files = tuple(sorted(p.name for p in signed.iterdir()))
        public = Path(tmp) / PUBLIC_KEY_FILE
        public.write_bytes(public_key_of(private))
        signer = key_id(public)
        client.log_artifact(run.info.run_id, str(bundle), artifact_path=SIGNATURE_ARTIFACT_DIR)
    return Signed(f"runs:/{run.info.run_id}/{SIGNATURE_ARTIFACT_DIR}/{SIGNATURE_FILE}", signer, files)


def record_signed(model_name: str, version: str, signed: Signed, pipeline_run_id: str = "") -> None:
    """Record ``model.signed`` for a version in the audit trail (inside the registering run)."""
    from mlops.governance.audit import record_in_run

    subject = f"{model_name}/{version}"
    record_in_run(
        "model.signed",
        subject,
        {"signing_key_id": signed.key_id, "signature_uri": signed.signature_uri, "files": list(signed.files)},
        pipeline_run_id=pipeline_run_id,
        model_version=subject,
    )


def sign_registered_version(
    client: SigningClient, model_name: str, version: str, local_dir: Path, pipeline_run_id: str = ""
) -> Signed:
    """Sign a version that already exists (:func:`sign_run_files`), tag it and record ``model.signed``.

    ``client`` is the task's store client (:meth:`mlops.tracking.store.TrackingStore.sign_version`):
    the bundle goes into the open run through it, and the keys default to its workspace.
    """
    signed = sign_run_files(client, local_dir)
    for key, value in signed.version_tags().items():
        client.set_model_version_tag(model_name, version, key, value)
    record_signed(model_name, version, signed, pipeline_run_id)
    return signed


def public_key_for(tags: Mapping[str, str], what: str, tracking_uri: str) -> Path | None:
    """The key a loader verifies a version with (its tags in hand); None when it is unsigned and
    signatures are optional; an unsigned version is refused when they are required."""
    from mlops.vocabulary import SIGNATURE_URI_TAG
    from mlops.workspace import workspace_of

    settings = SigningSettings.from_env()
    if not tags.get(SIGNATURE_URI_TAG):
        if settings.signing_required:
            raise SignatureError(
                f"refusing to load {what}: it carries no signature ({SIGNATURE_URI_TAG} tag). Register it "
                f"through components.register, which signs it, or set {settings.env_name('signing_required')}"
                "=false for versions registered before signing"
            )
        return None
    return settings.public_key(workspace_of(tracking_uri))


def verify_registered(client: SigningClient, model_name: str, version: str, local_dir: Path) -> None:
    """Verify a downloaded registered version (``local_dir``) against its signature bundle, read through
    ``client`` (a store's: :meth:`mlops.tracking.store.TrackingStore.verify_version`)."""
    import mlflow

    from mlops.vocabulary import SIGNATURE_URI_TAG

    tags = dict(client.get_model_version(model_name, version).tags)
    what = f"{model_name} version {version}"
    public = public_key_for(tags, what, client.tracking_uri)
    if public is None:
        return
    with tempfile.TemporaryDirectory(prefix="mlops-signature-") as tmp:
        bundle = mlflow.artifacts.download_artifacts(
            artifact_uri=tags[SIGNATURE_URI_TAG], dst_path=tmp, tracking_uri=client.tracking_uri
        )
        verify_directory(local_dir, Path(bundle), public, what)


@contextmanager
def workspace_defaults(workspace_root: Path, *, sign: bool) -> Iterator[None]:
    """While a CLI command runs (and in the tasks it starts): the audit trail and the signing keys
    default to the workspace unless the environment names them; ``sign`` makes the key pair if missing."""
    from mlops.governance.audit import AUDIT_FILE, AUDIT_URI_ENV

    settings = SigningSettings.from_env()
    keys = Path(workspace_root) / KEYS_DIR
    values = {AUDIT_URI_ENV: str(Path(workspace_root) / AUDIT_FILE)}
    if not settings.signing_key and sign:
        values[settings.env_name("signing_key")] = str(settings.private_key(Path(workspace_root)))
    if not settings.signing_public_key and (keys / PUBLIC_KEY_FILE).is_file():
        values[settings.env_name("signing_public_key")] = str(keys / PUBLIC_KEY_FILE)
    added = {name: value for name, value in values.items() if not os.environ.get(name)}
    os.environ.update(added)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)
