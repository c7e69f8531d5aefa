"""Run a compiled pipeline's component as a pod of the platform image, as a KFP backend would.

The command and arguments come verbatim from the compiled YAML; the executor input is the JSON
the KFP driver would hand the task; ``kfp_launcher_standin.py`` (mounted from a ConfigMap) plays
the KFP launcher: it moves ``s3://`` artifacts between S3 and ``/s3`` around the command.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.services.node import K8sNode

STANDIN = Path(__file__).with_name("kfp_launcher_standin.py")
LAUNCHER_DIR = "/kfp-launcher"
OUTPUT_FILE = "/tmp/kfp_outputs/output_metadata.json"


@dataclass(frozen=True)
class Container:
    image: str
    command: list[str]
    args: list[str]


def compiled_container(pipeline_yaml: Path, component: str) -> Container:
    """The container a KFP backend would run for ``component`` (e.g. ``validate-data``)."""
    spec = next(yaml.safe_load_all(pipeline_yaml.read_text(encoding="utf-8")))
    container = spec["deploymentSpec"]["executors"][f"exec-{component}"]["container"]
    return Container(container["image"], list(container["command"]), list(container["args"]))


def task_parameters(
    pipeline_yaml: Path,
    task: str,
    arguments: dict[str, Any],
    upstream: dict[str, Any],
    run_id: str,
) -> dict[str, Any]:
    """The parameter values the KFP driver would give ``task``: what the compiled DAG wires to it.

    Pipeline parameters come from ``arguments``, else their compiled defaults; an upstream task's
    output parameter from ``upstream`` (keyed by the output's name); constants have their
    ``{{$.inputs.parameters['…']}}`` and ``{{$.pipeline_job_uuid}}`` placeholders filled in.
    """
    spec = next(yaml.safe_load_all(pipeline_yaml.read_text(encoding="utf-8")))
    defaults = {
        name: definition.get("defaultValue")
        for name, definition in spec["root"]["inputDefinitions"]["parameters"].items()
    }
    wiring = spec["root"]["dag"]["tasks"][task]["inputs"]["parameters"]
    values: dict[str, Any] = {}
    for name, source in wiring.items():
        if "componentInputParameter" in source:
            key = source["componentInputParameter"]
            values[name] = arguments.get(key, defaults[key])
        elif "taskOutputParameter" in source:
            values[name] = upstream[source["taskOutputParameter"]["outputParameterKey"]]
    placeholders = {"{{$.pipeline_job_uuid}}": run_id}
    placeholders.update({f"{{{{$.inputs.parameters['{k}']}}}}": str(v) for k, v in values.items()})

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            for placeholder, text in placeholders.items():
                value = value.replace(placeholder, text)
            return value
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [fill(v) for v in value]
        return value

    for name, source in wiring.items():
        if "runtimeValue" in source:
            values[name] = fill(source["runtimeValue"]["constant"])
    return values


def executor_input(
    parameters: dict[str, Any],
    output_artifacts: dict[str, tuple[str, str]],
    output_parameters: list[str],
    input_artifacts: dict[str, tuple[str, str, dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """The executor input of a task: parameter values, output artifacts as ``name: (schema title, uri)``,
    input artifacts (an upstream task's outputs) as ``name: (schema title, uri, metadata)``."""
    inputs: dict[str, Any] = {"parameterValues": parameters}
    if input_artifacts:
        inputs["artifacts"] = {
            name: {
                "artifacts": [{"name": name, "type": {"schemaTitle": title}, "uri": uri, "metadata": meta}]
            }
            for name, (title, uri, meta) in input_artifacts.items()
        }
    return {
        "inputs": inputs,
        "outputs": {
            "artifacts": {
                name: {
                    "artifacts": [{"name": name, "type": {"schemaTitle": title}, "uri": uri, "metadata": {}}]
                }
                for name, (title, uri) in output_artifacts.items()
            },
            "parameters": {name: {"outputFile": f"/tmp/kfp_outputs/{name}"} for name in output_parameters},
            "outputFile": OUTPUT_FILE,
        },
    }


@contextmanager
def namespace(node: K8sNode, prefix: str) -> Iterator[str]:
    """A fresh namespace holding the launcher stand-in's ConfigMap; deleted afterwards."""
    from kubernetes import client

    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    core = node.core()
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    core.create_namespaced_config_map(
        name,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="kfp-launcher"),
            data={"launch.py": STANDIN.read_text(encoding="utf-8")},
        ),
    )
    try:
        yield name
    finally:
        core.delete_namespace(name, grace_period_seconds=0)


def component_pod(
    node: K8sNode, name: str, container: Container, executor: dict[str, Any], env: dict[str, str]
) -> Any:
    """The pod manifest: the platform image, the compiled command behind the launcher stand-in."""
    from kubernetes import client

    variables = {"KFP_EXECUTOR_INPUT": json.dumps(executor), **env}
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels={"app.kubernetes.io/part-of": "mlops"}),
        spec=client.V1PodSpec(
            restart_policy="Never",
            containers=[
                client.V1Container(
                    name="main",
                    image=node.image,
                    image_pull_policy="Never",
                    command=["python3", f"{LAUNCHER_DIR}/launch.py", "--", *container.command],
                    args=container.args,
                    env=[client.V1EnvVar(name=k, value=v) for k, v in variables.items()],
                    volume_mounts=[
                        client.V1VolumeMount(name="s3", mount_path="/s3"),
                        client.V1VolumeMount(name="launcher", mount_path=LAUNCHER_DIR, read_only=True),
                    ],
                    security_context=client.V1SecurityContext(run_as_non_root=True),
                )
            ],
            volumes=[
                client.V1Volume(name="s3", empty_dir=client.V1EmptyDirVolumeSource()),
                client.V1Volume(
                    name="launcher", config_map=client.V1ConfigMapVolumeSource(name="kfp-launcher")
                ),
            ],
        ),
    )


def platform_config(pipeline_yaml: Path, component: str) -> dict[str, Any]:
    """The task's Kubernetes platform config in the compiled YAML (``kfp-kubernetes``); empty when it has none."""
    docs = list(yaml.safe_load_all(pipeline_yaml.read_text(encoding="utf-8")))
    executors = docs[1]["platforms"]["kubernetes"]["deploymentSpec"]["executors"] if len(docs) > 1 else {}
    return dict(executors.get(f"exec-{component}", {}))


def apply_platform_config(pod: Any, config: dict[str, Any]) -> Any:
    """``pod`` with the platform config applied as KFP's driver applies it to a task's pod: Secrets as
    volumes and as environment, pod-field environment, pod annotations and labels. (The driver cannot run
    here; this stand-in reads the same compiled keys, so a key the compiler wrote differently fails here.)"""
    from kubernetes import client

    known = {"secretAsVolume", "secretAsEnv", "fieldPathAsEnv", "podMetadata"}
    unknown = set(config) - known
    if unknown:
        raise AssertionError(f"platform config keys this stand-in does not apply: {sorted(unknown)}")
    main = pod.spec.containers[0]
    for index, entry in enumerate(config.get("secretAsVolume", [])):
        name = f"kfp-secret-{index}"
        source = client.V1SecretVolumeSource(secret_name=entry["secretName"], optional=entry.get("optional"))
        pod.spec.volumes.append(client.V1Volume(name=name, secret=source))
        main.volume_mounts.append(client.V1VolumeMount(name=name, mount_path=entry["mountPath"]))
    for entry in config.get("secretAsEnv", []):
        for pair in entry["keyToEnv"]:
            ref = client.V1SecretKeySelector(
                name=entry["secretName"], key=pair["secretKey"], optional=entry.get("optional")
            )
            main.env.append(
                client.V1EnvVar(name=pair["envVar"], value_from=client.V1EnvVarSource(secret_key_ref=ref))
            )
    for entry in config.get("fieldPathAsEnv", []):
        field = client.V1ObjectFieldSelector(field_path=entry["fieldPath"])
        main.env.append(
            client.V1EnvVar(name=entry["name"], value_from=client.V1EnvVarSource(field_ref=field))
        )
    metadata = config.get("podMetadata", {})
    pod.metadata.annotations = {**(pod.metadata.annotations or {}), **metadata.get("annotations", {})}
    pod.metadata.labels = {**(pod.metadata.labels or {}), **metadata.get("labels", {})}
    return pod


def executor_output(logs: str) -> dict[str, Any]:
    """The executor output the launcher stand-in printed (output parameters, artifact metadata)."""
    lines = [line for line in logs.splitlines() if line.startswith("KFP_EXECUTOR_OUTPUT ")]
    if not lines:
        raise AssertionError(f"the launcher printed no executor output; logs:\n{logs}")
    return dict(json.loads(lines[-1].split(" ", 1)[1]))


def predictor_deployment(
    inference_service: Path, image: str, overrides: dict[str, str], env: dict[str, str]
) -> Any:
    """A plain Deployment running the InferenceService's predictor container (for a cluster without KServe).

    The container, its probes, Secret volumes and environment are the manifest's; ``overrides``
    replaces ``--flag=value`` arguments (``""`` drops the flag) and ``env`` sets variables by name
    (e.g. an endpoint this node reaches at another address).
    """
    service = yaml.safe_load(inference_service.read_text(encoding="utf-8"))
    predictor = service["spec"]["predictor"]
    container = dict(predictor["containers"][0])
    args = []
    for arg in container["args"]:
        flag = arg.split("=", 1)[0]
        if flag in overrides:
            if overrides[flag]:
                args.append(f"{flag}={overrides[flag]}")
        else:
            args.append(arg)
    args += [
        f"{flag}={value}" for flag, value in overrides.items() if value and f"{flag}={value}" not in args
    ]
    variables = [e for e in container.get("env", []) if e["name"] not in env]
    variables += [{"name": k, "value": v} for k, v in env.items()]
    container.update(
        image=image,
        imagePullPolicy="Never",
        args=args,
        env=variables,
        resources={"requests": {"cpu": "100m", "memory": "256Mi"}},  # 2 cores here, shared
    )
    name = service["metadata"]["name"]
    labels = {"app": name, **service["metadata"].get("labels", {})}
    pod_spec: dict[str, Any] = {"containers": [container], "volumes": predictor.get("volumes", [])}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


REGISTRATION_ENV = (
    *("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "MLFLOW_S3_ENDPOINT_URL"),
    *("MLOPS_S3_SSE", "MLOPS_S3_SSE_KMS_KEY_ID", "MLOPS_AUDIT_URI", "MLOPS_SIGNING_KEY"),
)
"""The S3 service's settings a registration on the cluster's MLflow needs: it signs with the cluster's key
and audits to its S3 trail."""


def register_on(tracking_uri: str, name: str, onnx_dir: Path, holdout: Any, experiment: str) -> str:
    """Register ``onnx_dir`` as a new version of ``name`` on the tracking server; the version."""
    from components.register.version_registration import register_onnx_model
    from mlops.tracking.store import TrackingStore
    from mlops.vocabulary import Lineage

    context = TrackingStore(tracking_uri=tracking_uri, experiment=experiment)
    lineage = Lineage(experiment, "", "digest", "1", "0.1.0", "run")
    return register_onnx_model(onnx_dir, holdout, name, lineage, context).version


def create_serving_secrets(node: K8sNode, ns: str, env: dict[str, str], token: str, admin_token: str) -> None:
    """The Secrets the predictor names, as an operator creates them: the tokens and S3 keys; the public key."""
    from kubernetes import client

    serving = {
        "token": token,
        "admin-token": admin_token,
        "aws-access-key-id": env["AWS_ACCESS_KEY_ID"],
        "aws-secret-access-key": env["AWS_SECRET_ACCESS_KEY"],
    }
    signing = {"signing.pub": Path(env["MLOPS_SIGNING_PUBLIC_KEY"]).read_text(encoding="utf-8")}
    for secret, data in (("mlops-serving", serving), ("mlops-signing", signing)):
        node.core().create_namespaced_secret(
            ns, client.V1Secret(metadata=client.V1ObjectMeta(name=secret), string_data=data)
        )


def create_tracking_secret(node: K8sNode, ns: str, env: dict[str, str]) -> None:
    """The Secret training and component pods read their S3 keys from (``training.kubernetes_jobs.
    CREDENTIALS_SECRET``), as an operator creates it."""
    from kubernetes import client

    from training.kubernetes_jobs import CREDENTIALS_SECRET

    keys = {
        "aws-access-key-id": env["AWS_ACCESS_KEY_ID"],
        "aws-secret-access-key": env["AWS_SECRET_ACCESS_KEY"],
    }
    node.core().create_namespaced_secret(
        ns, client.V1Secret(metadata=client.V1ObjectMeta(name=CREDENTIALS_SECRET), string_data=keys)
    )
