"""A training rank ended by the kernel's out-of-memory killer mid-epoch: the run fails naming the OOM kill
(not just "exit code -9"), and a re-run resumes from the last checkpoint.

Real kernel OOM kill: the training task (two local DDP ranks) runs in a memory cgroup of its own;
once epoch 1's checkpoint has landed the cgroup's limit is lowered to its usage plus 256 MiB and a
ballast process in the same cgroup takes 512 MiB. The ranks are made the OOM killer's first choice
(``oom_score_adj`` 1000), so the kernel ends a rank, as it would a rank that outgrew its container.
What a rank's death frees depends on how much of its memory is shared library pages; when it is short
of the ballast's need the kernel goes on to the next-largest process, which was once the launcher that
reports the death, leaving nothing to report. So the ballast comes next (500: its bonus of half the
limit outweighs the launcher's whole size, and lowering the launcher's score would need a privilege
this container's root lacks), and the limit is lifted as soon as the first kill is counted. Needs root
and a memory cgroup (v1 here; the CI machine is the same): the test fails saying so when either is
missing, it does not skip.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from training.checkpoint import CHECKPOINT_FILE
from training.memory_cgroup import memory_cgroup

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import sys
from pathlib import Path
from mlops.data.sample_data import SAMPLE_SCHEMA, SampleDataConfig, generate
from training.config import ModelConfig, TrainConfig
from training.trainer import train

if __name__ == "__main__":
    config = TrainConfig(epochs=int(sys.argv[2]), batch_size=64, learning_rate=5e-3, patience=0, nproc=2,
                         model=ModelConfig(hidden_units=(32, 16), dropout=0.0), precision="fp32", device="cpu")
    out = Path(sys.argv[1])
    result = train(generate(SampleDataConfig(rows=6000, seed=11)), SAMPLE_SCHEMA, config, out / "model",
                   checkpoint_dir=out / "ckpt")
    print(f"RESUMED_FROM={result.resumed_from_epoch} EPOCHS={[h.epoch for h in result.history]}")
"""
BALLAST = """
import sys, time
chunks = [b"\\x01" * (64 << 20) for _ in range(8)]  # 512 MiB, every page touched
print("ballast held", flush=True)
time.sleep(600)
"""
EPOCHS = 12


def _v1_memory_root() -> Path:
    root = Path("/sys/fs/cgroup/memory")
    if os.geteuid() != 0 or not (root / "cgroup.procs").is_file():
        pytest.fail(
            "this test needs root and a cgroup v1 memory hierarchy at /sys/fs/cgroup/memory (it puts the training "
            "task in a memory cgroup of its own); run it as root on a machine like CI's"
        )
    return root


@pytest.fixture
def cgroup(tmp_path: Path) -> Iterator[Path]:
    directory = _v1_memory_root() / f"mlops-oom-test-{os.getpid()}-{tmp_path.name}"
    directory.mkdir()
    try:
        yield directory
    finally:
        for pid in (directory / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), 9)
        deadline = time.monotonic() + 30
        while (directory / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.1)
        directory.rmdir()


def _join(directory: Path, oom_score_adj: int | None = None) -> None:
    """preexec_fn: the new process enters ``directory`` (and takes ``oom_score_adj``, which may only be
    raised without privilege) before it runs a line of Python."""
    (directory / "cgroup.procs").write_text(str(os.getpid()))
    if oom_score_adj is not None:
        Path("/proc/self/oom_score_adj").write_text(str(oom_score_adj))


def _ranks(parent: int) -> list[int]:
    """The spawned training processes among ``parent``'s children (not multiprocessing's resource tracker)."""
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    return [int(pid) for pid in children if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]


def _run_child(out: Path, directory: Path | None) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(out), str(EPOCHS)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=None if directory is None else (lambda: _join(directory)),  # noqa: PLW0108
    )


def test_a_rank_killed_by_the_oom_killer_is_named_and_the_rerun_resumes(cgroup: Path, tmp_path: Path) -> None:
    child = _run_child(tmp_path, cgroup)
    checkpoint = tmp_path / "ckpt" / CHECKPOINT_FILE
    deadline = time.monotonic() + 600
    while not checkpoint.is_file():
        assert child.poll() is None, child.stdout.read() if child.stdout else ""
        assert time.monotonic() < deadline, "no checkpoint within 10 minutes"
        time.sleep(0.05)
    watched = memory_cgroup(child.pid)
    assert watched is not None and watched.directory == cgroup
    ranks = _ranks(child.pid)
    assert len(ranks) == 2, ranks
    for rank in ranks:  # a rank must go, not the launcher that reports it
        Path(f"/proc/{rank}/oom_score_adj").write_text("1000")
    usage = int((cgroup / "memory.usage_in_bytes").read_text())
    (cgroup / "memory.limit_in_bytes").write_text(str(usage + (256 << 20)))
    ballast = subprocess.Popen(
        [sys.executable, "-c", BALLAST],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: _join(cgroup, oom_score_adj=500),
    )
    try:
        while watched.oom_kills() == 0 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        (cgroup / "memory.limit_in_bytes").write_text("-1")
        output, _ = child.communicate(timeout=300)
        ballast_killed = ballast.poll() is not None  # nothing but the OOM killer ends it before this
    finally:
        ballast.kill()
        ballast.wait()
    print(output[-3000:])
    assert child.returncode != 0, output[-3000:]
    kills = watched.oom_kills()
    # Only the ranks, and the ballast after them: never the launcher (its message below says it lived).
    assert kills is not None and 1 <= kills <= 2 + ballast_killed, (cgroup / "memory.oom_control").read_text()
    assert "was killed before finishing: the kernel's out-of-memory killer ended it" in output, output[-3000:]
    assert f"memory cgroup {cgroup}" in output and "A re-run resumes from the last checkpoint" in output

    rerun = _run_child(tmp_path, None)
    output, _ = rerun.communicate(timeout=900)
    assert rerun.returncode == 0, output[-3000:]
    line = next(x for x in output.splitlines() if x.startswith("RESUMED_FROM="))
    resumed = int(line.split()[0].split("=")[1])
    print(f"OOM kill after {usage / 2**20:.0f} MiB in use: {line}")
    assert 1 <= resumed < EPOCHS, line
    assert line.endswith(f"EPOCHS={list(range(1, EPOCHS + 1))}"), line
