"""Whether the kernel's out-of-memory killer ended a process: read from this process's memory cgroup.

A parent sees only "killed by SIGKILL" when a training process dies; an operator's ``kill -9`` and
the OOM killer look the same from there. The memory cgroup the processes share (a container's,
a pod's, a ``systemd-run --scope``) counts its OOM kills, so comparing the count before and after
a run names the cause. cgroup v2 (``memory.events``) and v1 (``memory.oom_control``) are read;
where neither is readable the count is ``None`` and the message falls back to naming both causes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class MemoryCgroup:
    """The memory cgroup of a process: where its OOM-kill count and its limit are read."""

    directory: Path
    version: int

    def _read(self, v2_file: str, v1_file: str) -> str | None:
        """The text of the cgroup's file of that version (None: unreadable)."""
        try:
            return (self.directory / (v2_file if self.version == 2 else v1_file)).read_text()
        except OSError:
            return None

    def oom_kills(self) -> int | None:
        """How many processes the OOM killer has ended in this cgroup (None: unreadable)."""
        text = self._read("memory.events", "memory.oom_control")
        for line in (text or "").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
        return None

    def limit_bytes(self) -> int | None:
        """The cgroup's memory limit (None: unlimited or unreadable)."""
        text = (self._read("memory.max", "memory.limit_in_bytes") or "").strip()
        if not text.isdigit() or int(text) >= 1 << 62:  # "max" (v2) or the v1 page-rounded maximum
            return None
        return int(text)


def memory_cgroup(pid: int | str = "self", root: Path = CGROUP_ROOT) -> MemoryCgroup | None:
    """The memory cgroup of ``pid`` from ``/proc/<pid>/cgroup`` (None where there is none to read)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return MemoryCgroup(root / "memory" / path.lstrip("/"), 1)
    for line in lines:
        hierarchy, controllers, path = line.split(":", 2)
        if hierarchy == "0" and controllers == "":
            directory = root / path.lstrip("/")
            if (directory / "memory.events").is_file():
                return MemoryCgroup(directory, 2)
    return None


def killed_because(signal_name: str | None, cgroup: MemoryCgroup | None, kills_before: int | None) -> str:
    """Why a process ended by ``signal_name`` died, as a sentence for the failure message ("" when it was
    not killed by SIGKILL)."""
    if signal_name != "SIGKILL":
        return ""
    kills_after = cgroup.oom_kills() if cgroup is not None else None
    if (
        cgroup is not None
        and kills_before is not None
        and kills_after is not None
        and kills_after > kills_before
    ):
        limit = cgroup.limit_bytes()
        # No limit of its own now: the kill came from a limit above it, or one since lifted.
        said = f"limit of {limit / 2**30:.2f} GiB" if limit else "no limit of its own now"
        return (
            f"the kernel's out-of-memory killer ended it (memory cgroup {cgroup.directory}, {said}; "
            f"{kills_after - kills_before} OOM kill(s) during this run): give the task more memory, or lower "
            "train.batch_size / the rows per process"
        )
    if kills_after is not None:
        return "it was killed by SIGKILL, not by its memory cgroup's OOM killer (an operator, or a node-level kill)"
    return "it was killed by SIGKILL: out of memory (see `dmesg`) or an operator"
