"""Resolve the pipeline's input data: the user's file, or the built-in sample.

An empty ``data_uri`` means "generate the sample dataset", so the pipeline runs
from the KFP UI with its defaults and ``mlops run training`` needs no data.
"""

from __future__ import annotations

from pathlib import Path

from mlops.sample_data import SampleDataConfig, generate


def resolve_data(data_uri: str, sample_out: Path, sample_rows: int, sample_seed: int) -> str:
    """Return the URI the validation step should read; the sample is written as Parquet."""
    uri = data_uri.strip()
    if uri:
        if not uri.startswith("s3://") and not Path(uri.removeprefix("file://")).is_file():
            raise FileNotFoundError(
                f"data_uri {uri!r} is not an existing file; pass a CSV/Parquet path or an s3:// URI"
            )
        return uri
    sample_out.parent.mkdir(parents=True, exist_ok=True)
    generate(SampleDataConfig(n_rows=sample_rows, seed=sample_seed)).to_parquet(sample_out, index=False)
    return str(sample_out)
