"""KFP wrapper for :mod:`components.prepare_data.core`."""

from kfp import dsl
from kfp.dsl import Dataset, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def prepare_data(data_uri: str, sample_rows: int, sample_seed: int, sample: Output[Dataset]) -> str:
    """Returns ``data_uri`` if set, else writes the sample dataset and returns its location."""
    from pathlib import Path

    from components.prepare_data.core import resolve_data

    uri = resolve_data(data_uri, Path(sample.path), sample_rows, sample_seed)
    if uri == sample.path:
        sample.metadata["rows"] = sample_rows
        # On a cluster sample.path is a FUSE mount of sample.uri; other pods read the URI.
        return sample.uri if sample.uri.startswith("s3://") else sample.path
    return uri
