"""Reading a memory cgroup's OOM-kill count and limit (v1 and v2 files as the kernel writes them), and the
sentence a killed rank gets. The real OOM kill is in test_oom_kill.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from training.memory_cgroup import MemoryCgroup, killed_because, memory_cgroup

V1_OOM_CONTROL = "oom_kill_disable 0\nunder_oom 0\noom_kill {n}\n"
V2_EVENTS = "low 0\nhigh 0\nmax 12\noom {n}\noom_kill {n}\noom_group_kill 0\n"


def v1(tmp_path: Path, kills: int, limit: str = "1073741824") -> MemoryCgroup:
    (tmp_path / "memory.oom_control").write_text(V1_OOM_CONTROL.format(n=kills))
    (tmp_path / "memory.limit_in_bytes").write_text(limit + "\n")
    return MemoryCgroup(tmp_path, 1)


def v2(tmp_path: Path, kills: int, limit: str = "max") -> MemoryCgroup:
    (tmp_path / "memory.events").write_text(V2_EVENTS.format(n=kills))
    (tmp_path / "memory.max").write_text(limit + "\n")
    return MemoryCgroup(tmp_path, 2)


def test_counts_and_limits_as_each_version_writes_them(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert v1(tmp_path / "a", 3).oom_kills() == 3
    assert v1(tmp_path / "a", 3).limit_bytes() == 1 << 30
    assert v1(tmp_path / "a", 0, "9223372036854771712").limit_bytes() is None  # v1's "unlimited"
    assert v2(tmp_path / "b", 2).oom_kills() == 2  # oom_kill, not "oom" or "oom_group_kill"
    assert v2(tmp_path / "b", 2).limit_bytes() is None
    assert v2(tmp_path / "b", 2, "536870912").limit_bytes() == 1 << 29
    assert MemoryCgroup(tmp_path / "missing", 2).oom_kills() is None


def test_this_process_has_a_readable_memory_cgroup() -> None:
    cgroup = memory_cgroup()
    assert cgroup is not None and cgroup.oom_kills() is not None, "the OOM cause could not be named here"


def test_an_oom_kill_during_the_run_is_named_with_the_limit(tmp_path: Path) -> None:
    before = v1(tmp_path, 4)
    v1(tmp_path, 5)  # the kernel counted one more while the ranks ran
    said = killed_because("SIGKILL", before, 4)
    assert said.startswith("the kernel's out-of-memory killer ended it")
    assert "limit of 1.00 GiB; 1 OOM kill(s) during this run" in said and str(tmp_path) in said


def test_an_oom_kill_in_a_cgroup_without_a_limit_says_so(tmp_path: Path) -> None:
    """The limit that was hit was a parent's, or it was lifted since: the sentence says there is none here."""
    before = v1(tmp_path, 0)
    v1(tmp_path, 2, "9223372036854771712")
    said = killed_because("SIGKILL", before, 0)
    assert f"(memory cgroup {tmp_path}, no limit of its own now; 2 OOM kill(s) during this run)" in said


@pytest.mark.parametrize(
    ("signal", "kills_before", "kills_now", "expected"),
    [
        ("SIGKILL", 5, 5, "not by its memory cgroup's OOM killer"),  # count unchanged: someone's kill -9
        ("SIGKILL", None, 5, "not by its memory cgroup's OOM killer"),
        ("SIGTERM", 4, 5, ""),  # not a kill the OOM killer sends: the generic message stands
        (None, 4, 5, ""),
    ],
)
def test_other_deaths_are_not_called_out_of_memory(
    tmp_path: Path, signal: str | None, kills_before: int | None, kills_now: int, expected: str
) -> None:
    said = killed_because(signal, v1(tmp_path, kills_now), kills_before)
    assert (expected in said) if expected else said == ""
    assert "out-of-memory killer ended it" not in said


def test_without_a_cgroup_both_causes_are_named() -> None:
    assert (
        killed_because("SIGKILL", None, None)
        == "it was killed by SIGKILL: out of memory (see `dmesg`) or an operator"
    )
