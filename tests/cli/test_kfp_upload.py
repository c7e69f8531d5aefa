"""``mlops upload`` against a KFP API over real HTTP: the pipeline created once, a version per
commit (the same content never uploaded twice, other content under a taken name refused), the platform
image replaced, the registered pipeline compiled when no package is given, and ``--set`` defaults naming
the version. Submitting runs is in test_kfp_submit.py, the connection in test_kfp_connection.py.

No KFP backend can run on a CI machine (it needs a cluster that runs pods), so these
tests start ``fake_kfp_server.FakeKfp``, which answers the v2beta1 endpoints
``kfp.Client`` calls and records every request; the assertions are on what the real
``kfp.Client`` sent: paths, multipart contents, run bodies, auth headers.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from cli.parameters import ParameterError
from mlops.images import PLATFORM_IMAGE
from pipelines.catalog import PIPELINE_NAMES
from tests.cli.kfp_commands import TOKEN, auth, mlops, upload
from tests.support.fake_kfp_server import API, FakeKfp


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
