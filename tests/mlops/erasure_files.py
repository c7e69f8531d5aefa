"""The rows the erasure tests write: one person's key (``WHO``), a fixed salt, and Parquet files of logged
requests, shared by tests/mlops/test_erasure_requests_and_records.py and test_erasure_rewrites.py."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mlops.governance.erasure import SALT_BYTES

WHO = "C-7f3a9"
SALT = b"s" * SALT_BYTES


def parquet(path: Path, frame: pd.DataFrame) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path, index=False)
    return str(path)


def logged(path: Path, subjects: list[str | None], ids: list[str] | None = None) -> str:
    ids = ids or [f"r{i}" for i in range(len(subjects))]
    frame = pd.DataFrame(
        {"age": [30.0 + i for i in range(len(subjects))], "customer_id": subjects, "request_id": ids}
    )
    return parquet(path, frame.assign(request_row=pd.Series([0] * len(subjects), dtype="int32")))
