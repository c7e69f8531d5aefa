"""``mlops upload`` / ``mlops submit`` against a KFP API over real HTTP.

No KFP backend can run on a CI machine (it needs a cluster that runs pods), so these
tests start ``fake_kfp_server.FakeKfp``, which answers the v2beta1 endpoints
``kfp.Client`` calls and records every request; the assertions are on what the real
``kfp.Client`` sent: paths, multipart contents, run bodies, auth headers.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import SecretStr

from cli.commands import submit as submit_cmd
from cli.commands import upload as upload_cmd
from cli.kfp_client.connection import KfpConnection, open_client
from cli.kfp_client.kfp_errors import KfpApiError, KfpAuthError, KfpUnreachableError
from cli.parameters import ParameterError
from mlops.images import PLATFORM_IMAGE
from mlops.workspace import Workspace
from pipelines.catalog import PIPELINE_NAMES
from tests.support.fake_kfp_server import API, FAILING_RUN, LOGIN_PAGE, FakeKfp

TOKEN = "s3cr3t-token"


def mlops(*argv: str, workspace: Path) -> int:
    """The two commands as ``mlops`` parses them; ValueErrors propagate as they do to ``mlops``' main."""
    parser = argparse.ArgumentParser(prog="mlops")
    subparsers = parser.add_subparsers(dest="command", required=True)
    upload_cmd.add_parser(subparsers)
    submit_cmd.add_parser(subparsers)
    args = parser.parse_args(argv)
    return int(args.handler(args, Workspace(workspace)))


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pipelines.catalog import compile_all

    out = tmp_path_factory.mktemp("compiled")
    (path,) = [p for p in compile_all(out) if p.name == "training.yaml"]
    return path


@pytest.fixture
def fake() -> Iterator[FakeKfp]:
    with FakeKfp(token=TOKEN) as server:
        yield server


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway git checkout as the working directory, so version names come from a known commit."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "code.py").write_text("x = 1\n")
    git(root, "init", "-q")
    commit(root, "first")
    monkeypatch.chdir(root)
    return root


def git(root: Path, *args: str) -> str:
    identity = ["-c", "user.name=ci", "-c", "user.email=ci@example.com", "-c", "commit.gpgsign=false"]
    result = subprocess.run(["git", *identity, *args], cwd=root, capture_output=True, text=True, check=True)
    return result.stdout.strip()


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


def auth(fake: FakeKfp) -> list[str]:
    return ["--host", fake.url, "--token", TOKEN]


def upload(fake: FakeKfp, package: Path, tmp_path: Path, *extra: str) -> int:
    return mlops("upload", "--package", str(package), *auth(fake), *extra, workspace=tmp_path / "ws")


def submit(fake: FakeKfp, tmp_path: Path, *extra: str) -> int:
    return mlops("submit", *auth(fake), "--poll", "0.01", *extra, workspace=tmp_path / "ws")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ------------------------------------------------------------------------ upload


def test_first_upload_creates_the_pipeline_and_a_version_named_by_the_commit(
    fake: FakeKfp, package: Path, repo: Path, tmp_path: Path
) -> None:
    sha = git(repo, "rev-parse", "HEAD")
    assert upload(fake, package, tmp_path) == 0

    assert [(r.method, r.path.removeprefix(API)) for r in fake.requests] == [
        ("GET", "/healthz"),
        ("GET", "/pipelines"),
        ("POST", "/pipelines"),
        ("POST", "/pipelines/upload_version"),
    ]
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in fake.requests)
    assert '"stringValue": "training"' in fake.requests[1].query["filter"][0]
    assert fake.requests[2].json()["display_name"] == "training"
    sent = fake.calls("POST", "/pipelines/upload_version")[0]
    assert sent.query["name"] == [sha[:12]]
    assert sent.query["pipelineid"] == [next(iter(fake.pipelines))]
    assert sent.query["description"] == [f"git commit {sha}"]
    filename, content = sent.files()["uploadfile"]
    assert filename == "training.yaml"
    assert content == package.read_bytes()


def test_next_commit_adds_a_version_and_the_same_commit_is_not_uploaded_twice(
    fake: FakeKfp, package: Path, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = git(repo, "rev-parse", "HEAD")
    assert upload(fake, package, tmp_path) == 0
    (repo / "code.py").write_text("x = 2\n")
    dirty_name = f"{first[:12]}-dirty"
    assert upload(fake, package, tmp_path) == 0
    second = commit(repo, "second")
    assert upload(fake, package, tmp_path) == 0
    assert upload(fake, package, tmp_path) == 0  # a re-run CI job

    (pipeline_id,) = fake.pipelines
    assert [v["display_name"] for v in fake.versions[pipeline_id]] == [first[:12], dirty_name, second[:12]]
    assert len(fake.calls("POST", "/pipelines")) == 1
    assert len(fake.calls("POST", "/pipelines/upload_version")) == 3
    assert f"version {second[:12]}: already uploaded, reused" in capsys.readouterr().out


def test_other_content_under_an_existing_version_name_is_refused(
    fake: FakeKfp, package: Path, tmp_path: Path
) -> None:
    assert upload(fake, package, tmp_path, "--version-name", "v1") == 0
    with pytest.raises(ValueError, match="already has a version 'v1' with different content"):
        upload(fake, package, tmp_path, "--version-name", "v1", "--image", "registry.example.com/mlops:abc")
    assert len(fake.calls("POST", "/pipelines/upload_version")) == 1


def test_image_replaces_the_platform_image_and_nothing_else(
    fake: FakeKfp, package: Path, tmp_path: Path
) -> None:
    image = "registry.example.com/team/mlops:0123456789ab"
    assert upload(fake, package, tmp_path, "--version-name", "v1", "--image", image) == 0

    _, content = fake.calls("POST", "/pipelines/upload_version")[0].files()["uploadfile"]
    (sent, sent_platform), (original, platform) = (
        list(yaml.safe_load_all(content)),
        list(yaml.safe_load_all(package.read_text())),
    )
    assert sent_platform == platform  # the tasks' Secrets travel unchanged
    executors = sent["deploymentSpec"]["executors"]
    assert executors and {e["container"]["image"] for e in executors.values()} == {image}
    for executor in executors.values():
        executor["container"]["image"] = PLATFORM_IMAGE
    assert sent == original


def test_upload_without_package_compiles_the_registered_pipeline(
    fake: FakeKfp, package: Path, tmp_path: Path
) -> None:
    code = mlops("upload", *auth(fake), "--version-name", "v1", workspace=tmp_path / "ws")

    assert code == 0
    _, content = fake.calls("POST", "/pipelines/upload_version")[0].files()["uploadfile"]
    assert list(yaml.safe_load_all(content)) == list(yaml.safe_load_all(package.read_text()))


def test_set_changes_the_uploaded_versions_form_defaults_and_names_the_version(
    fake: FakeKfp, package: Path, repo: Path, tmp_path: Path
) -> None:
    sha = git(repo, "rev-parse", "HEAD")
    sets = [
        "--set",
        "train.epochs=5",
        "--set",
        "tune.trials=2",
        "--set",
        "tracking.tracking_uri=http://mlflow:5000",
    ]
    assert mlops("upload", *auth(fake), *sets, workspace=tmp_path / "ws") == 0

    sent = fake.calls("POST", "/pipelines/upload_version")[0]
    (name,) = sent.query["name"]
    assert name.startswith(f"{sha[:12]}-") and len(name) == 12 + 1 + 8
    assert (
        "defaults tracking.tracking_uri=http://mlflow:5000, train.epochs=5, tune.trials=2"
        in sent.query["description"][0]
    )
    _, content = sent.files()["uploadfile"]
    uploaded, original = next(yaml.safe_load_all(content)), next(yaml.safe_load_all(package.read_text()))
    inputs = uploaded["root"]["inputDefinitions"]["parameters"]
    assert inputs["train"]["defaultValue"]["epochs"] == 5 and inputs["tune_trials"]["defaultValue"] == 2
    assert inputs["tracking"]["defaultValue"]["tracking_uri"] == "http://mlflow:5000"
    assert "train.epochs: Maximum number of epochs. (default 5)" in inputs["train"]["description"]
    # Nothing else differs from the plain compile.
    for parameter in ("train", "tune_trials", "tracking"):
        original["root"]["inputDefinitions"]["parameters"][parameter] = inputs[parameter]
    assert uploaded == original
    # A run started without --set is the pipeline with these defaults.
    from pipelines.training.pipeline import FORM

    values = FORM.values({p: spec["defaultValue"] for p, spec in inputs.items()})
    assert values["train.epochs"] == 5 and values["tune.trials"] == 2

    # The same settings again: the same version, reused; a bad one is refused before connecting.
    assert mlops("upload", *auth(fake), *sets, workspace=tmp_path / "ws") == 0
    assert len(fake.calls("POST", "/pipelines/upload_version")) == 1
    requests = len(fake.requests)
    with pytest.raises(ParameterError, match=r"unknown setting 'train.epoch'"):
        mlops("upload", *auth(fake), "--set", "train.epoch=5", workspace=tmp_path / "ws")
    with pytest.raises(ValueError, match="leave out --package"):
        upload(fake, package, tmp_path, "--set", "train.epochs=5")
    assert len(fake.requests) == requests


def test_unknown_pipeline_name_is_refused_before_connecting(fake: FakeKfp, tmp_path: Path) -> None:
    known = ", ".join(sorted(PIPELINE_NAMES))
    assert "training" in known and "monitoring" in known
    with pytest.raises(ValueError, match=f"unknown pipeline 'trainig'; known: {known}$"):
        mlops("upload", *auth(fake), "--pipeline", "trainig", "--version-name", "v1", workspace=tmp_path)
    assert fake.requests == []


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


# ---------------------------------------------------------------- connection errors


def test_an_unreachable_host_is_named_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    host = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(KfpUnreachableError, match=rf"cannot reach KFP at {host} .*Connection refused"):
        open_client(KfpConnection(host=host))

    code = mlops("submit", "--host", host, "--set", "train.epochs=2", workspace=tmp_path)
    assert code == 3
    assert "check --host/KFP_HOST" in capsys.readouterr().err


def test_a_rejected_token_stops_at_the_health_check(
    fake: FakeKfp, package: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = mlops(
        "upload",
        "--package",
        str(package),
        "--host",
        fake.url,
        "--token",
        "expired",
        "--version-name",
        "v1",
        workspace=tmp_path,
    )

    assert code == 3
    err = capsys.readouterr().err
    assert f"KFP at {fake.url} rejected the credentials (401 Unauthorized)" in err
    assert "the bearer token from --token/KFP_TOKEN was rejected" in err
    assert [r.path for r in fake.requests] == [f"{API}/healthz"]  # one attempt, no upload


def test_a_missing_token_says_how_to_pass_one(fake: FakeKfp) -> None:
    with pytest.raises(KfpAuthError, match=r"401 Unauthorized.*pass --token or set KFP_TOKEN"):
        open_client(KfpConnection(host=fake.url))
    assert "authorization" not in fake.requests[0].headers


def test_an_auth_proxy_login_page_is_reported_as_an_auth_failure() -> None:
    with FakeKfp(token=TOKEN, login_redirect=True) as proxy:
        with pytest.raises(KfpAuthError, match=r"answered the health check with a web page \(text/html\)"):
            open_client(KfpConnection(host=proxy.url))
        assert [r.path for r in proxy.requests] == [f"{API}/healthz", LOGIN_PAGE]

        open_client(
            KfpConnection(host=proxy.url, token=SecretStr(TOKEN))
        )  # with the token, the API itself answers


def test_a_url_without_the_api_is_named(fake: FakeKfp) -> None:
    with pytest.raises(
        KfpApiError, match=r"answered 404 .*is http://127.0.0.1:\d+/kubeflow the KFP API root"
    ):
        open_client(KfpConnection(host=fake.url + "/kubeflow", token=SecretStr(TOKEN)))


def test_403_names_the_namespace_and_rbac_and_no_run_exists(
    fake: FakeKfp, package: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert upload(fake, package, tmp_path, "--version-name", "v1") == 0
    fake.errors[("POST", f"{API}/runs")] = (
        403,
        "user ci@example.com may not create runs in namespace team-a",
    )

    assert submit(fake, tmp_path, "--namespace", "team-a") == 3
    err = capsys.readouterr().err
    assert "denied access (403 Forbidden) while trying to start a run" in err
    assert "may not create runs in namespace team-a" in err and "check --namespace" in err
    assert fake.calls("POST", "/experiments")[0].json()["namespace"] == "team-a"
    assert fake.runs == {}


# ---------------------------------------------------------------- credentials


def test_host_and_token_come_from_the_environment_and_flags_win(
    fake: FakeKfp, package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KFP_HOST", fake.url)
    monkeypatch.setenv("KFP_TOKEN", TOKEN)
    assert mlops("upload", "--package", str(package), "--version-name", "v1", workspace=tmp_path) == 0
    assert fake.requests[-1].headers["authorization"] == f"Bearer {TOKEN}"

    monkeypatch.setenv("KFP_HOST", f"http://127.0.0.1:{closed_port()}")
    assert mlops("submit", "--host", fake.url, workspace=tmp_path) == 0
    assert fake.calls("POST", "/runs")


def test_a_token_file_is_reread_so_rotated_tokens_work(fake: FakeKfp, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    client = open_client(KfpConnection(host=fake.url, token_file=token_file))
    fake.token = "rotated"
    token_file.write_text("rotated")

    client.list_pipelines()
    assert [r.headers["authorization"] for r in fake.requests] == [f"Bearer {TOKEN}", "Bearer rotated"]


def test_kube_config_credentials_reach_kfp_through_the_api_server_proxy(
    fake: FakeKfp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kubernetes.config.kube_config

    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": fake.url}}],
        "users": [{"name": "u", "user": {"token": TOKEN}}],
        "contexts": [{"name": "dev", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "dev",
    }
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    monkeypatch.setattr(
        kubernetes.config.kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(tmp_path / "kubeconfig")
    )

    client = open_client(KfpConnection(kube_context="dev"))
    client.list_pipelines()

    proxy = "/api/v1/namespaces/kubeflow/services/ml-pipeline:http/proxy"
    assert [r.raw_path for r in fake.requests] == [f"{proxy}{API}/healthz", f"{proxy}{API}/pipelines"]
    assert {r.headers["authorization"] for r in fake.requests} == {f"Bearer {TOKEN}"}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"host": "kfp.example.com"}, "must start with http:// or https://"),
        ({"token": "abc"}, "a bearer token needs the KFP host"),
        ({"host": "http://h", "token": "a", "token_file": Path("/etc/hostname")}, "not both"),
        (
            {"host": "http://h", "token_file": Path("/nonexistent/token")},
            "token file /nonexistent/token does not exist",
        ),
    ],
)
def test_inconsistent_connection_settings_are_named(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KfpConnection(**settings)


def test_submit_sets_the_kubernetes_launcher_and_the_job_shape(
    fake: FakeKfp, package: Path, tmp_path: Path
) -> None:
    from components.train.config import TrainTaskSettings
    from components.train.train import launcher_for
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
