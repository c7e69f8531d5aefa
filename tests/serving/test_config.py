"""ServerConfig validation and the `mlops serve` flags that build it (no server started here)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from cli.commands import serve as serve_cmd
from mlops.workspace import Workspace
from serving.config import ServerConfig

REPO = Path(__file__).resolve().parents[2]


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    serve_cmd.add_parser(parser.add_subparsers())
    return parser.parse_args(["serve", *argv])


def test_defaults_follow_the_workspace(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws")
    config = serve_cmd.server_config(parse(), workspace)
    assert config.tracking_uri == workspace.tracking_uri
    assert config.request_log_uri == str(workspace.root / "request-logs")
    assert config.model_cache_dir == str(workspace.root / "serving-cache")
    assert config.model_uri == "models:/credit-default@champion"
    assert (config.host, config.port, config.max_batch_size, config.intra_op_threads) == (
        "127.0.0.1",
        8080,
        64,
        1,
    )


def test_every_config_field_has_a_flag(tmp_path: Path) -> None:
    args = parse(
        "--model-name", "m", "--alias", "challenger", "--port", "9001", "--max-batch-size", "8",
        "--max-queue-delay-ms", "2.5", "--inference-in-thread", "--intra-op-threads", "2",
        "--request-log-sample-rate", "0.1", "--no-request-log", "--tracking-uri", "sqlite:///x.db",
    )  # fmt: skip
    config = serve_cmd.server_config(args, Workspace(tmp_path))
    assert (config.model_name, config.alias, config.port, config.max_batch_size) == (
        "m",
        "challenger",
        9001,
        8,
    )
    assert config.max_queue_delay_ms == 2.5 and config.inference_in_thread and config.intra_op_threads == 2
    assert config.request_log_uri == "" and config.tracking_uri == "sqlite:///x.db"
    assert set(ServerConfig.model_fields) <= set(vars(parse()))


def test_auth_token_from_file_and_not_both(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("abc123\n")
    config = serve_cmd.server_config(parse("--auth-token-file", str(token_file)), Workspace(tmp_path))
    assert config.auth_token == "abc123"
    assert "abc123" not in repr(config), "the token must not leak into logs"
    with pytest.raises(ValueError, match="not both"):
        serve_cmd.server_config(
            parse("--auth-token", "x", "--auth-token-file", str(token_file)), Workspace(tmp_path)
        )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"model_name": "a/b"}, "not a registry name"),
        ({"alias": "@champion"}, "not a registry name"),
        ({"tracking_uri": " "}, "tracking_uri is empty"),
        ({"max_batch_size": 0}, "greater than or equal to 1"),
        ({"max_queue_delay_ms": -1}, "greater than or equal to 0"),
        ({"request_log_sample_rate": 1.5}, "less than or equal to 1"),
        ({"request_log_uri": "/tmp/x", "request_log_sample_rate": 0.0}, "sample_rate is 0"),
        ({"auth_token": "has space"}, "printable ASCII without spaces"),
        ({"port": 70000}, "less than or equal to 65535"),
        ({"batch": 4}, "Extra inputs are not permitted"),
    ],
)
def test_invalid_config_is_refused_with_the_reason(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ServerConfig(**{"tracking_uri": "sqlite:///x.db", **overrides})


def test_config_is_frozen() -> None:
    config = ServerConfig(tracking_uri="sqlite:///x.db")
    with pytest.raises(ValidationError, match="frozen"):
        config.port = 1


def test_serve_without_a_store_explains_what_to_do(tmp_path: Path) -> None:
    args = parse()
    with pytest.raises(ValueError, match="run `mlops run training` first"):
        args.handler(args, Workspace(tmp_path / "empty"))


def test_standalone_entry_point_reports_errors_with_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert serve_cmd.main(["--workspace", str(tmp_path / "empty"), "--port", "1"]) == 2
    assert "has no MLflow store" in capsys.readouterr().err


def test_kserve_manifest_runs_mlops_serve_with_valid_flags(tmp_path: Path) -> None:
    import yaml

    from serving.http import OPEN_PATHS

    manifest = yaml.safe_load(
        (REPO / "infra" / "k8s" / "base" / "team" / "inferenceservice.yaml").read_text()
    )
    assert manifest["apiVersion"] == "serving.kserve.io/v1beta1" and manifest["kind"] == "InferenceService"
    (container,) = manifest["spec"]["predictor"]["containers"]
    assert container["image"] == "mlops-platform", "the kustomize image name the overlays pin"
    assert container["command"][0] == "mlops" and container["args"][0] == "serve"
    token = tmp_path / "token"
    token.write_text("t0ken")
    admin = tmp_path / "admin-token"
    admin.write_text("adm1n")
    flags = [
        a for a in container["args"][1:] if not a.startswith(("--auth-token-file=", "--admin-token-file="))
    ]
    assert len(flags) == len(container["args"]) - 3, "the manifest mounts both credentials as files"
    config = serve_cmd.server_config(
        parse(*flags, f"--auth-token-file={token}", f"--admin-token-file={admin}"), Workspace(tmp_path)
    )
    assert config.host == "0.0.0.0" and config.port == container["ports"][0]["containerPort"]
    assert config.grpc_port == container["ports"][1]["containerPort"] != config.port
    assert config.request_log_uri.startswith("s3://") and config.auth_token == "t0ken"
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["path"] in OPEN_PATHS, "probes cannot send the bearer token"
        assert container[probe]["httpGet"]["port"] == config.port


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.0.1", "::1", "localhost"])
def test_the_admin_route_may_go_without_its_own_token_on_loopback_only(host: str) -> None:
    assert ServerConfig(tracking_uri="sqlite:///x.db", host=host).rollout_admin


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "128.0.0.1", "model-server.team.svc"])
def test_a_non_loopback_host_needs_an_admin_token_or_no_admin_route(host: str) -> None:
    with pytest.raises(
        ValidationError, match=f"would be served on {re.escape(host)}, which is not a loopback"
    ):
        ServerConfig(tracking_uri="sqlite:///x.db", host=host, auth_token="inference")
    assert ServerConfig(tracking_uri="sqlite:///x.db", host=host, admin_token="adm1n").admin_token == "adm1n"
    assert not ServerConfig(tracking_uri="sqlite:///x.db", host=host, rollout_admin=False).rollout_admin


def test_the_admin_token_differs_from_the_inference_token() -> None:
    with pytest.raises(ValidationError, match="admin_token equals auth_token"):
        ServerConfig(tracking_uri="sqlite:///x.db", auth_token="same", admin_token="same")


def test_admin_token_from_file_env_or_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from serving.config import ADMIN_TOKEN_ENV

    workspace = Workspace(tmp_path)
    monkeypatch.delenv(ADMIN_TOKEN_ENV, raising=False)
    with pytest.raises(ValueError, match="--no-rollout-admin"):
        serve_cmd.server_config(parse("--host", "0.0.0.0"), workspace)
    monkeypatch.setenv(ADMIN_TOKEN_ENV, "from-env")
    config = serve_cmd.server_config(parse("--host", "0.0.0.0"), workspace)
    assert config.admin_token == "from-env" and "from-env" not in repr(config)
    token_file = tmp_path / "admin"
    token_file.write_text("from-file\n")
    assert (
        serve_cmd.server_config(parse("--admin-token-file", str(token_file)), workspace).admin_token
        == "from-file"
    )
    with pytest.raises(ValueError, match="not both"):
        serve_cmd.server_config(parse("--admin-token", "x", "--admin-token-file", str(token_file)), workspace)


def test_mlops_serve_on_all_interfaces_without_an_admin_token_does_not_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from serving.config import ADMIN_TOKEN_ENV

    monkeypatch.delenv(ADMIN_TOKEN_ENV, raising=False)
    assert (
        serve_cmd.main(
            ["--workspace", str(tmp_path), "--host", "0.0.0.0", "--tracking-uri", "sqlite:///x.db"]
        )
        == 2
    )
    assert "without an admin token: pass --admin-token-file" in capsys.readouterr().err
