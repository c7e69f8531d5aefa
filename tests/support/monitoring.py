"""A registered model with a reference profile, and request logs written by the server's own writer.

Logs are written with :class:`serving.request_log.RequestLogger` (the code ``mlops serve``
runs), so the monitor reads exactly the files a server leaves, with timestamps chosen by
the test instead of the clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from components.register.version_registration import register_onnx_model
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from mlops.model.onnx_model import OnnxScorer
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import CHAMPION, Lineage
from mlops.workspace import Workspace
from serving.request_log import RequestLogger
from serving.request_log_blocks import Block

MODEL = "credit-default"


@dataclass(frozen=True)
class Monitored:
    workspace: Workspace
    onnx_dir: Path
    version: str

    @property
    def log_root(self) -> str:
        return str(self.workspace.root / "request-logs")

    @cached_property
    def store(self) -> TrackingStore:
        """The workspace's registry, through the seam (one client for every check of a test module)."""
        return TrackingStore.from_uri(self.workspace.tracking_uri, experiment="monitoring")

    @property
    def scorer(self) -> OnnxScorer:
        return OnnxScorer.load(self.onnx_dir / "model.onnx")


def monitored_model(base: Path, name: str = MODEL) -> Monitored:
    """A small TabularNet trained on sample data, registered with its profile and made champion."""
    from tests.support.model_factory import fit_tabular_net
    from training.onnx_export import export_onnx

    workspace = Workspace(base / "workspace").create()
    train = generate(SampleDataConfig(rows=2000, seed=21))
    test = generate(SampleDataConfig(rows=1500, seed=22))
    onnx_dir = base / "onnx"
    onnx_dir.mkdir(parents=True, exist_ok=True)
    export_onnx(fit_tabular_net(train, steps=150), onnx_dir / "model.onnx")
    store = TrackingStore(workspace.tracking_uri, "training", "tests", workspace.artifact_root)
    lineage = Lineage("tests", "", "digest", "1", "0.1.0", "run")
    registered = register_onnx_model(onnx_dir, test, name, lineage, store, label=SAMPLE_SCHEMA.label)
    store.point_alias(name, CHAMPION, registered.version)
    return Monitored(workspace, onnx_dir, registered.version)


def traffic(rows: int, seed: int, drift: float = 0.0) -> pd.DataFrame:
    return generate(SampleDataConfig(rows=rows, seed=seed, drift=drift))


def write_log(
    model: Monitored,
    frame: pd.DataFrame,
    at: datetime,
    name: str = MODEL,
    version: str | None = None,
    request_ids: list[str] | None = None,
) -> list[str]:
    """Log ``frame`` as one-row requests answered by ``version`` at time ``at``; return the files written."""
    scorer = model.scorer
    x = scorer.spec.encode(frame)
    y = scorer.predict_encoded(x)
    block = Block(version or model.version, scorer.spec, len(x))
    at_us = int(at.timestamp() * 1_000_000)
    ids = request_ids or [f"req-{i}" for i in range(len(x))]
    for i in range(len(x)):
        block.add(x[i : i + 1], y[i : i + 1], at_us, ids[i])
    return RequestLogger(model.log_root, name, 1.0, 60, 10**9).write([block])


def scores_of(model: Monitored, frame: pd.DataFrame) -> np.ndarray:
    scorer = model.scorer
    return scorer.predict_encoded(scorer.spec.encode(frame))
