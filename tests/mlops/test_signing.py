"""OpenSSF model-signing over a model directory: a changed byte, an added-then-signed-elsewhere file, another key."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from cli.main import main
from mlops.governance.signing import (
    SignatureError,
    SigningSettings,
    generate_key_pair,
    key_id,
    sign_directory,
    verify_directory,
)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "model.onnx").write_bytes(b"\x08\x07onnx-bytes" * 100)
    (directory / "MLmodel").write_text("flavors: {onnx: {}}\n")
    return directory


def test_signed_directory_verifies_and_a_changed_byte_is_named(model: Path, tmp_path: Path) -> None:
    private, public = generate_key_pair(tmp_path / "keys")
    sign_directory(model, tmp_path / "model.sig", private)
    verify_directory(model, tmp_path / "model.sig", public, "m version 1")
    (model / "model.onnx").write_bytes(b"\x08\x07onnx-bytes" * 99 + b"\x08\x07onnx-byteZ")
    with pytest.raises(SignatureError, match=r"refusing to load m version 1: .*model\.onnx"):
        verify_directory(model, tmp_path / "model.sig", public, "m version 1")


def test_another_keys_signature_is_refused(model: Path, tmp_path: Path) -> None:
    ours = generate_key_pair(tmp_path / "ours")[1]
    theirs = generate_key_pair(tmp_path / "theirs")[0]
    sign_directory(model, tmp_path / "model.sig", theirs)
    with pytest.raises(SignatureError, match=rf"key id {key_id(ours)}"):
        verify_directory(model, tmp_path / "model.sig", ours, "m version 2")


def test_key_pair_is_private_and_never_overwritten(tmp_path: Path) -> None:
    private, public = generate_key_pair(tmp_path / "keys")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert b"PRIVATE KEY" in private.read_bytes() and b"PUBLIC KEY" in public.read_bytes()
    with pytest.raises(SignatureError, match="exists; remove it first"):
        generate_key_pair(tmp_path / "keys")


def test_configured_keys_must_exist_and_workspace_keys_are_made_once(tmp_path: Path) -> None:
    settings = SigningSettings.from_env({"MLOPS_SIGNING_KEY": str(tmp_path / "missing.key")})
    with pytest.raises(SignatureError, match=r"MLOPS_SIGNING_KEY=.*missing.key does not exist"):
        settings.private_key(tmp_path)
    with pytest.raises(SignatureError, match="set MLOPS_SIGNING_KEY"):
        SigningSettings().private_key(None)
    made = SigningSettings().private_key(tmp_path)
    assert made == tmp_path / "keys" / "signing.key" and SigningSettings().private_key(tmp_path) == made
    with pytest.raises(SignatureError, match="set MLOPS_SIGNING_PUBLIC_KEY"):
        SigningSettings().public_key(tmp_path / "elsewhere")


def test_keys_init_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--workspace", str(tmp_path / "ws"), "keys", "init"]) == 0
    out = capsys.readouterr().out
    assert f"key id            {key_id(tmp_path / 'ws' / 'keys' / 'signing.pub')}" in out
    assert "BEGIN" not in out  # paths and the fingerprint only, never key material
    assert main(["--workspace", str(tmp_path / "ws"), "keys", "init"]) == 2
