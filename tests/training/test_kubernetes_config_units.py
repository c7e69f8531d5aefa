"""The pre-submission checks at their edges, with their whole messages: the message is the fix a user reads.

``test_kubernetes_config.py`` covers each refusal by its key words; these pin the deadline's rounding,
the budget's arithmetic and text, the order of the checks, and where an empty namespace comes from.
"""

from __future__ import annotations

import io
from typing import Any

import pytest

from training import kubernetes_config
from training.kubernetes_config import (
    ClusterPolicyError,
    KubernetesJobSettings,
    check_budget,
    check_residency,
    check_shape,
    current_namespace,
    plan,
)

POD_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def settings(**overrides: Any) -> KubernetesJobSettings:
    base: dict[str, Any] = {"namespace": "team-risk", "staging_uri": "s3://mlops/jobs"}
    return KubernetesJobSettings(**{**base, **overrides})


def _refusal(check: Any, *args: Any) -> str:
    with pytest.raises(ClusterPolicyError) as refused:
        check(*args)
    return str(refused.value)


@pytest.mark.parametrize(
    ("hours", "seconds"),
    [(0.5, 1800), (1.5 / 3600, 2), (1e-6, 1), (720, 2_592_000)],
    ids=["half-hour", "1.5s-rounded-up", "tiny-at-least-1s", "max"],
)
def test_the_deadline_is_the_time_limit_rounded_up_to_a_whole_second(hours: float, seconds: int) -> None:
    assert settings(time_limit_hours=hours).deadline_seconds() == seconds


def test_ranks_and_gpu_hours_of_a_job() -> None:
    assert settings().ranks_per_worker() == 1 and settings().gpu_hours() == 0
    gpu = settings(workers=3, gpus_per_worker=2, time_limit_hours=1.5)
    assert (gpu.ranks_per_worker(), gpu.gpu_hours()) == (2, 9.0)


def test_the_budget_refusal_gives_the_estimate_its_factors_and_the_excess() -> None:
    check_budget(settings(workers=3, gpus_per_worker=2, time_limit_hours=1.5, gpu_hours_budget=9))
    over = settings(workers=3, gpus_per_worker=2, time_limit_hours=1.5, gpu_hours_budget=8.5)
    assert _refusal(check_budget, over) == (
        "estimated 9 GPU-hours (workers=3 x gpus_per_worker=2 x time_limit_hours=1.5) exceeds "
        "gpu_hours_budget=8.5 by 0.5 GPU-hours; lower workers, gpus_per_worker or time_limit_hours"
    )


def test_residency_refusals_list_every_allowed_region() -> None:
    allowed = "eu-west-1,eu-central-1"
    assert _refusal(check_residency, settings(allowed_regions=allowed)) == (
        "region is empty but allowed_regions='eu-west-1,eu-central-1' restricts where training may run; "
        "set region to one of eu-west-1, eu-central-1"
    )
    assert _refusal(check_residency, settings(region="us-east-1", allowed_regions=allowed)) == (
        "region 'us-east-1' is outside allowed_regions (eu-west-1, eu-central-1): the data may not be "
        "processed there; set region to one of them (or change allowed_regions, if policy permits)"
    )
    check_residency(settings(region="eu-central-1", allowed_regions=allowed))
    check_residency(settings())  # no restriction, no region


def test_the_shape_refusal_names_the_world_size_to_set() -> None:
    assert check_shape(settings(workers=2, gpus_per_worker=4), 8) == 8
    assert _refusal(check_shape, settings(workers=2, gpus_per_worker=4), 6) == (
        "nproc=6 but the job runs workers=2 x 4 rank(s) per worker (gpus_per_worker=4) = 8 ranks; "
        "set nproc=8 or change workers/gpus_per_worker"
    )


def test_checks_run_residency_then_budget_then_shape_then_staging() -> None:
    wrong = {
        "region": "us-east-1",
        "allowed_regions": "eu-west-1",
        "gpus_per_worker": 8,
        "gpu_hours_budget": 1,
    }
    assert _refusal(plan, settings(**wrong, staging_uri=""), 3).startswith("region 'us-east-1'")
    del wrong["region"], wrong["allowed_regions"]
    assert _refusal(plan, settings(**wrong, staging_uri=""), 3).startswith("estimated 16 GPU-hours")
    del wrong["gpu_hours_budget"]
    assert _refusal(plan, settings(**wrong, staging_uri=""), 3).startswith("nproc=3 but")
    assert _refusal(plan, settings(**wrong, staging_uri=""), 8) == (
        "staging_uri is empty: the training pods need a place to read the job from and write the result to; "
        "set it to an s3://bucket/prefix they can reach"
    )


def test_a_gpu_type_is_fine_with_gpus_and_refused_without() -> None:
    assert plan(settings(gpus_per_worker=1, gpu_type="NVIDIA-H100-80GB-HBM3"), 1).world_size == 1
    assert _refusal(plan, settings(gpu_type="NVIDIA-H100-80GB-HBM3"), 1) == (
        "gpu_type='NVIDIA-H100-80GB-HBM3' with gpus_per_worker=0 would pin CPU ranks to GPU nodes; "
        "set gpus_per_worker or clear gpu_type"
    )


def test_the_pod_namespace_is_read_and_stripped(tmp_path: Any) -> None:
    path = tmp_path / "namespace"
    path.write_text("team-pod\n")
    assert current_namespace(str(path)) == "team-pod"
    assert _refusal(current_namespace, str(tmp_path / "absent")) == (
        "namespace is empty and this process is not in a Kubernetes pod; set namespace to the "
        "team namespace the job should run in"
    )


def _pod_namespace(monkeypatch: pytest.MonkeyPatch, text: str) -> list[str]:
    """Stand in for the service account's namespace file; return the paths opened."""
    opened: list[str] = []

    def fake_open(path: str, *args: Any, **kwargs: Any) -> io.StringIO:
        opened.append(path)
        return io.StringIO(text)

    monkeypatch.setattr(kubernetes_config, "open", fake_open, raising=False)
    return opened


def test_an_empty_namespace_is_the_pods_own(monkeypatch: pytest.MonkeyPatch) -> None:
    opened = _pod_namespace(monkeypatch, "team-pod\n")
    checked = plan(settings(namespace=""), 1)
    assert (checked.namespace, checked.world_size, opened) == ("team-pod", 1, [POD_NAMESPACE_FILE])
    opened.clear()
    assert plan(settings(), 1).namespace == "team-risk" and opened == []  # the setting wins, no file read


@pytest.mark.parametrize("text", ["", "Team_Risk\n", "-team\n"])
def test_a_pod_namespace_that_is_no_namespace_name_is_refused(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    _pod_namespace(monkeypatch, text)
    assert _refusal(plan, settings(namespace=""), 1) == (
        f"namespace {text.strip()!r} is not a valid Kubernetes namespace name"
    )
