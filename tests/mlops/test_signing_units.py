"""Signing, in-process: where the keys are, what a refusal says, and how a version's files are signed,
tagged, recorded and verified, with stand-ins for the MLflow run, client and artifact download.

The keys, the signature bundles and the audit trail are real (a temporary workspace); only MLflow is
stood in for, so each test runs in well under a second.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mlflow
import pytest
from cryptography.hazmat.primitives import serialization

from mlops.governance import audit
from mlops.governance.signing import (
    SignatureError,
    Signed,
    SigningSettings,
    generate_key_pair,
    key_id,
    public_key_for,
    record_signed,
    sign_directory,
    sign_registered_version,
    sign_run_files,
    verify_directory,
    verify_registered,
)

RUN_ID = "0123abcd"


@pytest.fixture(autouse=True)
def _no_signing_environment(monkeypatch) -> None:
    for name in ("MLOPS_SIGNING_KEY", "MLOPS_SIGNING_PUBLIC_KEY", "MLOPS_SIGNING_REQUIRED"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    directory = tmp_path / "download"
    directory.mkdir()
    (directory / "model.onnx").write_bytes(b"\x08\x07onnx-bytes" * 100)
    (directory / "MLmodel").write_text("flavors: {onnx: {}}\n")
    (directory / "registered_model_meta").write_text("model_name: m\nmodel_version: 3\n")
    return directory


class Client:
    """A stand-in ``MlflowClient``: keeps what is logged and tagged, answers a version's tags."""

    def __init__(self, workspace: Path) -> None:
        self.tracking_uri = f"sqlite:///{workspace}/mlflow.db"
        self.logged: list[tuple[str, str, str]] = []
        self.kept = workspace / "logged"
        self.tags: dict[str, str] = {}
        self.tag_calls: list[tuple[str, str, str, str]] = []

    def log_artifact(self, run_id: str, local_path: str, artifact_path: str | None = None) -> None:
        self.logged.append((run_id, local_path, artifact_path or ""))
        self.kept.mkdir(exist_ok=True)
        shutil.copy(local_path, self.kept / Path(local_path).name)

    def set_model_version_tag(self, name: str, version: str, key: str, value: str) -> None:
        self.tag_calls.append((name, version, key, value))
        self.tags[key] = value

    def get_model_version(self, name: str, version: str) -> Any:
        assert (name, version) == ("m", "3"), (name, version)
        return SimpleNamespace(tags=dict(self.tags))


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    monkeypatch.setenv(audit.AUDIT_URI_ENV, str(root / "audit.jsonl"))
    return root


@pytest.fixture
def in_run(monkeypatch) -> None:
    monkeypatch.setattr(mlflow, "active_run", lambda: SimpleNamespace(info=SimpleNamespace(run_id=RUN_ID)))


# --- keys -------------------------------------------------------------------------------------------


def test_a_configured_private_key_is_used_with_home_expanded(tmp_path, monkeypatch) -> None:
    private, _ = generate_key_pair(tmp_path / "home" / "keys")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    settings = SigningSettings.from_env({"MLOPS_SIGNING_KEY": "~/keys/signing.key"})
    assert settings.private_key(None) == private
    assert not (tmp_path / "ws").exists()


def test_a_missing_configured_private_key_is_refused_whole(tmp_path) -> None:
    missing = tmp_path / "missing.key"
    with pytest.raises(SignatureError) as caught:
        SigningSettings.from_env({"MLOPS_SIGNING_KEY": str(missing)}).private_key(tmp_path)
    assert str(caught.value) == (
        f"MLOPS_SIGNING_KEY={missing} does not exist; mount the signing key there (a Kubernetes Secret) or "
        "run `mlops keys init`"
    )
    assert not (tmp_path / "keys").exists()  # a configured key is never made


def test_the_workspace_key_pair_is_made_on_first_use_and_then_kept(tmp_path) -> None:
    made = SigningSettings().private_key(tmp_path)
    assert made == tmp_path / "keys" / "signing.key" and made.is_file()
    assert (tmp_path / "keys" / "signing.pub").is_file()
    pem = made.read_bytes()
    assert SigningSettings().private_key(tmp_path) == made
    assert made.read_bytes() == pem


def test_no_workspace_and_no_configured_key_is_refused_naming_the_variable() -> None:
    with pytest.raises(SignatureError) as caught:
        SigningSettings().private_key(None)
    assert str(caught.value) == (
        "no signing key configured: set MLOPS_SIGNING_KEY (no local workspace to keep one in)"
    )
    with pytest.raises(SignatureError) as caught:
        SigningSettings().public_key(None)
    assert str(caught.value) == (
        "no signing key configured: set MLOPS_SIGNING_PUBLIC_KEY (no local workspace to keep one in)"
    )


def test_a_configured_public_key_is_used_with_home_expanded(tmp_path, monkeypatch) -> None:
    _, public = generate_key_pair(tmp_path / "home" / "keys")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    settings = SigningSettings.from_env({"MLOPS_SIGNING_PUBLIC_KEY": "~/keys/signing.pub"})
    assert settings.public_key(tmp_path / "elsewhere") == public


def test_the_workspace_public_key_is_used_when_none_is_configured(tmp_path) -> None:
    _, public = generate_key_pair(tmp_path / "keys")
    assert SigningSettings().public_key(tmp_path) == public


@pytest.mark.parametrize("configured", [True, False])
def test_a_missing_public_key_is_refused_whole(tmp_path, configured) -> None:
    path = tmp_path / ("elsewhere.pub" if configured else "keys/signing.pub")
    settings = SigningSettings.from_env({"MLOPS_SIGNING_PUBLIC_KEY": str(path)} if configured else {})
    with pytest.raises(SignatureError) as caught:
        settings.public_key(tmp_path)
    assert str(caught.value) == (
        f"no public key to verify model signatures at {path}; set MLOPS_SIGNING_PUBLIC_KEY to the signer's "
        "public key file (or register a model in this workspace first)"
    )


def test_the_key_id_is_the_first_16_hex_digits_of_the_sha256_of_the_der_public_key(tmp_path) -> None:
    _, public = generate_key_pair(tmp_path / "keys")
    loaded = serialization.load_pem_public_key(public.read_bytes())
    der = loaded.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert key_id(public) == hashlib.sha256(der).hexdigest()[:16]
    assert len(key_id(public)) == 16


# --- verify_directory ---------------------------------------------------------------------------------


def test_a_file_the_bundle_does_not_list_is_ignored_but_a_listed_one_missing_is_refused(
    model, tmp_path
) -> None:
    private, public = generate_key_pair(tmp_path / "keys")
    (model / "registered_model_meta").unlink()
    sign_directory(model, tmp_path / "model.sig", private)
    (model / "registered_model_meta").write_text("added by the registry on download\n")
    verify_directory(model, tmp_path / "model.sig", public, "m version 3")
    (model / "MLmodel").unlink()
    with pytest.raises(SignatureError, match="refusing to load m version 3"):
        verify_directory(model, tmp_path / "model.sig", public, "m version 3")


class Failing:
    """A stand-in ``verifying.Config`` whose ``verify`` raises ``error``."""

    error: Exception = ValueError()

    def use_elliptic_key_verifier(self, public_key: Path) -> Failing:
        return self

    def set_ignore_unsigned_files(self, ignore: bool) -> Failing:
        return self

    def verify(self, model_dir: Path, signature: Path) -> None:
        raise self.error


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (ValueError("  digest mismatch for model.onnx\nexpected 1f…\n"), "digest mismatch for model.onnx"),
        (ValueError("  \n "), "ValueError"),
        (KeyError(), "KeyError"),
    ],
)
def test_the_refusal_names_what_the_key_and_the_first_line_of_the_cause(
    tmp_path, monkeypatch, error, said
) -> None:
    from model_signing import verifying

    _, public = generate_key_pair(tmp_path / "keys")
    monkeypatch.setattr(Failing, "error", error)
    monkeypatch.setattr(verifying, "Config", Failing)
    with pytest.raises(SignatureError) as caught:
        verify_directory(tmp_path, tmp_path / "model.sig", public, "m version 3")
    assert str(caught.value) == (
        f"refusing to load m version 3: its signature does not verify with the public key {public} (key id "
        f"{key_id(public)}): {said}. The files were changed after signing or were signed with another key; "
        "re-register the model instead of editing it"
    )
    assert caught.value.__cause__ is error


# --- signing a registration ---------------------------------------------------------------------------


def test_the_version_tags_name_the_signature_and_the_key() -> None:
    signed = Signed("runs:/r/signature/model.sig", "0011223344556677", ("MLmodel",))
    assert signed.version_tags() == {
        "mlops.signature_uri": "runs:/r/signature/model.sig",
        "mlops.signing_key_id": "0011223344556677",
    }


def test_signing_outside_a_run_is_refused(model, workspace, monkeypatch) -> None:
    monkeypatch.setattr(mlflow, "active_run", lambda: None)
    client = Client(workspace)
    with pytest.raises(SignatureError) as caught:
        sign_run_files(client, model)  # type: ignore[arg-type]
    assert str(caught.value) == "signing must run inside the registering MLflow run"
    assert client.logged == [] and not (workspace / "keys").exists()


def test_the_run_files_are_signed_with_the_workspace_key_without_the_registry_file(
    model, workspace, in_run
) -> None:
    client = Client(workspace)
    signed = sign_run_files(client, model)  # type: ignore[arg-type]
    public = workspace / "keys" / "signing.pub"
    assert signed == Signed(f"runs:/{RUN_ID}/signature/model.sig", key_id(public), ("MLmodel", "model.onnx"))
    [(run_id, local_path, artifact_path)] = client.logged
    assert (run_id, Path(local_path).name, artifact_path) == (RUN_ID, "model.sig", "signature")
    assert Path(local_path).parent.name.startswith("mlops-signature-")
    assert not Path(local_path).exists()  # the bundle's temporary directory is gone
    # the logged bundle verifies the download with or without registered_model_meta: it is not signed
    verify_directory(model, client.kept / "model.sig", public, "m version 3")
    (model / "registered_model_meta").unlink()
    verify_directory(model, client.kept / "model.sig", public, "m version 3")
    (model / "model.onnx").write_bytes(b"changed")
    with pytest.raises(SignatureError):
        verify_directory(model, client.kept / "model.sig", public, "m version 3")


def test_a_configured_key_signs_and_the_key_id_is_its_public_halfs(
    model, workspace, in_run, monkeypatch
) -> None:
    private, public = generate_key_pair(workspace.parent / "secret")
    monkeypatch.setenv("MLOPS_SIGNING_KEY", str(private))
    client = Client(workspace)
    signed = sign_run_files(client, model)  # type: ignore[arg-type]
    assert signed.key_id == key_id(public)
    assert not (workspace / "keys").exists()
    verify_directory(model, client.kept / "model.sig", public, "m version 3")


def test_model_signed_is_recorded_with_the_key_the_bundle_the_files_and_the_links(workspace, in_run) -> None:
    signed = Signed("runs:/r/signature/model.sig", "0011223344556677", ("MLmodel", "model.onnx"))
    record_signed("m", "3", signed, "kfp-run-9")
    [event] = audit.read_events()
    assert (event.action, event.subject) == ("model.signed", "m/3")
    assert event.details == {
        "signing_key_id": "0011223344556677",
        "signature_uri": "runs:/r/signature/model.sig",
        "files": ["MLmodel", "model.onnx"],
    }
    assert event.links == {"pipeline_run_id": "kfp-run-9", "mlflow_run_id": RUN_ID, "model_version": "m/3"}


def test_model_signed_without_a_pipeline_run_links_none(model, workspace, in_run) -> None:
    record_signed("m", "3", Signed("runs:/r/signature/model.sig", "k"))
    sign_registered_version(Client(workspace), "m", "3", model)  # type: ignore[arg-type]
    first, second = audit.read_events()
    assert first.links == {"mlflow_run_id": RUN_ID, "model_version": "m/3"}
    assert first.details["files"] == []
    assert second.links == {"mlflow_run_id": RUN_ID, "model_version": "m/3"}


def test_an_existing_version_is_signed_tagged_and_recorded(model, workspace, in_run) -> None:
    client = Client(workspace)
    signed = sign_registered_version(client, "m", "3", model, "kfp-run-9")  # type: ignore[arg-type]
    assert client.tag_calls == [
        ("m", "3", "mlops.signature_uri", f"runs:/{RUN_ID}/signature/model.sig"),
        ("m", "3", "mlops.signing_key_id", signed.key_id),
    ]
    assert signed.files == ("MLmodel", "model.onnx")
    [event] = audit.read_events()
    assert (event.action, event.subject, event.links["pipeline_run_id"]) == (
        "model.signed",
        "m/3",
        "kfp-run-9",
    )
    assert event.details["signature_uri"] == signed.signature_uri


# --- loading ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tags", [{}, {"mlops.signature_uri": ""}])
def test_an_unsigned_version_is_refused_when_signatures_are_required(workspace, tags) -> None:
    with pytest.raises(SignatureError) as caught:
        public_key_for(tags, "m version 3", f"sqlite:///{workspace}/mlflow.db")
    assert str(caught.value) == (
        "refusing to load m version 3: it carries no signature (mlops.signature_uri tag). Register it through "
        "components.register, which signs it, or set MLOPS_SIGNING_REQUIRED=false for versions registered "
        "before signing"
    )


def test_an_unsigned_version_has_no_key_when_signatures_are_optional(workspace, monkeypatch) -> None:
    monkeypatch.setenv("MLOPS_SIGNING_REQUIRED", "false")
    assert public_key_for({}, "m version 3", f"sqlite:///{workspace}/mlflow.db") is None


def test_a_signed_version_is_verified_with_the_workspace_public_key(workspace, monkeypatch) -> None:
    monkeypatch.setenv("MLOPS_SIGNING_REQUIRED", "false")  # a signed version is verified even so
    _, public = generate_key_pair(workspace / "keys")
    tags = {"mlops.signature_uri": "runs:/r/signature/model.sig"}
    assert public_key_for(tags, "m version 3", f"sqlite:///{workspace}/mlflow.db") == public


@pytest.fixture
def downloads(monkeypatch) -> list[dict[str, str]]:
    """``mlflow.artifacts.download_artifacts`` standing in: copies the bundle the stand-in client kept."""
    calls: list[dict[str, str]] = []

    def download(*, artifact_uri: str, dst_path: str, tracking_uri: str) -> str:
        calls.append({"artifact_uri": artifact_uri, "tracking_uri": tracking_uri})
        assert Path(dst_path).name.startswith("mlops-signature-"), dst_path
        kept = Path(tracking_uri.removeprefix("sqlite:///")).parent / "logged" / "model.sig"
        return str(shutil.copy(kept, str(Path(dst_path) / "model.sig")))

    monkeypatch.setattr(mlflow.artifacts, "download_artifacts", download)
    return calls


def test_a_registered_version_verifies_against_its_own_bundle_and_a_change_is_refused(
    model, workspace, in_run, downloads
) -> None:
    client = Client(workspace)
    signed = sign_registered_version(client, "m", "3", model)  # type: ignore[arg-type]
    verify_registered(client, "m", "3", model)  # type: ignore[arg-type]
    assert downloads == [{"artifact_uri": signed.signature_uri, "tracking_uri": client.tracking_uri}]
    (model / "model.onnx").write_bytes(b"changed")
    with pytest.raises(SignatureError, match=r"^refusing to load m version 3: its signature does not verify"):
        verify_registered(client, "m", "3", model)  # type: ignore[arg-type]


def test_an_unsigned_version_is_loaded_unverified_only_when_signatures_are_optional(
    model, workspace, monkeypatch, downloads
) -> None:
    client = Client(workspace)
    with pytest.raises(SignatureError, match="refusing to load m version 3: it carries no signature"):
        verify_registered(client, "m", "3", model)  # type: ignore[arg-type]
    monkeypatch.setenv("MLOPS_SIGNING_REQUIRED", "false")
    verify_registered(client, "m", "3", model)  # type: ignore[arg-type]
    assert downloads == []
