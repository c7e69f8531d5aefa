"""Per-epoch checkpoints that let a killed or retried task continue where it stopped.

A checkpoint holds everything the next epoch depends on (weights, optimizer and
grad-scaler state, every rank's RNG states, early-stopping state, history), so
a resumed run ends with exactly the metrics of an uninterrupted one. It is
written to a temporary file and renamed over ``last.pt``: a kill during the
write leaves the previous checkpoint intact, never a torn file.

Each checkpoint records a fingerprint of the data and of every setting except
``epochs``; resuming with a different fingerprint is refused, because it would
silently mix two different trainings. Raising ``epochs`` continues a finished
run.

A job whose pods do not outlive it (a Kubernetes training job) also mirrors each
checkpoint to a storage URI (``s3://…`` or a path, through :mod:`mlops.storage`):
the writer uploads ``last.pt`` after every local write, and :func:`fetch_checkpoint`
brings it back into a restarted pod's scratch directory before training resumes.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mlops import storage
from training.config import Runtime, TrainConfig

CHECKPOINT_FILE = "last.pt"
FORMAT_VERSION = 1


@dataclass
class EarlyStopping:
    """Patience bookkeeping on validation ROC AUC (higher is better; ties do not count as progress)."""

    patience: int
    """Epochs without improvement before stopping; 0 never stops."""
    best_auc: float = float("-inf")
    """Best validation AUC seen so far."""
    best_epoch: int = 0
    """1-based epoch that reached ``best_auc``; 0 before the first epoch."""
    bad_epochs: int = 0
    """Consecutive epochs since the last improvement."""
    stopped: bool = False
    """True once patience ran out; a resumed run then trains no further."""

    def update(self, epoch: int, val_auc: float) -> bool:
        """Record one epoch; return True when it is the new best."""
        if val_auc > self.best_auc:
            self.best_auc, self.best_epoch, self.bad_epochs = val_auc, epoch, 0
            return True
        self.bad_epochs += 1
        if self.patience and self.bad_epochs >= self.patience:
            self.stopped = True
        return False


@dataclass
class Checkpoint:
    fingerprint: str
    """:func:`fingerprint` of the run that wrote it."""
    epoch: int
    """Completed epochs."""
    model: dict[str, torch.Tensor]
    """Current weights (training continues from these); a copy, not the live parameters."""
    best_model: dict[str, torch.Tensor]
    """Weights of the best epoch (restored at the end)."""
    optimizer: dict[str, Any]
    scaler: dict[str, Any]
    early_stopping: EarlyStopping
    history: list[dict[str, float]]
    """One dict of metrics per completed epoch."""
    rng: list[dict[str, Any]] = field(default_factory=list)
    """Per rank, the RNG states from :func:`capture_rng`."""


def fingerprint(config: TrainConfig, runtime: Runtime, data_fingerprint: str) -> str:
    """Identity of a training trajectory: everything that changes it except how long it runs."""
    settings = config.model_dump(mode="json", exclude={"epochs"})
    settings["runtime"] = asdict(runtime)
    payload = json.dumps(settings, sort_keys=True) + data_fingerprint
    return hashlib.sha256(payload.encode()).hexdigest()


def capture_rng(device_type: str) -> dict[str, Any]:
    """This process's RNG states, in types ``torch.load(weights_only=True)`` accepts."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    version, internal, gauss = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state() if device_type == "cuda" else None,
        "numpy": [kind, torch.from_numpy(np.asarray(keys, dtype=np.int64)), pos, has_gauss, cached],
        "python": [version, list(internal), gauss],
    }


def restore_rng(state: dict[str, Any], device_type: str) -> None:
    torch.set_rng_state(state["torch"])
    if device_type == "cuda" and state["cuda"] is not None:
        torch.cuda.set_rng_state(state["cuda"])
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))


def save_checkpoint(directory: Path, checkpoint: Checkpoint) -> Path:
    """Write atomically: temp file in the same directory, fsync, rename over ``last.pt``."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / CHECKPOINT_FILE
    temp = directory / f".{CHECKPOINT_FILE}.{os.getpid()}.tmp"
    payload = asdict(checkpoint)
    payload["format"] = FORMAT_VERSION
    try:
        with temp.open("wb") as handle:
            torch.save(payload, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)
    return target


class CheckpointWriter:
    """Writes checkpoints on a background thread, so serialising and fsync overlap the next epoch.

    At most one write is in flight: :meth:`submit` first waits for the previous
    one, so checkpoints land in epoch order and a failed write surfaces at the
    next :meth:`submit` or at :meth:`close`. A kill during a write leaves the
    previous epoch's checkpoint, and a resumed run repeats that one epoch.
    """

    def __init__(self, directory: Path, mirror_uri: str | None = None) -> None:
        self.directory = directory
        self.mirror_uri = mirror_uri
        """Where each written checkpoint is also uploaded (``<mirror_uri>/last.pt``); None: local only."""
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpoint-writer")
        self._pending: Future[Path] | None = None

    def submit(self, checkpoint: Checkpoint) -> None:
        """Queue ``checkpoint``; it is snapshotted here, so training may mutate its sources right after."""
        snapshot = replace(
            checkpoint,
            optimizer=copy.deepcopy(checkpoint.optimizer),
            early_stopping=replace(checkpoint.early_stopping),
            history=list(checkpoint.history),
        )
        self.wait()
        self._pending = self._pool.submit(self._write, snapshot)

    def _write(self, checkpoint: Checkpoint) -> Path:
        target = save_checkpoint(self.directory, checkpoint)
        if self.mirror_uri is not None:  # after the local rename: only whole checkpoints are uploaded
            storage.write_file(f"{self.mirror_uri.rstrip('/')}/{CHECKPOINT_FILE}", target)
        return target

    def wait(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def close(self) -> None:
        """Wait for the last write (re-raising its error) and stop the thread."""
        try:
            self.wait()
        finally:
            self._pool.shutdown(wait=True)


def fetch_checkpoint(mirror_uri: str, directory: Path) -> bool:
    """Copy ``<mirror_uri>/last.pt`` into ``directory`` if a previous attempt uploaded one; True if it did."""
    source = f"{mirror_uri.rstrip('/')}/{CHECKPOINT_FILE}"
    if not storage.exists(source):
        return False
    directory.mkdir(parents=True, exist_ok=True)
    (directory / CHECKPOINT_FILE).write_bytes(storage.read_bytes(source))
    return True


def load_checkpoint(directory: Path | None, expected_fingerprint: str) -> Checkpoint | None:
    """The checkpoint in ``directory``, or None when there is none yet."""
    if directory is None or not (directory / CHECKPOINT_FILE).is_file():
        return None
    path = directory / CHECKPOINT_FILE
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # pickle/zip errors: the file is not a checkpoint we wrote
        reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"cannot read checkpoint {path} ({reason}); it is torn or not from this trainer: "
            "delete it to start training afresh"
        ) from exc
    if payload.pop("format", None) != FORMAT_VERSION:
        raise ValueError(f"checkpoint {path} has an unknown format; delete it to start training afresh")
    if payload["fingerprint"] != expected_fingerprint:
        raise ValueError(
            f"checkpoint {path} was written by a run with different data or settings (only 'epochs' may "
            "change when resuming); pass another checkpoint_dir or delete this one to start afresh"
        )
    payload["early_stopping"] = EarlyStopping(**payload["early_stopping"])
    return Checkpoint(**payload)
