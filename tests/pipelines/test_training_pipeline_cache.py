"""`mlops run training --cache` as a user relies on it: unchanged inputs skip every step that can be reused,
one changed setting re-runs exactly the steps downstream of it, and deleted outputs are a miss, not a failure.

evaluate-model and promote-to-champion are never reused: they read or move the registry's current champion,
state outside their inputs (see pipelines/training/pipeline.py). The tracking store made anew, and the names of
the runs a reused step came from, are pinned in tests/cli/test_cache.py and tests/cli/console.

The changed-setting run also sets an AUC floor no model reaches, so the whole pipeline's rejection path is
shown on a run that trains anyway: its version is registered as challenger and never becomes champion.
"""

from __future__ import annotations

import shutil

import pytest

from cli.local_run import LocalRun, run_locally
from mlops.governance.audit import read_events
from mlops.tracking.store import TrackingStore
from mlops.workspace import Workspace
from pipelines.training.pipeline import training_pipeline
from tests.pipelines.shared_runs import FRESH_TRAINING_GROUP, FreshTrainingRun, training_arguments

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1800),
]  # five training runs: ~15-20 min on a loaded 2-core VM

GATE_CHAIN = {"metrics-gate", "combine-gates"}
NEVER_CACHED = {"evaluate-model", "promote-to-champion"}  # they read or move registry state
# metrics-gate reads evaluate-model's report artifact (its per-slice part), which is a new file each run.
ALWAYS_RUN = NEVER_CACHED | {"metrics-gate"}


def _ran(run: LocalRun) -> set[str]:
    return {s.name for s in run.steps if s.status == "finished"}


def _alias_moves(workspace: Workspace) -> int:
    return sum(e.action == "alias.moved" for e in read_events(tracking_uri=workspace.tracking_uri))


def _cached(run: LocalRun) -> set[str]:
    return {s.name for s in run.steps if s.status == "cached"}


@pytest.mark.xdist_group(FRESH_TRAINING_GROUP)
def test_cache_reuses_unchanged_steps_reruns_downstream_of_a_change_and_misses_deleted_outputs(
    fresh_training_run: FreshTrainingRun,
) -> None:
    # A run in a new workspace with an empty cache (test_training_pipeline_local.py reads what it registered).
    workspace, cache, first = fresh_training_run.workspace, fresh_training_run.cache, fresh_training_run.run
    steps = {s.name for s in first.steps}
    assert not _cached(first) and _ran(first) == steps, [(s.name, s.status) for s in first.steps]
    assert {"train-model", "register-model", "evaluate-model", "promote-to-champion"} <= steps

    moves_after_first = _alias_moves(workspace)
    assert moves_after_first >= 1
    # The first run promoted version 1, so the champion evaluate-model compares with is new: the gates
    # re-decide; training, export and registration are reused (no second version of identical inputs).
    second = run_locally(training_pipeline, training_arguments(workspace), workspace, cache_root=cache)
    assert _ran(second) == ALWAYS_RUN | GATE_CHAIN
    assert _cached(second) == steps - _ran(second)
    assert str(second.output) == str(first.output) == "1"
    assert first.run_dir is not None  # a reused step names the run whose step made its outputs
    assert {s.reused_from for s in second.steps if s.status == "cached"} == {first.run_dir.name}
    client = TrackingStore.from_uri(workspace.tracking_uri)._client
    assert [str(v.version) for v in client.search_model_versions("name='credit-default'")] == ["1"]

    # Nothing changed since: only the steps on registry state run, and the promotion moves nothing.
    third = run_locally(training_pipeline, training_arguments(workspace), workspace, cache_root=cache)
    assert _ran(third) == ALWAYS_RUN
    assert _cached(third) == steps - ALWAYS_RUN
    assert _alias_moves(workspace) == moves_after_first  # version 1 was champion already: no move recorded

    # One training setting changed: exactly the steps downstream of it run; the data steps are reused.
    # The run also sets an AUC floor no model reaches (metrics-gate runs every time, so the cache is the same).
    faster = run_locally(
        training_pipeline,
        training_arguments(workspace, **{"train.learning_rate": 0.002, "gate.auc_floor": 0.999}),
        workspace,
        cache_root=cache,
    )
    assert _cached(faster) == {"prepare-data", "validate-data"}, [(s.name, s.status) for s in faster.steps]
    assert {"fixed-train-config", "train-model", "export-onnx-model", "register-model"} <= _ran(faster)
    # Its new version failed the gates: registered as challenger, never champion; version 1 stays champion.
    rejected = client.get_model_version("credit-default", str(faster.output))
    assert str(rejected.version) != str(first.output)
    assert rejected.aliases == ["challenger"]
    assert rejected.tags["mlops.decision"] == "reject"
    assert "metrics gate: test_auc" in rejected.tags["mlops.reason"]
    assert "below the floor 0.9990" in rejected.tags["mlops.reason"]
    assert "promote-to-champion" not in _ran(faster)
    assert str(client.get_model_version_by_alias("credit-default", "champion").version) == str(first.output)

    # The outputs a cache entry points at were deleted: train-model and what consumes its outputs run
    # again instead of failing on a missing file; the steps before it are still reused.
    shutil.rmtree(first.run_dir / "train-model")
    after_delete = run_locally(training_pipeline, training_arguments(workspace), workspace, cache_root=cache)
    assert _cached(after_delete) == {"prepare-data", "validate-data", "fixed-train-config"}
    assert {"train-model", "export-onnx-model", "register-model", "validate-model"} <= _ran(after_delete)
