"""KFP wrapper for :mod:`components.prepare_data.data_source`."""

from typing import NamedTuple

from kfp import dsl
from kfp.dsl import Dataset, Output

from mlops.images import PLATFORM_IMAGE


@dsl.component(base_image=PLATFORM_IMAGE, install_kfp_package=False)
def prepare_data(data: dict, data_uri: str, sample: Output[Dataset]) -> NamedTuple(  # type: ignore[valid-type]
    "PreparedData", [("data_uri", str), ("is_sample", bool), ("feature_lineage", str)]
):
    """Returns ``data_uri`` if set, else writes the sample dataset and returns its location; with
    ``data.features.service`` set, writes the entity table ``data_uri`` joined point-in-time with that
    feature service and returns its location.

    ``data`` is the ``data`` section (:class:`~components.prepare_data.config.DataSettings`) and
    ``data_uri`` its per-run setting ``data.uri``;
    ``is_sample`` tells validate-data whether the sample's declaration applies;
    ``feature_lineage`` is the feature store's lineage record as JSON (empty unless from the feature store),
    which registration turns into version tags.
    """
    from collections import namedtuple
    from pathlib import Path

    from components.prepare_data.config import DataSettings
    from components.prepare_data.data_source import prepare
    from mlops.settings import from_section

    settings = from_section(DataSettings, data, uri=data_uri)
    PreparedData = namedtuple("PreparedData", ["data_uri", "is_sample", "feature_lineage"])
    prepared = prepare(settings, Path(sample.path))
    if prepared.source == "file":
        return PreparedData(prepared.uri, False, "")
    if prepared.source == "sample":
        sample.metadata["rows"] = settings.sample.rows
    else:
        sample.metadata["feature_service"] = settings.features.service
    # On a cluster sample.path is a FUSE mount of sample.uri; other pods read the URI.
    where = sample.uri if sample.uri.startswith("s3://") else sample.path
    return PreparedData(where, prepared.source == "sample", prepared.feature_lineage)
