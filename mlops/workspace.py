"""Where the embedded default keeps its state: one directory for everything.

The MLflow SQLite store, MLflow's artifact root and the KFP local pipeline root
all live under one workspace so that moving it (``--workspace`` or
``MLOPS_WORKSPACE`` read once by the CLI) moves everything together.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_WORKSPACE = Path(".mlops")


@dataclass(frozen=True)
class Workspace:
    """A local workspace directory.

    Attributes:
        root: Directory holding the tracking DB, artifacts and pipeline runs.
            Stored absolute so subprocesses started elsewhere agree on it.
    """

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root).expanduser().resolve())
        if self.root.exists() and not self.root.is_dir():
            raise ValueError(f"workspace {self.root} exists and is not a directory; pick another --workspace")

    @property
    def tracking_db(self) -> Path:
        return self.root / "mlflow.db"

    @property
    def tracking_uri(self) -> str:
        return f"sqlite:///{self.tracking_db}"

    @property
    def artifact_root(self) -> str:
        return (self.root / "artifacts").as_uri()

    @property
    def pipeline_root(self) -> Path:
        return self.root / "pipeline-runs"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def create(self) -> Workspace:
        for path in (self.root, self.root / "artifacts", self.pipeline_root, self.data_dir):
            path.mkdir(parents=True, exist_ok=True)
        return self


def workspace_of(tracking_uri: str) -> Path | None:
    """The directory of a ``sqlite:///…/mlflow.db`` store (the workspace whose state sits beside it), else None.

    Where a library call has no workspace but tracks into one, its audit trail and signing
    key default to that workspace, the same places the CLI uses.
    """
    if not tracking_uri.startswith("sqlite:///"):
        return None
    return Path(tracking_uri.removeprefix("sqlite:///")).expanduser().resolve().parent
