"""The server's model source, in-process: resolving an alias, fetching and verifying a version, the cache,
and every refusal whole, with a stand-in tracking store (its registry state and artifact store).

The keys, the signature bundles and the digests are real (``model_signing``, SHA-256); only MLflow is
stood in for, so a test runs in well under a second (the slow tests in ``test_signing.py`` and
``test_cached_model_trust.py`` run the same paths against a real store with trained models).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mlflow.exceptions import MlflowException

from mlops.governance.signing import SignatureError, generate_key_pair, sign_directory
from mlops.origin_facts import file_sha256
from mlops.storage.s3 import describe_error
from serving.model_source import DigestMismatchError, ModelArtifact, RegisteredModelSource, RegistryError

MODEL_URI = "s3://bucket/1/models/m-3/artifacts"
SIG_URI = "runs:/abc/signature/model.sig"


@pytest.fixture(autouse=True)
def _no_signing_environment(monkeypatch) -> None:
    for name in ("MLOPS_SIGNING_KEY", "MLOPS_SIGNING_PUBLIC_KEY", "MLOPS_SIGNING_REQUIRED"):
        monkeypatch.delenv(name, raising=False)


class RegistryState:
    """What the stand-in store's registry holds for one model ``m`` (its aliases, version and tags), and the
    errors its reads raise; the store answers its methods from it, as TrackingStore answers from MLflow."""

    def __init__(self) -> None:
        self.tags: dict[str, str] = {}
        self.alias_error: Exception | None = None
        self.version_error: Exception | None = None
        self.version = 3
        self.aliases: list[str] = []

    def get_model_version_by_alias(self, name: str, alias: str) -> Any:
        assert name == "m", name
        self.aliases.append(alias)
        if self.alias_error is not None:
            raise self.alias_error
        return SimpleNamespace(version=self.version)

    def get_model_version(self, name: str, version: str) -> Any:
        assert (name, version) == ("m", "3"), (name, version)
        if self.version_error is not None:
            raise self.version_error
        return SimpleNamespace(tags=dict(self.tags))

    def get_model_version_download_uri(self, name: str, version: str) -> str:
        assert (name, version) == ("m", "3"), (name, version)
        return MODEL_URI


class Store:
    """A stand-in ``TrackingStore``: its registry reads answer from ``state``; ``download`` copies what
    ``sources`` holds for a URI into ``dst_path``."""

    def __init__(self, tracking_uri: str) -> None:
        self.tracking_uri = tracking_uri
        self.state = RegistryState()
        self.sources: dict[str, Path] = {}
        self.downloads: list[tuple[str, Path]] = []
        self.error: Exception | None = None
        self.failing = ""

    def version_by_alias(self, name: str, alias: str) -> Any:
        return self.state.get_model_version_by_alias(name, alias)

    def version_tags(self, name: str, version: str) -> dict[str, str]:
        return dict(self.state.get_model_version(name, version).tags)

    def version_download_uri(self, name: str, version: str) -> str:
        return self.state.get_model_version_download_uri(name, version)

    def download(self, artifact_uri: str, dst_path: Path) -> Path:
        self.downloads.append((artifact_uri, Path(dst_path)))
        if self.error is not None and artifact_uri.startswith(self.failing):
            raise self.error
        if not Path(dst_path).is_dir():  # as MLflow's artifact repositories refuse it
            raise MlflowException(f"The destination path for downloaded artifacts does not exist! {dst_path}")
        source = self.sources[artifact_uri]
        target = Path(dst_path) / source.name
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy(source, target)
        return target


class Setup:
    def __init__(self, tmp_path: Path) -> None:
        self.workspace = tmp_path / "ws"
        self.private, self.public = generate_key_pair(self.workspace / "keys")
        self.model = tmp_path / "stored" / "artifacts"
        self.model.mkdir(parents=True)
        (self.model / "model.onnx").write_bytes(b"\x08\x07onnx-bytes" * 50)
        (self.model / "MLmodel").write_text("flavors: {onnx: {}}\n")
        self.bundle = tmp_path / "bundle" / "model.sig"
        self.bundle.parent.mkdir()
        sign_directory(self.model, self.bundle, self.private)
        self.cache = tmp_path / "var" / "cache"  # its parent does not exist yet either
        self.registry = RegisteredModelSource(f"sqlite:///{self.workspace}/mlflow.db", "m", self.cache)
        self.store = Store(self.registry.tracking_uri)
        self.registry.store = self.store  # type: ignore[assignment]
        self.store.sources = {MODEL_URI: self.model, SIG_URI: self.bundle}
        self.digest = file_sha256(self.model / "model.onnx")
        self.state.tags = {"mlops.onnx_sha256": self.digest, "mlops.signature_uri": SIG_URI, "other": "x"}

    @property
    def state(self) -> RegistryState:
        return self.store.state

    def downloaded(self) -> list[str]:
        return [uri for uri, _ in self.store.downloads]


@pytest.fixture
def setup(tmp_path) -> Setup:
    return Setup(tmp_path)


# --- version_for ------------------------------------------------------------------------------------


def test_the_alias_resolves_to_its_version_as_a_string(setup) -> None:
    assert setup.registry.version_for("challenger") == "3"
    assert setup.state.aliases == ["challenger"]
    assert setup.registry.store is setup.store


def test_a_store_is_used_as_it_is_and_a_uri_makes_one(tmp_path) -> None:
    from mlops.tracking.store import TrackingStore

    store = TrackingStore(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db", experiment="serving")
    registry = RegisteredModelSource(store, "m", tmp_path / "cache")
    assert registry.store is store and registry.tracking_uri == store.tracking_uri
    by_uri = RegisteredModelSource(f"sqlite:///{tmp_path}/mlflow.db", "m", str(tmp_path / "cache"))  # type: ignore[arg-type]
    assert (
        isinstance(by_uri.store, TrackingStore) and by_uri.tracking_uri == f"sqlite:///{tmp_path}/mlflow.db"
    )
    assert by_uri.model_name == "m" and by_uri.cache_dir == tmp_path / "cache"


@pytest.mark.parametrize(
    "cause", ["Max retries exceeded with url", "Connection refused", "Failed to establish"]
)
def test_an_unreachable_registry_is_named_with_its_password_hidden(tmp_path, cause) -> None:
    registry = RegisteredModelSource("http://ops:s3cret@mlflow.internal:5000", "m", tmp_path / "cache")
    store = Store(registry.tracking_uri)
    registry.store = store  # type: ignore[assignment]
    store.state.alias_error = MlflowException(
        f"API request failed: {cause} (host mlflow.internal)\ntraceback …"
    )
    with pytest.raises(RegistryError) as caught:
        registry.version_for("champion")
    assert str(caught.value) == (
        f"cannot reach the MLflow registry at http://ops:***@mlflow.internal:5000: API request failed: {cause} "
        "(host mlflow.internal); start the server or fix --tracking-uri / MLFLOW_TRACKING_URI"
    )
    assert caught.value.__cause__ is store.state.alias_error


def test_a_champion_that_points_nowhere_says_how_to_serve_the_latest_version(setup) -> None:
    setup.state.alias_error = MlflowException("Registered model alias champion not found.\n  at …")
    with pytest.raises(RegistryError) as caught:
        setup.registry.version_for("champion")
    assert str(caught.value) == (
        f"models:/m@champion does not resolve in sqlite:///{setup.workspace}/mlflow.db: Registered model alias "
        "champion not found.. No version of 'm' has passed the gates yet (mlops run training promotes one). To "
        "serve the latest trained version anyway: mlops serve --model-name m --alias challenger"
    )


def test_another_alias_that_points_nowhere_says_how_to_point_it_or_serve_the_champion(setup) -> None:
    setup.state.alias_error = MlflowException("x" * 450)
    with pytest.raises(RegistryError) as caught:
        setup.registry.version_for("shadow")
    assert str(caught.value) == (
        f"models:/m@shadow does not resolve in sqlite:///{setup.workspace}/mlflow.db: {'x' * 400}. Point "
        "'shadow' at a version first (mlops run training moves 'challenger' and 'champion'), or serve the "
        "champion: mlops serve --model-name m --alias champion"
    )


def test_a_blank_registry_message_is_kept_as_it_is(setup) -> None:
    setup.state.alias_error = MlflowException("  \n ")
    with pytest.raises(
        RegistryError, match=r"^models:/m@challenger does not resolve in .*mlflow\.db:   \n \. "
    ):
        setup.registry.version_for("challenger")


# --- fetch --------------------------------------------------------------------------------------------


def test_a_signed_version_is_downloaded_verified_and_cached(setup) -> None:
    artifact = setup.registry.fetch("3")
    cached = setup.cache / "m" / "3"
    assert artifact == ModelArtifact("m", "3", cached / "model.onnx", setup.digest, setup.state.tags)
    assert sorted(p.name for p in cached.iterdir()) == ["MLmodel", "model.onnx"]
    assert sorted(p.name for p in setup.cache.iterdir()) == ["m"]  # the staging directory is gone
    [(model_uri, model_dst), (sig_uri, sig_dst)] = setup.store.downloads
    assert (model_uri, model_dst.name, sig_uri, sig_dst.name) == (MODEL_URI, "model", SIG_URI, "signature")
    assert model_dst.parent == sig_dst.parent and model_dst.parent.parent == setup.cache
    assert model_dst.parent.name.startswith(".m-3-")


def test_a_verified_cached_copy_is_reused_after_checking_the_current_signature(setup) -> None:
    setup.registry.fetch("3")
    setup.store.downloads.clear()
    artifact = setup.registry.fetch("3")
    assert artifact == ModelArtifact(
        "m", "3", setup.cache / "m" / "3" / "model.onnx", setup.digest, setup.state.tags
    )
    [(uri, dst)] = setup.store.downloads  # only the signature, into a temporary directory in the cache
    assert uri == SIG_URI and dst.parent == setup.cache and dst.name.startswith(".m-3-sig-")
    assert sorted(p.name for p in setup.cache.iterdir()) == ["m"]


def test_a_cached_copy_edited_on_disk_is_downloaded_again(setup) -> None:
    setup.registry.fetch("3")
    (setup.cache / "m" / "3" / "model.onnx").write_bytes(b"edited")
    (setup.cache / "m" / "3" / "left-over").write_text("x")
    setup.store.downloads.clear()
    artifact = setup.registry.fetch("3")
    assert setup.downloaded() == [MODEL_URI, SIG_URI]
    assert file_sha256(artifact.path) == setup.digest
    assert sorted(p.name for p in (setup.cache / "m" / "3").iterdir()) == ["MLmodel", "model.onnx"]


def test_a_cached_copy_whose_signature_no_longer_verifies_goes_through_the_full_fetch(
    setup, tmp_path
) -> None:
    setup.registry.fetch("3")
    intruder, _ = generate_key_pair(tmp_path / "intruder")
    forged = tmp_path / "forged" / "model.sig"
    forged.parent.mkdir()
    sign_directory(setup.model, forged, intruder)
    setup.store.sources[SIG_URI] = forged
    setup.store.downloads.clear()
    with pytest.raises(SignatureError, match=r"^refusing to load m version 3: its signature does not verify"):
        setup.registry.fetch("3")
    assert setup.downloaded() == [SIG_URI, MODEL_URI, SIG_URI]
    assert sorted(p.name for p in setup.cache.iterdir()) == ["m"]


def test_a_registry_without_the_version_is_refused(setup) -> None:
    setup.state.version_error = MlflowException("RESOURCE_DOES_NOT_EXIST: version 3")
    with pytest.raises(RegistryError) as caught:
        setup.registry.fetch("3")
    assert str(caught.value) == (
        f"model 'm' has no version '3' in sqlite:///{setup.workspace}/mlflow.db: RESOURCE_DOES_NOT_EXIST: version 3"
    )


def test_the_password_in_the_tracking_uri_is_hidden_when_a_version_is_missing(tmp_path) -> None:
    registry = RegisteredModelSource("http://ops:s3cret@mlflow.internal:5000", "m", tmp_path / "cache")
    store = Store(registry.tracking_uri)
    registry.store = store  # type: ignore[assignment]
    store.state.version_error = MlflowException("RESOURCE_DOES_NOT_EXIST")
    with pytest.raises(RegistryError) as caught:
        registry.fetch("3")
    assert "s3cret" not in str(caught.value)
    assert "in http://ops:***@mlflow.internal:5000: " in str(caught.value)


@pytest.mark.parametrize("tags", [{}, {"mlops.onnx_sha256": ""}])
def test_a_version_without_a_digest_is_refused_before_anything_is_downloaded(setup, tags) -> None:
    setup.state.tags = {**tags, "mlops.signature_uri": SIG_URI}
    with pytest.raises(RegistryError) as caught:
        setup.registry.fetch("3")
    assert str(caught.value) == (
        "m version 3 has no mlops.onnx_sha256 tag, so its file cannot be verified; register models with "
        "components.register (mlops run training) which records the digest"
    )
    assert setup.store.downloads == [] and not setup.cache.exists()


def test_an_unsigned_version_is_refused_before_anything_is_downloaded(setup) -> None:
    del setup.state.tags["mlops.signature_uri"]
    with pytest.raises(SignatureError, match="refusing to load m version 3: it carries no signature"):
        setup.registry.fetch("3")
    assert setup.store.downloads == []


def test_an_unsigned_version_is_served_on_its_digest_when_signatures_are_optional(setup, monkeypatch) -> None:
    monkeypatch.setenv("MLOPS_SIGNING_REQUIRED", "false")
    del setup.state.tags["mlops.signature_uri"]
    assert setup.registry.fetch("3").sha256 == setup.digest
    assert setup.registry.fetch("3").path.is_file()
    assert setup.downloaded() == [MODEL_URI]  # the second fetch used the cache without a download


def test_a_changed_file_is_refused_by_its_digest_and_nothing_is_cached(setup) -> None:
    (setup.model / "model.onnx").write_bytes(b"swapped")
    actual = file_sha256(setup.model / "model.onnx")
    with pytest.raises(DigestMismatchError) as caught:
        setup.registry.fetch("3")
    assert str(caught.value) == (
        f"refusing to load m version 3: model.onnx has SHA-256 {actual} but the registry recorded {setup.digest} "
        "at registration. The artifact was changed after it passed the gates; re-register the model instead of "
        "editing its files."
    )
    assert setup.downloaded() == [MODEL_URI]
    assert [p.name for p in setup.cache.iterdir()] == []


def test_a_version_without_an_onnx_file_is_refused_listing_what_it_has(setup) -> None:
    (setup.model / "model.onnx").unlink()
    (setup.model / "conda.yaml").write_text("{}")
    with pytest.raises(RegistryError) as caught:
        setup.registry.fetch("3")
    assert str(caught.value) == (
        "m version 3 has no model.onnx in its artifacts (['MLmodel', 'conda.yaml']); it was not logged with "
        "mlflow.onnx"
    )
    assert [p.name for p in setup.cache.iterdir()] == []


def test_a_registry_failure_while_downloading_is_one_line(setup) -> None:
    setup.store.error = MlflowException("artifact store unavailable\nTraceback …")
    with pytest.raises(RegistryError) as caught:
        setup.registry.fetch("3")
    assert str(caught.value) == f"cannot download m version 3 from {MODEL_URI}: artifact store unavailable"
    assert [p.name for p in setup.cache.iterdir()] == []


def test_a_store_failure_while_downloading_says_what_the_store_said(setup) -> None:
    error = ConnectionResetError(104, "Connection reset by peer")
    setup.store.error = error
    with pytest.raises(RegistryError) as caught:
        setup.registry.fetch("3")
    assert str(caught.value) == f"cannot download m version 3: {describe_error(error, 'download', MODEL_URI)}"
    assert caught.value.__cause__ is error


def test_a_failure_downloading_the_signature_names_the_version(setup) -> None:
    setup.store.error = MlflowException("no such artifact")
    setup.store.failing = "runs:/"
    with pytest.raises(RegistryError) as caught:
        setup.registry.fetch("3")
    assert str(caught.value) == f"cannot download m version 3 from {SIG_URI}: no such artifact"
    setup.store.error = None
    setup.registry.fetch("3")
    setup.store.error = MlflowException("no such artifact")
    with pytest.raises(RegistryError) as caught:  # checking the cached copy's signature
        setup.registry.fetch("3")
    assert str(caught.value) == f"cannot download m version 3 from {SIG_URI}: no such artifact"
