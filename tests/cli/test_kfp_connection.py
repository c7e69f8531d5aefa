"""``mlops upload`` / ``mlops submit`` against a KFP API over real HTTP: the connection. An
unreachable host, a rejected or missing token, an auth proxy's login page, a URL without the API and a 403
are each named with the fix; host and token come from flags, the environment, a token file reread for
rotated tokens, or the kube config through the API server's proxy; inconsistent settings are refused.
Uploading is in test_kfp_upload.py, submitting in test_kfp_submit.py.

No KFP backend can run on a CI machine (it needs a cluster that runs pods), so these
tests start ``fake_kfp_server.FakeKfp``, which answers the v2beta1 endpoints
``kfp.Client`` calls and records every request; the assertions are on what the real
``kfp.Client`` sent: paths, multipart contents, run bodies, auth headers.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import SecretStr

from cli.kfp_client.connection import KfpConnection, open_client
from cli.kfp_client.kfp_errors import KfpApiError, KfpAuthError, KfpUnreachableError
from tests.cli.kfp_commands import TOKEN, mlops, submit, upload
from tests.support.fake_kfp_server import API, LOGIN_PAGE, FakeKfp


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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
