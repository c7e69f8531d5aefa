"""The light registry reads of a SQLite store answer what MLflow answers, or nothing (and MLflow is asked).

The store is a real one, written by MLflow's own client (a run with artifacts, two versions, aliases, tags,
one version deleted); every answer of the reader is compared with MLflow's answer to the same question.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from mlops.tracking.sqlite_registry import SqliteRegistryReader, reader_for
from mlops.tracking.store import TrackingStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A store with model ``m``: version 1 (alias ``champion``), version 2 (alias ``challenger``), version 3
    deleted; a run whose artifacts hold ``model/model.onnx`` and ``signature/model.sig``."""
    from mlflow.tracking import MlflowClient

    root = tmp_path_factory.mktemp("registry")
    db = root / "mlflow.db"
    uri = f"sqlite:///{db}"
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    experiment = client.create_experiment("e", artifact_location=(root / "artifacts").as_uri())
    run = client.create_run(experiment)
    files = root / "files"
    (files / "model").mkdir(parents=True)
    (files / "model" / "model.onnx").write_bytes(b"onnx bytes")
    (files / "model" / "MLmodel").write_text("flavors: {}\n")
    (files / "signature").mkdir()
    (files / "signature" / "model.sig").write_text("{}")
    client.log_artifacts(run.info.run_id, str(files / "model"), "model")
    client.log_artifacts(run.info.run_id, str(files / "signature"), "signature")
    client.create_registered_model("m")
    source = f"{run.info.artifact_uri}/model"
    for number in (1, 2, 3):
        client.create_model_version(
            "m", source, run_id=run.info.run_id, tags={"mlops.n": str(number), "e": ""}
        )
    client.set_registered_model_alias("m", "champion", "1")
    client.set_registered_model_alias("m", "challenger", "2")
    client.set_registered_model_alias("m", "also", "2")
    client.delete_model_version("m", "3")
    return {"uri": uri, "db": str(db), "run_id": run.info.run_id, "root": str(root)}


def test_each_read_is_the_one_mlflow_answers(registry: dict[str, str]) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=registry["uri"], registry_uri=registry["uri"])
    reader = SqliteRegistryReader(Path(registry["db"]))
    for alias in ("champion", "challenger", "also"):
        theirs = client.get_model_version_by_alias("m", alias)
        ours = reader.version_by_alias("m", alias)
        assert ours is not None, alias
        assert (ours.version, ours.tags, ours.aliases, ours.run_id) == (
            str(theirs.version),
            dict(theirs.tags),
            sorted(theirs.aliases),
            theirs.run_id,
        ), alias
    for version in ("1", "2"):
        assert reader.download_uri("m", version) == client.get_model_version_download_uri("m", version)
    assert reader.run_artifact_uri(registry["run_id"]) == client.get_run(registry["run_id"]).info.artifact_uri


def test_what_it_does_not_find_is_left_to_mlflow(registry: dict[str, str], tmp_path: Path) -> None:
    reader = SqliteRegistryReader(Path(registry["db"]))
    assert reader.version("m", "3") is None  # deleted: MLflow's reads skip it too
    assert reader.download_uri("m", "3") is None
    assert reader.version("m", "4") is None
    assert reader.version("m", "one") is None
    assert reader.version("other", "1") is None
    assert reader.version_by_alias("m", "nightly") is None
    assert reader.version_by_alias("m", "latest") is None  # MLflow answers it with the highest version
    assert reader.version_by_alias("m", "Latest") is None
    assert reader.run_artifact_uri("0" * 32) is None
    assert SqliteRegistryReader(tmp_path / "absent.db").version("m", "1") is None
    text = tmp_path / "notes.db"
    text.write_text("not a database, " * 100)
    assert SqliteRegistryReader(text).version_by_alias("m", "champion") is None


def test_a_row_of_another_workspace_or_a_layout_it_does_not_know_is_not_read(
    registry: dict[str, str], tmp_path: Path
) -> None:
    copy = tmp_path / "copy.db"
    copy.write_bytes(Path(registry["db"]).read_bytes())
    with sqlite3.connect(copy) as db:
        db.execute("UPDATE registered_model_aliases SET workspace = 'team-b' WHERE alias = 'champion'")
    assert SqliteRegistryReader(copy).version_by_alias("m", "champion") is None
    assert SqliteRegistryReader(copy).version_by_alias("m", "challenger") is not None
    with sqlite3.connect(copy) as db:
        db.execute("ALTER TABLE model_versions DROP COLUMN storage_location")
    assert SqliteRegistryReader(copy).version("m", "1") is None


def test_only_a_sqlite_file_that_is_its_own_registry_gets_a_reader(registry: dict[str, str]) -> None:
    uri = registry["uri"]
    assert reader_for(uri, uri) == SqliteRegistryReader(Path(registry["db"]))
    assert reader_for(uri, "sqlite:////elsewhere/registry.db") is None
    assert reader_for("sqlite:////no/such/mlflow.db", "sqlite:////no/such/mlflow.db") is None
    assert reader_for("http://localhost:5000", "http://localhost:5000") is None
    served = TrackingStore.from_uri(uri, served_url="http://127.0.0.1:1")
    assert served.sqlite_reads is None


def test_the_store_reads_and_downloads_a_version_without_importing_mlflow(
    registry: dict[str, str], tmp_path: Path
) -> None:
    """In a fresh process: alias, tags, download URI and both downloads, then what MLflow gives for each."""
    code = """
import json, sys
from pathlib import Path
from mlops.tracking.store import TrackingStore
uri, out = sys.argv[1], Path(sys.argv[2])
store = TrackingStore.from_uri(uri)
found = store.version_by_alias("m", "challenger")
answers = {
    "version": found.version, "tags": found.tags, "aliases": found.aliases,
    "champion": store.alias_version("m", "champion"),
    "tags_1": store.version_tags("m", "1"),
    "aliases_and_tags_2": list(store.version_aliases_and_tags("m", "2")),
    "download_uri": store.version_download_uri("m", "1"),
    "model": str(store.download(store.version_download_uri("m", "1"), out / "light-model")),
    "signature": str(store.download("runs:/%s/signature/model.sig" % sys.argv[3], out / "light-sig")),
    "mlflow_imported": "mlflow" in sys.modules,
}
print(json.dumps(answers))
"""
    light = json.loads(
        subprocess.run(
            [sys.executable, "-c", code, registry["uri"], str(tmp_path), registry["run_id"]],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        ).stdout
    )
    assert light.pop("mlflow_imported") is False
    import mlflow
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=registry["uri"], registry_uri=registry["uri"])
    theirs = client.get_model_version_by_alias("m", "challenger")
    two = client.get_model_version("m", "2")
    model = mlflow.artifacts.download_artifacts(
        artifact_uri=client.get_model_version_download_uri("m", "1"),
        dst_path=str(tmp_path / "mlflow-model"),
        tracking_uri=registry["uri"],
    )
    signature = mlflow.artifacts.download_artifacts(
        artifact_uri=f"runs:/{registry['run_id']}/signature/model.sig",
        dst_path=str(tmp_path / "mlflow-sig"),
        tracking_uri=registry["uri"],
    )
    assert light == {
        "version": str(theirs.version),
        "tags": dict(theirs.tags),
        "aliases": sorted(theirs.aliases),
        "champion": str(client.get_model_version_by_alias("m", "champion").version),
        "tags_1": dict(client.get_model_version("m", "1").tags),
        "aliases_and_tags_2": [sorted(two.aliases), dict(two.tags)],
        "download_uri": client.get_model_version_download_uri("m", "1"),
        "model": model.replace("mlflow-model", "light-model"),
        "signature": signature.replace("mlflow-sig", "light-sig"),
    }
    assert _tree(Path(light["model"])) == _tree(Path(model))
    assert Path(light["signature"]).read_bytes() == Path(signature).read_bytes()


def test_a_version_the_reader_does_not_find_gets_mlflows_own_error(registry: dict[str, str]) -> None:
    from mlflow.exceptions import MlflowException

    store = TrackingStore.from_uri(registry["uri"])
    with pytest.raises(MlflowException, match="alias nightly not found"):
        store.version_by_alias("m", "nightly")
    with pytest.raises(MlflowException, match="Model Version .*3.* not found"):
        store.version_tags("m", "3")
    assert store.alias_version("m", "nightly") is None
    assert str(store.version_by_alias("m", "latest").version) == "2"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
