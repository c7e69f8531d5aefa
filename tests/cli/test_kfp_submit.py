"""``mlops submit`` against a KFP API over real HTTP: settings typed into the run's parameters
(per-run settings plain, others in their whole section over the version's defaults), the run followed to
its end (or not waited for), the newest version unless one is named, failed and timed-out runs, settings
refused before any experiment or run, and the Kubernetes launcher's job shape. Uploading is in
test_kfp_upload.py, the connection in test_kfp_connection.py.

No KFP backend can run on a CI machine (it needs a cluster that runs pods), so these
tests start ``fake_kfp_server.FakeKfp``, which answers the v2beta1 endpoints
``kfp.Client`` calls and records every request; the assertions are on what the real
``kfp.Client`` sent: paths, multipart contents, run bodies, auth headers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.parameters import ParameterError
from tests.cli.kfp_commands import TOKEN, submit, upload
from tests.support.fake_kfp_server import API, FAILING_RUN, FakeKfp

# ------------------------------------------------------------------------ submit


def section_defaults(package: Path, section: str) -> dict[str, Any]:
    """The default of a section parameter as the compiled (uploaded) version holds it."""
    spec = next(yaml.safe_load_all(package.read_text()))
    return dict(spec["root"]["inputDefinitions"]["parameters"][section]["defaultValue"])


def test_submit_types_settings_starts_the_run_and_follows_it_to_success(
    fake: FakeKfp, package: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert upload(fake, package, tmp_path, "--version-name", "v1") == 0
    code = submit(
        fake,
        tmp_path,
        "--experiment",
        "nightly",
        "--set",
        "train.epochs=3",
        "--set",
        "train.learning_rate=0.01",
        "--set",
        "train.model.hidden_units=32,16",
        "--set",
        "data.uri=s3://bucket/loans.csv",
        "--set",
        "schema.numeric_features=income,age",
        "--set",
        "tune.trials=2",
        "--wait",
    )

    assert code == 0
    (experiment,) = fake.calls("POST", "/experiments")
    assert experiment.json()["display_name"] == "nightly"
    (run,) = fake.calls("POST", "/runs")
    body = run.json()
    assert run.headers["authorization"] == f"Bearer {TOKEN}"
    # Per-run settings are plain parameters; any other setting rides in its whole section: the
    # version's defaults with the given values on top (a section argument replaces the default whole).
    train = section_defaults(package, "train")
    train.update(epochs=3, learning_rate=0.01, model={**train["model"], "hidden_units": [32, 16]})
    schema = {**section_defaults(package, "schema"), "numeric_features": ["income", "age"]}
    assert body["runtime_config"]["parameters"] == {
        "train": train,
        "data_uri": "s3://bucket/loans.csv",
        "schema": schema,
        "tune_trials": 2,
    }
    # What the tasks rebuild from them.
    from pipelines.training.pipeline import FORM

    settings = FORM.values(body["runtime_config"]["parameters"])
    assert settings["train.epochs"] == 3 and settings["train.model.hidden_units"] == [32, 16]
    assert settings["train.batch_size"] == FORM.setting("train.batch_size").default
    assert settings["schema.numeric_features"] == ["income", "age"] and settings["tune.trials"] == 2
    out = capsys.readouterr().out
    assert "  train.epochs = 3\n" in out and "  data.uri = 's3://bucket/loans.csv'\n" in out
    (pipeline_id,) = fake.pipelines
    assert body["pipeline_version_reference"] == {
        "pipeline_id": pipeline_id,
        "pipeline_version_id": fake.versions[pipeline_id][0]["pipeline_version_id"],
    }
    assert body["experiment_id"] == next(iter(fake.experiments))
    changes = [line.split("] ", 1)[1].strip() for line in out.splitlines() if line.startswith("[")]
    assert changes == [
        "run PENDING",
        "run RUNNING",
        "prepare-data: RUNNING",
        "prepare-data: SUCCEEDED",
        "train-model: RUNNING",
        "run SUCCEEDED",
        "train-model: SUCCEEDED",
    ]
    (run_id,) = fake.runs
    assert len(fake.calls("GET", f"/runs/{run_id}")) == 4  # stopped polling at the terminal state
    assert f"run {run_id} succeeded" in out


def test_submit_without_wait_returns_after_starting_and_reuses_the_experiment(
    fake: FakeKfp, package: Path, tmp_path: Path
) -> None:
    assert upload(fake, package, tmp_path, "--version-name", "v1") == 0
    assert submit(fake, tmp_path) == 0
    assert submit(fake, tmp_path) == 0

    assert len(fake.calls("POST", "/experiments")) == 1
    assert len(fake.calls("POST", "/runs")) == 2
    assert not [r for r in fake.requests if r.method == "GET" and r.path.startswith(f"{API}/runs/")]


def test_submit_runs_the_newest_version_unless_one_is_named(
    fake: FakeKfp, package: Path, tmp_path: Path
) -> None:
    assert upload(fake, package, tmp_path, "--version-name", "old") == 0
    assert upload(fake, package, tmp_path, "--version-name", "new", "--image", "r.example.com/m:1") == 0
    (pipeline_id,) = fake.pipelines
    ids = {v["display_name"]: v["pipeline_version_id"] for v in fake.versions[pipeline_id]}

    assert submit(fake, tmp_path) == 0
    assert submit(fake, tmp_path, "--version", "old") == 0

    runs = [
        r.json()["pipeline_version_reference"]["pipeline_version_id"] for r in fake.calls("POST", "/runs")
    ]
    assert runs == [ids["new"], ids["old"]]


def test_a_failed_run_exits_1_naming_the_step_and_the_reason(
    fake: FakeKfp, package: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.run_script = list(FAILING_RUN)
    assert upload(fake, package, tmp_path, "--version-name", "v1") == 0

    assert submit(fake, tmp_path, "--wait") == 1
    err = capsys.readouterr().err
    assert "ended FAILED; failed step(s): train-model" in err
    assert fake.run_error in err


def test_a_run_still_going_at_the_timeout_exits_1(
    fake: FakeKfp, package: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.run_script = [("RUNNING", {"train-model": "RUNNING"})]
    assert upload(fake, package, tmp_path, "--version-name", "v1") == 0

    assert submit(fake, tmp_path, "--wait", "--timeout", "0.2") == 1
    assert "is still RUNNING after 0.2s; it keeps running on the cluster" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        (
            "train.learning_rat=0.1",
            "unknown setting 'train.learning_rat' of pipeline 'training'; did you mean",
        ),
        ("train.epochs=many", r"--set train.epochs='many': expected integer"),
        ("train.model.dropout=high", r"--set train.model.dropout='high': expected float"),
        ("train.model.hidden_units=32,wide", r"--set train.model.hidden_units='32,wide': expected list"),
        ("train.epochs=0", r"train.epochs: Input should be greater than or equal to 1 \(got 0\)"),
        ("train.epochs", "is not section.field=value"),
    ],
)
def test_a_bad_parameter_is_refused_before_any_experiment_or_run(
    fake: FakeKfp, package: Path, tmp_path: Path, assignment: str, message: str
) -> None:
    assert upload(fake, package, tmp_path, "--version-name", "v1") == 0

    with pytest.raises(ParameterError, match=message):
        submit(fake, tmp_path, "--set", "train.epochs=2", "--set", assignment, "--wait")
    assert fake.calls("POST", "/runs") == []
    assert fake.calls("POST", "/experiments") == []


def test_submit_names_the_missing_pipeline_or_version(
    fake: FakeKfp, package: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert submit(fake, tmp_path) == 3
    assert f"KFP at {fake.url} has no pipeline 'training'; upload it first" in capsys.readouterr().err

    assert upload(fake, package, tmp_path, "--version-name", "v1") == 0
    assert submit(fake, tmp_path, "--version", "v9") == 3
    assert f"pipeline 'training' on {fake.url} has no version 'v9' (newest: v1)" in capsys.readouterr().err
    assert fake.calls("POST", "/runs") == []


def test_submit_sets_the_kubernetes_launcher_and_the_job_shape(
    fake: FakeKfp, package: Path, tmp_path: Path
) -> None:
    from components.train.config import TrainTaskSettings
    from components.train.training_task import launcher_for
    from mlops.settings import from_section
    from training.kubernetes_launcher import KubernetesLauncher

    assert upload(fake, package, tmp_path, "--version-name", "v1") == 0
    sets = {
        "train_task.launcher": "trainjob",
        "train.nproc": "4",
        "train_task.cluster.workers": "2",
        "train_task.cluster.gpus_per_worker": "2",
        "train_task.cluster.gpu_type": "NVIDIA-H100-80GB-HBM3",
        "train_task.cluster.region": "eu-west-1",
        "train_task.cluster.allowed_regions": "eu-west-1,eu-central-1",
        "train_task.cluster.namespace": "team-risk",
        "train_task.cluster.staging_uri": "s3://mlops/train-jobs",
        "train_task.cpu_request": "500m",
    }
    assert (
        submit(fake, tmp_path, *[arg for key, value in sets.items() for arg in ("--set", f"{key}={value}")])
        == 0
    )
    (run,) = fake.calls("POST", "/runs")
    parameters = run.json()["runtime_config"]["parameters"]
    assert set(parameters) == {"train_task", "train", "train_task_cpu_request"}
    cluster = parameters["train_task"]["cluster"]
    assert cluster["workers"] == 2 and cluster["gpus_per_worker"] == 2
    assert (
        parameters["train_task"]["launcher"] == "trainjob" and parameters["train_task_cpu_request"] == "500m"
    )
    # What the train task then rebuilds from those values (its section whole, its per-run setting beside it).
    task = from_section(
        TrainTaskSettings, parameters["train_task"], cpu_request=parameters["train_task_cpu_request"]
    )
    launcher = launcher_for(task, nproc=parameters["train"]["nproc"])
    assert isinstance(launcher, KubernetesLauncher) and launcher.settings == task.cluster
    assert task.cluster.workers * task.cluster.gpus_per_worker == 4
    assert task.cluster.namespace == "team-risk" and task.cpu_request == "500m"


def test_a_setting_the_uploaded_version_lacks_is_refused(
    fake: FakeKfp, package: Path, tmp_path: Path
) -> None:
    spec = next(yaml.safe_load_all(package.read_text()))
    del spec["root"]["inputDefinitions"]["parameters"]["train"]["defaultValue"]["patience"]
    del spec["root"]["inputDefinitions"]["parameters"]["tune_trials"]
    older = tmp_path / "older.yaml"
    older.write_text(yaml.safe_dump(spec))
    assert upload(fake, older, tmp_path, "--version-name", "old") == 0

    with pytest.raises(ParameterError, match=r"no setting 'train.patience' in its 'train' section; upload"):
        submit(fake, tmp_path, "--set", "train.patience=2")
    with pytest.raises(
        ParameterError, match=r"--set tune.trials: the uploaded version .* no parameter 'tune_trials'"
    ):
        submit(fake, tmp_path, "--set", "tune.trials=2")
    assert fake.calls("POST", "/runs") == []
