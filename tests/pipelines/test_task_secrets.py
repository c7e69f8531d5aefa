"""The compiled pipelines mount Secrets into their tasks the KFP way (kfp-kubernetes platform config)."""

from typing import Any

import pytest
import yaml
from kfp import compiler, dsl

from pipelines.catalog import compiled_path, pipelines
from pipelines.task_secrets import SIGNING_KEY_ANNOTATION, TaskSecrets, mount_task_secrets


def compiled(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    spec, platform = yaml.safe_load_all(compiled_path(name).read_text())
    return spec, platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]


def component_inputs(spec: dict[str, Any], executor: str) -> set[str]:
    for component in spec["components"].values():
        if component.get("executorLabel") == executor:
            return set((component.get("inputDefinitions") or {}).get("parameters") or {})
    raise AssertionError(f"no component runs {executor}")


def test_the_register_task_gets_the_signing_key_and_nothing_else_does() -> None:
    spec, executors = compiled("training")
    register = executors["exec-register-model"]
    assert register["secretAsVolume"] == [
        {
            "secretName": "mlops-signing",
            "secretNameParameter": {"runtimeValue": {"constant": "mlops-signing"}},
            "mountPath": "/var/run/secrets/mlops-signing",
            "optional": False,
        }
    ]
    assert register["fieldPathAsEnv"] == [
        {"name": "MLOPS_SIGNING_KEY", "fieldPath": f"metadata.annotations['{SIGNING_KEY_ANNOTATION}']"}
    ]
    assert register["podMetadata"]["annotations"] == {
        SIGNING_KEY_ANNOTATION: "/var/run/secrets/mlops-signing/signing.key"
    }
    for name in pipelines():
        _, others = compiled(name)
        holders = [e for e, config in others.items() if "secretAsVolume" in config]
        assert holders == (["exec-register-model"] if name == "training" else []), name


@pytest.mark.parametrize("name", sorted(pipelines()))
def test_every_task_that_uses_the_stores_gets_the_credentials(name: str) -> None:
    spec, executors = compiled(name)
    for executor in spec["deploymentSpec"]["executors"]:
        inputs = component_inputs(spec, executor)
        expected = "tracking" in inputs or executor == "exec-prepare-data"
        config = executors.get(executor, {})
        if not expected:
            assert "secretAsEnv" not in config, executor
            continue
        (secret,) = config["secretAsEnv"]
        assert secret["secretName"] == "mlops-tracking" and secret["optional"] is True
        assert secret["keyToEnv"] == [
            {"secretKey": "aws-access-key-id", "envVar": "AWS_ACCESS_KEY_ID"},
            {"secretKey": "aws-secret-access-key", "envVar": "AWS_SECRET_ACCESS_KEY"},
        ]
    assert any("secretAsEnv" in config for config in executors.values())


@dsl.component
def register_model(tracking: dict) -> str:
    return str(tracking)


@dsl.component
def export_onnx_model(path: str) -> str:
    return path


def test_names_and_keys_come_from_the_settings(tmp_path: Any) -> None:
    secrets = TaskSecrets(
        signing_secret="team-signer",
        signing_key_item="private.pem",
        signing_mount_path="/keys",
        credentials_secret="team-s3",
        access_key_item="id",
        secret_key_item="secret",
        tracking_token_item="mlflow-token",
        credentials_optional=False,
    )

    @dsl.pipeline(name="secrets")
    def pipeline() -> None:
        from kfp.dsl import pipeline_context

        register_model(tracking={"tracking_uri": "http://mlflow:5000"}).after(export_onnx_model(path="m"))
        mount_task_secrets(pipeline_context.Pipeline.get_default_pipeline().tasks.values(), secrets)

    path = tmp_path / "secrets.yaml"
    compiler.Compiler().compile(pipeline, str(path))
    _, platform = yaml.safe_load_all(path.read_text())
    executors = platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]
    register = executors["exec-register-model"]
    assert register["secretAsVolume"][0]["secretName"] == "team-signer"
    assert register["podMetadata"]["annotations"][SIGNING_KEY_ANNOTATION] == "/keys/private.pem"
    (env,) = register["secretAsEnv"]
    assert env["secretName"] == "team-s3" and env["optional"] is False
    assert {k["secretKey"]: k["envVar"] for k in env["keyToEnv"]} == {
        "id": "AWS_ACCESS_KEY_ID",
        "secret": "AWS_SECRET_ACCESS_KEY",
        "mlflow-token": "MLFLOW_TRACKING_TOKEN",
    }
    assert "exec-export-onnx-model" not in executors  # no tracking input: no credentials


@pytest.mark.parametrize(
    "field, value",
    [("signing_secret", "Bad_Name"), ("signing_mount_path", "relative"), ("credentials_secret", "")],
)
def test_malformed_secret_settings_are_refused(field: str, value: str) -> None:
    with pytest.raises(ValueError, match=field):
        TaskSecrets.model_validate({field: value})
