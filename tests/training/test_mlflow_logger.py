"""The rank-side logger: it travels pickled (to spawned ranks and, inside the staged job, to the pods)
and logs through the task's tracking store, with no MLflow state of the process it lands in."""

from __future__ import annotations

import pickle
from pathlib import Path

from mlops.tracking.store import TrackingStore, fluent_state
from training.metrics_logger import MlflowLogger


def test_a_pickled_logger_logs_into_its_run_through_the_store(tmp_path: Path) -> None:
    store = TrackingStore(f"sqlite:///{tmp_path}/mlflow.db", "train", "kfp-1", (tmp_path / "a").as_uri())
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "weights.txt").write_text("w")
    with store.task_run("train") as run:
        before = fluent_state()
        copy = pickle.loads(pickle.dumps(MlflowLogger(run.info.run_id, store)))
        assert copy.store == store and "_client" not in copy.store.__dict__  # settings travel, not a client
        copy.log_params({"learning_rate": 0.01})
        copy.log_metrics({"val_auc": 0.75}, step=2)
        copy.log_artifacts(tmp_path / "model", "model")
        assert fluent_state() == before  # the logger never touches the process-wide state
    logged = store.get_run(run.info.run_id)
    assert logged.data.params["learning_rate"] == "0.01"
    assert [(m.step, m.value) for m in store.metric_history(run.info.run_id, "val_auc")] == [(2, 0.75)]
    assert [a.path for a in store._client.list_artifacts(run.info.run_id, "model")] == ["model/weights.txt"]
