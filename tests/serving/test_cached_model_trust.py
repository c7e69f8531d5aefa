"""Security property: a cached model is re-checked at every load, so a version whose signature or digest
changed after it was cached is refused, and a cache edited on disk is never served."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlops.governance.signing import SignatureError, generate_key_pair, sign_directory
from mlops.origin_facts import file_sha256
from mlops.vocabulary import DIGEST_TAG, SIGNATURE_URI_TAG
from serving.model_source import RegisteredModelSource
from tests.support.serving import DemoStore, register

pytestmark = pytest.mark.slow


def _cached(store: DemoStore, name: str, tmp_path: Path) -> tuple[RegisteredModelSource, Path]:
    register(store, name, store.onnx_a, alias=None)
    registry = RegisteredModelSource(store.workspace.tracking_uri, name, tmp_path / "cache")
    first = registry.fetch("1")
    assert first.path.is_file() and first.path.parent == tmp_path / "cache" / name / "1"
    return registry, first.path


def test_cached_model_is_refused_after_the_trusted_key_changes(
    store: DemoStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry, _ = _cached(store, "cache-rotated-key", tmp_path)
    _, other_public = generate_key_pair(tmp_path / "rotated")
    monkeypatch.setenv("MLOPS_SIGNING_PUBLIC_KEY", str(other_public))  # the old key was revoked
    with pytest.raises(SignatureError, match=r"cache-rotated-key version 1: its signature does not verify"):
        registry.fetch("1")


def test_cached_model_is_refused_after_its_signature_is_replaced_in_the_registry(
    store: DemoStore, tmp_path: Path
) -> None:
    name = "cache-resigned"
    registry, cached = _cached(store, name, tmp_path)
    # Someone with registry write access re-signs the version with their own key and repoints the tag.
    intruder, _ = generate_key_pair(tmp_path / "intruder")
    bundle = tmp_path / "forged" / "model.sig"
    bundle.parent.mkdir()
    sign_directory(cached.parent, bundle, intruder)
    client = store.tracking._client
    run_id = client.get_model_version(name, "1").run_id
    client.log_artifact(run_id, str(bundle), artifact_path="forged")
    client.set_model_version_tag(name, "1", SIGNATURE_URI_TAG, f"runs:/{run_id}/forged/model.sig")
    with pytest.raises(SignatureError, match=rf"{name} version 1: its signature does not verify"):
        registry.fetch("1")


def test_cached_model_is_refused_after_its_digest_and_file_change_in_the_registry(
    store: DemoStore, tmp_path: Path
) -> None:
    name = "cache-swapped"
    registry, _ = _cached(store, name, tmp_path)
    stored = Path(store.tracking.version_download_uri(name, "1").removeprefix("file://"))
    (stored / "model.onnx").write_bytes((store.onnx_b / "model.onnx").read_bytes())
    store.tracking._client.set_model_version_tag(name, "1", DIGEST_TAG, file_sha256(stored / "model.onnx"))
    with pytest.raises(SignatureError, match=rf"{name} version 1: its signature does not verify"):
        registry.fetch("1")


def test_a_cache_edited_on_disk_is_never_served(store: DemoStore, tmp_path: Path) -> None:
    registry, cached = _cached(store, "cache-edited", tmp_path)
    expected = file_sha256(cached)
    cached.write_bytes((store.onnx_b / "model.onnx").read_bytes())  # same size class, other weights
    again = registry.fetch("1")
    assert file_sha256(again.path) == expected  # fetched again from the registry, the edit is gone
