"""Start ``nproc`` data-parallel training processes on this machine, torchrun-style.

The mechanism behind :class:`training.launcher.LocalProcessesLauncher`.

The parent owns the rendezvous: it opens a ``torch.distributed.TCPStore`` on
127.0.0.1 with port 0, so the OS picks a free port and the parent keeps it
bound until every worker has exited (no probe-then-bind race between
concurrent tasks, no port left behind). Workers are started with
``torch.multiprocessing.start_processes`` (spawn: a clean interpreter per rank,
safe with threads and CUDA), join the process group through that store and
always destroy it before they exit.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from training.memory_cgroup import killed_because, memory_cgroup

HOST = "127.0.0.1"
TIMEOUT = timedelta(minutes=30)
"""Longest a rank waits for the others (rendezvous or a collective) before failing instead of hanging."""


class DistributedTrainingError(RuntimeError):
    """A training process failed; the message carries the failing rank's error."""


def _rank_main(
    rank: int,
    world_size: int,
    port: int,
    backend: str,
    error_dir: str,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
) -> None:
    os.environ.update(MASTER_ADDR=HOST, MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world_size))
    store = dist.TCPStore(HOST, port, world_size=None, is_master=False, timeout=TIMEOUT)
    if backend == "nccl":
        torch.cuda.set_device(rank)
    dist.init_process_group(backend, store=store, rank=rank, world_size=world_size, timeout=TIMEOUT)
    try:
        fn(rank, world_size, *args)
    except BaseException as exc:
        # Stamped before this rank's sockets close, i.e. before the other ranks' follow-on errors.
        record = {"time": time.time(), "error": f"{type(exc).__name__}: {exc}"}
        # Whole or not at all: a rank terminated while writing (the others are, once one fails) leaves no
        # half-written record for the parent to read.
        partial = Path(error_dir) / f"rank{rank}.json.partial"
        partial.write_text(json.dumps(record))
        partial.replace(partial.with_suffix(""))
        raise
    finally:
        dist.destroy_process_group()


def _root_cause(error_dir: str) -> tuple[int, str] | None:
    """The rank that failed first and its error: the others usually fail only because it left."""
    records = []
    for path in Path(error_dir).glob("rank*.json"):
        try:
            record = json.loads(path.read_text())
            records.append((record["time"], int(path.stem.removeprefix("rank")), record["error"]))
        except (ValueError, KeyError, TypeError):
            continue  # not a whole record: that rank says nothing about the cause
    if not records:
        return None
    _, rank, error = min(records)
    return rank, error


def launch(fn: Callable[..., Any], nproc: int, backend: str, args: tuple[Any, ...]) -> None:
    """Run ``fn(rank, nproc, *args)`` in ``nproc`` spawned processes and wait for all of them.

    ``fn`` and ``args`` must be picklable (a module-level function, plain data).
    If a rank fails the others are terminated and :class:`DistributedTrainingError`
    is raised with the error of the rank that failed first.
    """
    if nproc < 2:
        raise ValueError(f"launch needs nproc >= 2, got {nproc}; call the function directly for one process")
    store = dist.TCPStore(HOST, 0, world_size=None, is_master=True, timeout=TIMEOUT, wait_for_workers=False)
    cgroup = memory_cgroup()  # the ranks share it: its OOM-kill count tells the OOM killer from a kill -9
    kills_before = cgroup.oom_kills() if cgroup is not None else None
    with tempfile.TemporaryDirectory(prefix="mlops-ranks-") as error_dir:
        try:
            mp.start_processes(
                _rank_main,
                args=(nproc, store.port, backend, error_dir, fn, args),
                nprocs=nproc,
                join=True,
                start_method="spawn",
            )
        except (mp.ProcessRaisedException, mp.ProcessExitedException) as exc:
            cause = _root_cause(error_dir)
            killed = (
                isinstance(exc, mp.ProcessExitedException)
                and not (Path(error_dir) / f"rank{exc.error_index}.json").exists()
            )
            if cause is not None and not killed:
                rank, error = cause
                raise DistributedTrainingError(f"training process {rank} of {nproc} failed: {error}") from exc
            code = getattr(exc, "exit_code", None)
            because = killed_because(getattr(exc, "signal_name", None), cgroup, kills_before)
            if because:
                raise DistributedTrainingError(
                    f"training process {exc.error_index} of {nproc} was killed before finishing: {because}. "
                    "A re-run resumes from the last checkpoint"
                ) from exc
            raise DistributedTrainingError(
                f"training process {exc.error_index} of {nproc} exited with code {code} before finishing "
                "(killed, out of memory, or failed while starting: its traceback is in the log above; spawned "
                "processes re-import the caller's __main__, which must guard its code with "
                "`if __name__ == '__main__':`)"
            ) from exc
        finally:
            del store
