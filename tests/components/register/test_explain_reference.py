"""The reference rows a version is registered with: raw features and the subject key, the schema file's
reason texts, a stable choice of rows, and none at all when asked for 0."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from components.register.version_registration import register_onnx_model
from mlops.data.features import FeatureSpec
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.model.row_attribution import REFERENCE_FILE, read_reference
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import EXPLAIN_REFERENCE_TAG, Lineage
from training.config import ModelConfig
from training.model import TabularNet
from training.onnx_export import export_onnx

LINEAGE = Lineage("run-1", "", "d" * 64, "1.0.0", "0.1.0", "train-run")


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    data = generate(SampleDataConfig(rows=300, seed=5))
    data["customer_id"] = [f"c{i:04d}" for i in range(len(data))]
    return data


@pytest.fixture(scope="module")
def onnx_dir(frame: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    model = TabularNet(FeatureSpec.fit(frame, SAMPLE_SCHEMA), ModelConfig(hidden_units=(8,))).eval()
    directory = tmp_path_factory.mktemp("onnx")
    export_onnx(model, directory / "model.onnx")
    return directory


def stored(
    tracking: TrackingStore, name: str, version: str, tmp: Path
) -> tuple[pd.DataFrame, dict[str, str]]:
    uri = tracking.version_tags(name, version)[EXPLAIN_REFERENCE_TAG]
    assert uri.endswith(f"/{REFERENCE_FILE}")
    return read_reference(tracking.download(uri, tmp).read_bytes(), uri)


def test_the_version_stores_reference_rows_with_the_subject_key_and_the_reason_texts(
    onnx_dir: Path, frame: pd.DataFrame, tracking: TrackingStore, tmp_path: Path
) -> None:
    texts = {"income": "Income too low"}
    first = register_onnx_model(
        onnx_dir,
        frame,
        "explained",
        LINEAGE,
        tracking,
        reasons=texts,
        reference_rows=20,
        subject_key="customer_id",
    )
    rows, stored_texts = stored(tracking, "explained", first.version, tmp_path / "a")
    assert list(rows.columns) == [
        *SAMPLE_SCHEMA.numeric_features,
        *SAMPLE_SCHEMA.categorical_features,
        "customer_id",
    ]
    assert len(rows) == 20 and stored_texts == texts
    assert SAMPLE_SCHEMA.label not in rows.columns  # only what the model reads, and whose row it is
    # a stable choice: a re-registration of the same rows in another order keeps the same people
    second = register_onnx_model(
        onnx_dir,
        frame.iloc[::-1],
        "explained",
        LINEAGE,
        tracking,
        reference_rows=20,
        subject_key="customer_id",
    )
    again, _ = stored(tracking, "explained", second.version, tmp_path / "b")
    assert sorted(again["customer_id"]) == sorted(rows["customer_id"])


def test_zero_rows_store_nothing_and_reasons_must_name_features(
    onnx_dir: Path, frame: pd.DataFrame, tracking: TrackingStore
) -> None:
    none = register_onnx_model(onnx_dir, frame, "unexplained", LINEAGE, tracking, reference_rows=0)
    assert EXPLAIN_REFERENCE_TAG not in tracking.version_tags("unexplained", none.version)
    with pytest.raises(ValueError, match=r"reason texts name \['salary'\]"):
        register_onnx_model(onnx_dir, frame, "unexplained", LINEAGE, tracking, reasons={"salary": "x"})
