"""Resolve the pipeline's input data: the user's file, or the built-in sample.

An empty ``data.uri`` means "generate the sample dataset", so the pipeline runs
from the KFP UI with its defaults and ``mlops run training`` needs no data.
"""

from __future__ import annotations

from pathlib import Path

from components.prepare_data.config import DataSettings
from mlops.data.sample_data import generate


def resolve_data(settings: DataSettings, sample_out: Path) -> str:
    """Return the URI the validation step should read; the sample is written as Parquet."""
    uri = settings.uri.strip()
    if uri:
        if not uri.startswith("s3://") and not Path(uri.removeprefix("file://")).is_file():
            raise FileNotFoundError(
                f"data.uri {uri!r} is not an existing file; pass a CSV/Parquet path or an s3:// URI"
            )
        return uri
    sample_out.parent.mkdir(parents=True, exist_ok=True)
    generate(settings.sample).to_parquet(sample_out, index=False)
    return str(sample_out)
