"""The checks a Kubernetes job passes before anything is created: residency, budget, shape."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from training.kubernetes_config import ClusterPolicyError, KubernetesJobSettings, plan


def settings(**overrides: Any) -> KubernetesJobSettings:
    base: dict[str, Any] = {"namespace": "team-risk", "staging_uri": "s3://mlops/jobs/"}
    return KubernetesJobSettings(**{**base, **overrides})


def test_a_valid_plan_names_namespace_and_world_size() -> None:
    checked = plan(
        settings(workers=2, gpus_per_worker=4, region="eu-west-1", allowed_regions="eu-west-1"), nproc=8
    )
    assert (checked.namespace, checked.world_size) == ("team-risk", 8)
    assert checked.settings.staging_uri == "s3://mlops/jobs"


def test_region_outside_allowed_regions_is_refused_naming_region_and_setting() -> None:
    with pytest.raises(
        ClusterPolicyError, match=r"region 'us-east-1' is outside allowed_regions \(eu-west-1, eu-central-1\)"
    ):
        plan(settings(region="us-east-1", allowed_regions="eu-west-1,eu-central-1"), nproc=1)


def test_no_region_is_refused_when_regions_are_restricted() -> None:
    with pytest.raises(ClusterPolicyError, match=r"region is empty but allowed_regions='eu-west-1'"):
        plan(settings(allowed_regions="eu-west-1"), nproc=1)


def test_any_region_is_fine_without_restriction() -> None:
    assert plan(settings(region="us-east-1"), nproc=1).world_size == 1


def test_budget_gate_at_and_over_the_edge() -> None:
    at_edge = settings(workers=2, gpus_per_worker=4, time_limit_hours=8, gpu_hours_budget=64)
    assert at_edge.gpu_hours() == 64 and plan(at_edge, nproc=8).world_size == 8
    over = settings(workers=2, gpus_per_worker=4, time_limit_hours=8.5, gpu_hours_budget=64)
    with pytest.raises(
        ClusterPolicyError,
        match=r"estimated 68 GPU-hours \(workers=2 x gpus_per_worker=4 x time_limit_hours=8.5\) exceeds "
        r"gpu_hours_budget=64 by 4 GPU-hours",
    ):
        plan(over, nproc=8)


def test_a_gpu_budget_of_zero_refuses_any_gpu_job_it_is_never_unlimited() -> None:
    # A planted fault: a budget of 0 read as "no limit" let any GPU job through.
    smallest = settings(workers=1, gpus_per_worker=1, time_limit_hours=0.25, gpu_hours_budget=0)
    with pytest.raises(
        ClusterPolicyError, match=r"estimated 0.25 GPU-hours .* exceeds gpu_hours_budget=0 by 0.25 GPU-hours"
    ):
        plan(smallest, nproc=1)


def test_cpu_jobs_use_no_gpu_budget() -> None:
    assert plan(settings(workers=4, time_limit_hours=100, gpu_hours_budget=0), nproc=4).world_size == 4


def test_ranks_must_match_nproc() -> None:
    with pytest.raises(
        ClusterPolicyError, match=r"nproc=4 but .* workers=3 x 1 rank\(s\) .* = 3 ranks; set nproc=3"
    ):
        plan(settings(workers=3), nproc=4)


def test_staging_uri_is_required() -> None:
    with pytest.raises(ClusterPolicyError, match="staging_uri is empty"):
        plan(settings(staging_uri=""), nproc=1)


def test_gpu_type_without_gpus_is_refused() -> None:
    with pytest.raises(ClusterPolicyError, match="gpu_type='NVIDIA-A100-SXM4-80GB' with gpus_per_worker=0"):
        plan(settings(gpu_type="NVIDIA-A100-SXM4-80GB"), nproc=1)


def test_empty_namespace_outside_a_pod_says_which_setting(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(
        ClusterPolicyError, match="namespace is empty and this process is not in a Kubernetes pod"
    ):
        plan(settings(namespace=""), nproc=1)


@pytest.mark.parametrize(
    "field, value",
    [
        ("memory_per_worker", "8 GB"),
        ("gpu_resource", "gpu"),
        ("allowed_regions", "eu-west-1, x"),
        ("workers", 0),
    ],
)
def test_malformed_settings_are_refused_at_construction(field: str, value: Any) -> None:
    with pytest.raises(ValidationError, match=field):
        settings(**{field: value})
