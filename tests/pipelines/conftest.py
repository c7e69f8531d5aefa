"""Shared pipeline runs (see :mod:`tests.pipelines.shared_runs`): made on first use, once per pytest run."""

from __future__ import annotations

import pytest

from cli.local_run import run_locally
from cli.main import main
from mlops.tracking.store import TrackingStore
from mlops.workspace import Workspace
from pipelines.training.pipeline import training_pipeline
from tests.pipelines.shared_runs import (
    CENSUS_FAST,
    CensusTrained,
    FreshTrainingRun,
    census,
    declare_census,
    training_arguments,
)


@pytest.fixture(scope="package")
def fresh_training_run(tmp_path_factory: pytest.TempPathFactory) -> FreshTrainingRun:
    root = tmp_path_factory.mktemp("fresh-training-run")
    workspace, cache = Workspace(root / "ws"), root / "cache"
    run = run_locally(training_pipeline, training_arguments(workspace), workspace, cache_root=cache)
    version = TrackingStore.from_uri(workspace.tracking_uri).model_version("credit-default", str(run.output))
    return FreshTrainingRun(workspace, cache, run, version)


@pytest.fixture(scope="package")
def census_trained(tmp_path_factory: pytest.TempPathFactory) -> CensusTrained:
    root = tmp_path_factory.mktemp("census-workspace")
    data, workspace = root / "census.csv", root / "ws"
    census().to_csv(data, index=False)
    schema = declare_census(data, root / "decl", workspace)
    code = main(
        ["--workspace", str(workspace), "run", "training", "--data", str(data), "--schema", str(schema),
         *CENSUS_FAST]
    )  # fmt: skip
    (run_dir,) = workspace.glob("pipeline-runs/training-*")  # the workspace's first run
    return CensusTrained(data, schema, workspace, code, run_dir)
