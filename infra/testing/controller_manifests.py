"""Render a controller's own CRDs and webhook configurations for a controller that runs beside the cluster.

The controllers run as processes on this machine (the node's kubelet runs only workload pods), so the API
server reaches their webhook servers at ``https://127.0.0.1:PORT`` instead of through a Service. This takes
the release's own kustomizations (copied by build_controllers.sh from the module that built the binary),
renders them with ``kubectl kustomize``, and changes only what that move needs: every ``clientConfig``
names the URL and the CA of the certificate the start script made, webhook configurations get the
controller's name as a prefix (the releases all call theirs ``mutating-webhook-configuration``), and the
in-cluster Service and Namespace objects are left out. KServe's ``inferenceservice-config`` gets two of
its own settings changed: RawDeployment as the default mode (no Knative here) and no Ingress objects (no
ingress controller). Everything else (rules, selectors, failure policies, conversion settings, schemas,
the other settings) is the release's.

    python3 controller_manifests.py MANIFEST_DIR NAME PORT CA_FILE FOLDER [FOLDER ...] > objects.yaml

The ``config`` command writes a controller's configuration file: the release's own
(``manager/controller_manager_config.yaml``: its integrations, concurrency, client rates) with only what
running beside the cluster changes: one replica (no leader election), its certificate management off, the
webhook server on 127.0.0.1 with the certificate made here, the probes on a given port, metrics off.

    python3 controller_manifests.py config MANIFEST_DIR NAME PORT HEALTH_PORT CERT_DIR > config.yaml
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

LEFT_OUT = {"Service", "Namespace"}
WEBHOOK_KINDS = {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}


def rendered(folder: Path) -> list[dict[str, Any]]:
    """The objects of ``folder``'s kustomization, or of its YAML files where it has none."""
    if (folder / "kustomization.yaml").exists():
        text = subprocess.run(
            ["kubectl", "kustomize", str(folder)], capture_output=True, text=True, check=True
        ).stdout
    else:
        text = "\n---\n".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.yaml")))
    return [doc for doc in yaml.safe_load_all(text) if doc]


def pointed_here(node: Any, port: int, ca_bundle: str) -> Any:
    """``node`` with every ``clientConfig.service`` replaced by a URL on this machine."""
    if isinstance(node, list):
        return [pointed_here(item, port, ca_bundle) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: pointed_here(value, port, ca_bundle) for key, value in node.items()}
    config = out.get("clientConfig")
    if isinstance(config, dict) and "service" in config:
        path = config["service"].get("path", "/")
        out["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}
    return out


KSERVE_CONFIG = "inferenceservice-config"


def raw_deployment(config_map: dict[str, Any]) -> dict[str, Any]:
    """KServe's settings with RawDeployment as the default mode and Ingress creation off."""
    data = dict(config_map["data"])
    deploy, ingress = json.loads(data["deploy"]), json.loads(data["ingress"])
    deploy["defaultDeploymentMode"] = "RawDeployment"
    ingress["disableIngressCreation"] = True
    data["deploy"], data["ingress"] = json.dumps(deploy, indent=2), json.dumps(ingress, indent=2)
    return {**config_map, "data": data}


def objects(manifests: Path, name: str, port: int, ca_file: Path, folders: list[str]) -> list[dict[str, Any]]:
    ca_bundle = base64.b64encode(ca_file.read_bytes()).decode()
    out = []
    for folder in folders:
        for obj in rendered(manifests / folder):
            if obj.get("kind") in LEFT_OUT:
                continue
            obj = pointed_here(obj, port, ca_bundle)
            if obj.get("kind") == "ConfigMap" and obj["metadata"]["name"] == KSERVE_CONFIG:
                obj = raw_deployment(obj)
            if obj.get("kind") in WEBHOOK_KINDS:
                obj["metadata"]["name"] = f"{name}-{obj['metadata']['name']}"
            out.append(obj)
    return out


RELEASE_CONFIG = "manager/controller_manager_config.yaml"
CERT_MANAGEMENT = {"trainer-controller-manager": "certManagement"}
"""The key of a controller's own certificate management (the others call it ``internalCertManagement``)."""
NAMESPACES = {"kueue-manager": "kueue-system"}


def configuration(manifests: Path, name: str, port: int, health_port: int, cert_dir: Path) -> dict[str, Any]:
    """The release's controller configuration, moved off the cluster's network (see the module docstring)."""
    config = yaml.safe_load((manifests / RELEASE_CONFIG).read_text(encoding="utf-8"))
    config["leaderElection"] = {**(config.get("leaderElection") or {}), "leaderElect": False}
    config[CERT_MANAGEMENT.get(name, "internalCertManagement")] = {"enable": False}
    webhook = {"port": port, "host": "127.0.0.1"}
    if name in ("jobset-manager", "kueue-manager"):  # Trainer's has no certDir: $TMPDIR's default is used
        webhook["certDir"] = str(cert_dir)
    config["webhook"] = webhook
    config["health"] = {**(config.get("health") or {}), "healthProbeBindAddress": f"127.0.0.1:{health_port}"}
    config["metrics"] = {"bindAddress": "0"}
    if name in NAMESPACES:
        config["namespace"] = NAMESPACES[name]
    return dict(config)


def main(argv: list[str]) -> int:
    if len(argv) == 7 and argv[1] == "config":
        _, _, manifests, name, port, health, cert_dir = argv
        config = configuration(Path(manifests), name, int(port), int(health), Path(cert_dir))
        yaml.safe_dump(config, sys.stdout, sort_keys=False)
        return 0
    if len(argv) < 6:
        print(__doc__, file=sys.stderr)
        return 2
    manifests, name, port, ca_file, *folders = argv[1:]
    found = objects(Path(manifests), name, int(port), Path(ca_file), folders)
    if not found:
        print(f"no objects in {folders} under {manifests}", file=sys.stderr)
        return 1
    yaml.safe_dump_all(found, sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
