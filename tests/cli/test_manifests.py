"""The Kubernetes manifests render, validate offline, and keep the platform's promises."""

from __future__ import annotations

import json
import re
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from cli import manifests
from cli.main import main
from mlops.images import PLATFORM_IMAGE
from serving.metrics import ServingMetrics
from tests.support.mounted_files import file_flags, missing_files


@cache
def rendered(overlay: str) -> tuple[dict[str, Any], ...]:
    return tuple(manifests.objects(manifests.render(overlay)))


def of_kind(overlay: str, kind: str) -> list[dict[str, Any]]:
    return [o for o in rendered(overlay) if o["kind"] == kind]


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec") or {}
    if obj["kind"] == "InferenceService":
        return list(spec["predictor"]["containers"])
    if obj["kind"] == "ClusterTrainingRuntime":
        jobs = spec["template"]["spec"]["replicatedJobs"]
        return [c for job in jobs for c in job["template"]["spec"]["template"]["spec"]["containers"]]
    return list(spec["template"]["spec"]["containers"]) if "template" in spec else []


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    if obj["kind"] == "InferenceService":
        return dict(spec["predictor"])
    return dict(spec["template"]["spec"]) if "template" in spec else {}


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_every_file_a_container_is_told_to_read_is_mounted(overlay: str) -> None:
    flagged = [
        (obj["metadata"]["name"], c) for obj in rendered(overlay) for c in containers(obj) if file_flags(c)
    ]
    assert any("--admin-token-file" in file_flags(c) for _, c in flagged), flagged
    missing = {
        f"{obj['kind']}/{obj['metadata']['name']}": gaps
        for obj in rendered(overlay)
        if obj["kind"] != "ClusterTrainingRuntime"
        for c in containers(obj)
        if (gaps := missing_files(pod_spec(obj), c))
    }
    assert missing == {}


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_every_rendered_object_validates_offline(overlay: str) -> None:
    objs = list(rendered(overlay))
    assert len(objs) > 30
    assert list(manifests.validate(objs, overlay)) == []


def test_vendored_crds_are_valid_crds() -> None:
    crds = list(rendered("crds"))
    assert {c["spec"]["names"]["kind"] for c in crds} >= {
        "TrainJob", "ClusterQueue", "LocalQueue", "ResourceFlavor", "InferenceService", "ServiceMonitor"
    }  # fmt: skip
    assert list(manifests.validate(crds, "crds")) == []


def test_a_misspelt_custom_resource_field_is_an_error() -> None:
    queue = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "q"}}
    (problem,) = manifests.validate([{**queue, "spec": {"clusterQueue": "a", "clusterqueue": "b"}}])
    assert "LocalQueue/q" in problem.source and "'clusterqueue' was unexpected" in problem.message
    (problem,) = manifests.validate([{**queue, "spec": {}}])
    assert "'clusterQueue' is a required property" in problem.message


def test_a_builtin_object_of_the_wrong_type_is_an_error() -> None:
    bad = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q", "namespace": "n"},
        "spec": {"hard": {"cpu": "1"}, "scopes": "Terminating"},
    }
    (problem,) = manifests.validate([bad], "x")
    assert problem.source == "x/ResourceQuota/n/q" and problem.message.startswith("spec.scopes:")


def test_a_kind_without_schema_says_where_its_crd_goes() -> None:
    (problem,) = manifests.validate(
        [{"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}}]
    )
    assert "add its CRD to" in problem.message


def test_unknown_overlay_names_the_choices() -> None:
    with pytest.raises(
        manifests.OverlayRenderError, match=r"overlay 'staging' does not exist; choose one of dev, prod"
    ):
        manifests.render("staging")


def test_without_kubectl_rendering_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    with pytest.raises(
        manifests.OverlayRenderError, match="needs kubectl .* none is on PATH; install kubectl"
    ):
        manifests.render("dev")


def test_cli_render_and_check(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["cluster", "render", "--overlay", "prod"]) == 0
    assert "kind: ClusterQueue" in capsys.readouterr().out
    assert main(["cluster", "check", "--overlay", "dev"]) == 0
    assert re.search(r"checked \d+ objects in overlay\(s\) dev: all valid", capsys.readouterr().out)

    broken = tmp_path / "k8s"
    shutil.copytree(manifests.MANIFESTS_DIR, broken)
    quota = broken / "base" / "team" / "quota.yaml"
    quota.write_text(
        quota.read_text().replace("max: {storage: 500Gi}", "max: {storage: 500Gi}\n      maximum: 1")
    )
    assert main(["cluster", "check", "--overlay", "dev", "--manifests", str(broken)]) == 1
    captured = capsys.readouterr()
    assert "dev/LimitRange/team-dev/defaults: spec.limits.1: Additional properties" in captured.err
    assert "1 problem(s)" in captured.out


def test_prod_pins_the_platform_image_everywhere() -> None:
    images = {c["image"] for o in rendered("prod") for c in containers(o)}
    assert images == {PLATFORM_IMAGE}


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_no_credentials_in_the_manifests(overlay: str) -> None:
    assert of_kind(overlay, "Secret") == []
    for obj in rendered(overlay):
        for container in containers(obj):
            for env in container.get("env", []):
                if re.search(r"KEY|SECRET|PASSWORD|TOKEN|BACKEND_STORE_URI", env["name"]):
                    if env.get("value", "").startswith("/var/run/secrets/"):
                        continue  # the path of a file a Secret volume mounts, not the credential
                    assert "value" not in env and "secretKeyRef" in env["valueFrom"], (obj["metadata"], env)


def test_each_team_namespace_is_isolated_and_queued() -> None:
    teams = [
        n["metadata"]["name"]
        for n in of_kind("prod", "Namespace")
        if n["metadata"]["name"].startswith("team-")
    ]
    assert teams == ["team-fraud", "team-risk"]
    for team in teams:
        in_team = [o for o in rendered("prod") if o["metadata"].get("namespace") == team]
        kinds = {o["kind"] for o in in_team}
        assert {"LocalQueue", "ResourceQuota", "LimitRange", "ServiceAccount", "Role", "RoleBinding"} <= kinds
        deny = [
            o for o in in_team if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "default-deny"
        ]
        assert deny and deny[0]["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
        (binding,) = [o for o in in_team if o["kind"] == "RoleBinding"]
        assert binding["subjects"][0]["namespace"] == team


def test_the_pipeline_role_names_every_verb_and_resource() -> None:
    for role in of_kind("prod", "Role"):
        for rule in role["rules"]:
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"], rule
            assert not {"secrets", "configmaps"} & set(rule["resources"]), (
                "pods get credentials as env, not via the API"
            )


def test_kueue_flavors_cover_gpu_types_mig_and_regions() -> None:
    flavors = {f["metadata"]["name"]: f["spec"]["nodeLabels"] for f in of_kind("prod", "ResourceFlavor")}
    assert {labels["topology.kubernetes.io/region"] for labels in flavors.values()} == {
        "eu-west-1",
        "eu-central-1",
    }
    (queue,) = of_kind("prod", "ClusterQueue")
    covered = {r for group in queue["spec"]["resourceGroups"] for r in group["coveredResources"]}
    assert {"nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "cpu", "memory"} <= covered
    used = {f["name"] for group in queue["spec"]["resourceGroups"] for f in group["flavors"]}
    assert used == set(flavors), "every flavor is quota'd in the ClusterQueue and every quota'd flavor exists"
    priorities = {p["metadata"]["name"]: p["value"] for p in of_kind("prod", "PriorityClass")}
    assert priorities["mlops-production-training"] > priorities["mlops-experiment"]


def test_dashboard_queries_only_metrics_the_server_exports() -> None:
    (config_map,) = [
        c for c in of_kind("prod", "ConfigMap") if c["metadata"]["name"] == "mlops-grafana-dashboard"
    ]
    dashboard = json.loads(config_map["data"]["mlops-dashboard.json"])
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    serving = {
        name for e in exprs for name in re.findall(r"\b(mlops_serving_\w+?)(?:_bucket|_sum|_count)?\{", e)
    }
    exported = {m.name for m in ServingMetrics().registry.collect()}
    counters = {n + "_total" for n in exported}
    assert serving and serving <= exported | counters, serving - exported - counters
    for needed in (
        "mlops_serving_requests_total",
        "mlops_serving_request_latency_seconds",
        "mlops_serving_errors_total",
    ):
        assert any(needed in e and "version" in e for e in exprs), needed
    assert any("histogram_quantile(0.99" in e for e in exprs)
    assert any("mlops_training_samples_per_second" in e for e in exprs)
    assert any("DCGM_FI_DEV_GPU_UTIL" in e for e in exprs)


def test_dev_flavors_carry_no_region_a_laptop_node_lacks() -> None:
    flavors = of_kind("dev", "ResourceFlavor")
    assert flavors and all("topology.kubernetes.io/region" not in f["spec"]["nodeLabels"] for f in flavors)


def _egress_ports(policy: dict[str, Any]) -> set[int]:
    return {p["port"] for rule in policy["spec"].get("egress", []) for p in rule.get("ports", [])}


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_the_network_policies_let_mlflow_and_model_servers_reach_their_s3_endpoint(overlay: str) -> None:
    from urllib.parse import urlsplit

    def port(url: str) -> int:
        parts = urlsplit(url)
        return parts.port or (443 if parts.scheme == "https" else 80)

    policies = {
        (p["metadata"]["namespace"], p["metadata"]["name"]): p for p in of_kind(overlay, "NetworkPolicy")
    }
    (mlflow_config,) = [c for c in of_kind(overlay, "ConfigMap") if c["metadata"]["name"] == "mlflow-server"]
    assert port(mlflow_config["data"]["s3-endpoint-url"]) in _egress_ports(
        policies[("mlops-system", "mlflow")]
    )
    for isvc in of_kind(overlay, "InferenceService"):
        namespace = isvc["metadata"]["namespace"]
        env = {e["name"]: e.get("value") for e in isvc["spec"]["predictor"]["containers"][0]["env"]}
        assert port(env["AWS_ENDPOINT_URL"]) in _egress_ports(policies[(namespace, "platform-egress")]), (
            namespace
        )
        assert env["AWS_ENDPOINT_URL"] == env["MLFLOW_S3_ENDPOINT_URL"]


def test_the_offline_check_is_closed_where_the_published_crds_are() -> None:
    """The minimal CRDs leave pod templates and predictors open; the check still refuses what the real ones do."""
    (runtime,) = [
        o
        for o in of_kind("dev", "ClusterTrainingRuntime")
        if o["metadata"]["name"] == "mlops-torch-distributed"
    ]
    bad_policy = json.loads(json.dumps(runtime))
    bad_policy["spec"]["mlPolicy"]["torch"]["numProcPerNode"] = (
        "auto"  # Trainer v2 has it on the TrainJob only
    )
    (problem,) = manifests.validate([bad_policy], "dev")
    assert "mlPolicy.torch" in problem.message and "'numProcPerNode' was unexpected" in problem.message
    bad_pod = json.loads(json.dumps(runtime))
    job = bad_pod["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]
    job["spec"]["template"]["spec"]["containers"][0]["imagePullPolice"] = "Never"
    (problem,) = manifests.validate([bad_pod], "dev")
    assert problem.message.startswith("spec.template.spec.replicatedJobs.0.template (as a Job: ")
    assert "imagePullPolice" in problem.message
    (isvc,) = of_kind("dev", "InferenceService")
    bad_predictor = json.loads(json.dumps(isvc))
    bad_predictor["spec"]["predictor"]["containers"][0]["resources"]["limit"] = {"cpu": "1"}
    (problem,) = manifests.validate([bad_predictor], "dev")
    assert (
        "spec.predictor (as a Pod: spec.containers.0.resources)" in problem.message
        and "'limit'" in problem.message
    )


@pytest.mark.parametrize("team", ["team-risk", "team-fraud"])
def test_the_overlay_ships_the_inference_service_the_kserve_target_creates(team: str) -> None:
    from delivery.targets.kserve_predictor import PredictorSpec, inference_service

    (isvc,) = [o for o in of_kind("prod", "InferenceService") if o["metadata"]["namespace"] == team]
    expected = inference_service(
        "credit-default", team, "credit-default", PredictorSpec(image="ghcr.io/mlops-platform/mlops:0.1.0")
    )
    assert isvc == expected
    predictor = isvc["spec"]["predictor"]
    assert "model" not in predictor and len(predictor["containers"]) == 1  # one implementation
    assert isvc["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] == "RawDeployment"


def test_team_rules_move_the_overlays_own_team_rules_into_a_new_namespace(tmp_path: Path) -> None:
    from cli.manifests import CLUSTER_RULES, TEAM_RULES, objects, render, team_rules

    rules = team_rules("dev", "team-new")
    moved = [o for o in rules if o["kind"] in TEAM_RULES]
    assert sorted(o["kind"] for o in moved) == sorted(TEAM_RULES)
    assert {o["metadata"]["namespace"] for o in moved} == {"team-new"}
    rendered = objects(render("dev"))
    source = next(o for o in rendered if o["kind"] == "LimitRange")
    copied = next(o for o in moved if o["kind"] == "LimitRange")
    assert copied["spec"] == source["spec"] and source["metadata"]["namespace"] != "team-new"  # not mutated
    assert sorted(o["metadata"]["name"] for o in rules if o["kind"] in CLUSTER_RULES) == sorted(
        o["metadata"]["name"] for o in rendered if o["kind"] in CLUSTER_RULES
    )
    empty = tmp_path / "overlays" / "bare"
    empty.mkdir(parents=True)
    (empty / "kustomization.yaml").write_text("resources: [config.yaml]\n")
    (empty / "config.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: x}\n")
    with pytest.raises(ValueError, match="'bare' has no team namespace"):
        team_rules("bare", "team-new", root=tmp_path)
