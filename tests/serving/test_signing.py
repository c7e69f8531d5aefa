"""Signed models at load: a tampered model and a model signed with another key are refused, before ONNX Runtime."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from mlops.governance.signing import SignatureError, generate_key_pair, key_id
from mlops.origin_facts import file_sha256
from mlops.vocabulary import DIGEST_TAG, SIGNATURE_URI_TAG, SIGNING_KEY_ID_TAG
from serving.model_source import RegisteredModelSource
from tests.support.serving import DemoStore, encoded, register, running_server, v2_body

pytestmark = pytest.mark.slow


def _client(store: DemoStore) -> Any:
    return store.tracking._client


def _register_with_other_key(
    store: DemoStore, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> str:
    other, _ = generate_key_pair(tmp_path / "intruder-keys")
    monkeypatch.setenv("MLOPS_SIGNING_KEY", str(other))
    try:
        return register(store, name, store.onnx_b, alias=None)
    finally:
        monkeypatch.delenv("MLOPS_SIGNING_KEY")


def test_registration_signs_with_the_workspace_key(store: DemoStore) -> None:
    tags = _client(store).get_model_version("credit-default", "1").tags
    assert tags[SIGNATURE_URI_TAG].startswith("runs:/") and tags[SIGNATURE_URI_TAG].endswith(
        "/signature/model.sig"
    )
    assert tags[SIGNING_KEY_ID_TAG] == key_id(store.workspace.root / "keys" / "signing.pub")
    assert not any("PRIVATE KEY" in value for value in tags.values())


def test_a_model_swapped_with_its_digest_tag_is_refused_by_the_signature(
    store: DemoStore, tmp_path: Path
) -> None:
    name = "swapped-model"
    register(store, name, store.onnx_a)
    uri = _client(store).get_model_version_download_uri(name, "1")
    stored = Path(uri.removeprefix("file://")) / "model.onnx"
    stored.write_bytes((store.onnx_b / "model.onnx").read_bytes())
    # Whoever swapped the file could also edit tags: the digest check alone would now pass.
    _client(store).set_model_version_tag(name, "1", DIGEST_TAG, file_sha256(stored))
    registry = RegisteredModelSource(store.workspace.tracking_uri, name, tmp_path / "cache")
    with pytest.raises(
        SignatureError, match=r"refusing to load swapped-model version 1: its signature does not verify"
    ):
        registry.fetch("1")
    assert not (tmp_path / "cache" / name / "1").exists()  # nothing unverified is left to load


def test_a_model_signed_with_another_key_is_refused(
    store: DemoStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "foreign-model"
    version = _register_with_other_key(store, name, tmp_path, monkeypatch)
    registry = RegisteredModelSource(store.workspace.tracking_uri, name, tmp_path / "cache")
    with pytest.raises(
        SignatureError, match=rf"foreign-model version {version}: its signature does not verify"
    ):
        registry.fetch(version)


def test_an_unsigned_version_is_refused_unless_signatures_are_optional(
    store: DemoStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "unsigned-model"
    register(store, name, store.onnx_a)
    _client(store).delete_model_version_tag(name, "1", SIGNATURE_URI_TAG)
    registry = RegisteredModelSource(store.workspace.tracking_uri, name, tmp_path / "cache")
    with pytest.raises(SignatureError, match=r"carries no signature.*MLOPS_SIGNING_REQUIRED=false"):
        registry.fetch("1")
    monkeypatch.setenv("MLOPS_SIGNING_REQUIRED", "false")
    assert registry.fetch("1").path.is_file()


def test_hot_reload_refuses_a_foreign_signature_and_keeps_serving(
    store: DemoStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "reload-signed"
    register(store, name, store.onnx_a)
    x = encoded(store, 2)
    with running_server(
        store, "--model-name", name, "--reload-interval-s", "0.2", "--no-request-log"
    ) as server:
        version = _register_with_other_key(store, name, tmp_path, monkeypatch)
        _client(store).set_registered_model_alias(name, "champion", version)
        deadline = time.monotonic() + 30
        while f"{name} version {version}: its signature does not verify" not in server.log():
            assert time.monotonic() < deadline, server.log()[-2000:]
            time.sleep(0.2)
        response = httpx.post(f"{server.url}/v2/models/{name}/infer", json=v2_body(x))
        assert response.status_code == 200 and response.json()["model_version"] == "1"
