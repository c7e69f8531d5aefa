"""Run by the Feast venv's python, never imported by the platform: the one place that imports ``feast``.

``python feast_entry.py REQUEST.json`` reads what to do from the request file and answers with files:
``historical`` runs ``get_historical_features`` (the point-in-time join) for a feature service over an
entity table (Parquet in, Parquet out, every input row kept in its order, null features where none joined) and writes the service's description (its
feature views, their features and TTLs, and a sha256 of each view's Feast definition) as JSON. A failure is
one ``mlops-feast-error: Type: message`` line on stderr and exit status 1.
"""

import hashlib
import json
import sys

TIME = "event_timestamp"
"""The entity table's time column as the platform passes it (Feast's name for it)."""


def definition(spec, repo):  # noqa: ANN001, ANN201
    """The view's definition as bytes that change only when the definition does: its source's bookkeeping
    times (``meta``: set at every ``feast apply``) left out, a file source's path made relative to the
    repository (Feast stores it absolute, so a moved or copied repository would hash differently)."""
    import os

    for source in (spec.batch_source, spec.stream_source):
        source.ClearField("meta")
        if source.HasField("file_options"):
            root = os.path.abspath(str(repo)) + os.sep
            if source.file_options.uri.startswith(root):
                source.file_options.uri = source.file_options.uri[len(root) :]
    return spec.SerializeToString(deterministic=True)


def describe(store, service):  # noqa: ANN001, ANN201 - Feast's types exist only in its venv
    views = {}
    for projection in service.feature_view_projections:
        view = store.get_feature_view(projection.name)
        spec = definition(view.to_proto().spec, store.repo_path)
        views[projection.name] = {
            "features": [feature.name for feature in projection.features],
            "join_keys": [column.name for column in view.entity_columns],
            "ttl_seconds": int(view.ttl.total_seconds()) if view.ttl else 0,
            "definition_sha256": hashlib.sha256(spec).hexdigest(),
        }
    return {"service": service.name, "project": store.project, "feature_views": views}


def historical(request):  # noqa: ANN001, ANN201
    import pandas as pd
    from feast import FeatureStore
    from feast.errors import FeatureServiceNotFoundException

    store = FeatureStore(repo_path=request["repo"])
    try:
        service = store.get_feature_service(request["service"])
    except FeatureServiceNotFoundException:
        names = sorted(s.name for s in store.list_feature_services())
        raise LookupError(
            f"no feature service {request['service']!r} in the repository (it has {names}); "
            "a new or renamed one needs `mlops features apply` first"
        ) from None
    entities = pd.read_parquet(request["entities"])
    description = describe(store, service)
    keys = sorted({key for view in description["feature_views"].values() for key in view["join_keys"]})
    absent = [key for key in keys if key not in entities.columns]
    if absent:
        raise LookupError(
            f"the entity table has no column {absent[0]!r}, a join key of feature service {service.name!r}"
        )
    # Feast joins each distinct (keys, time) once: the file offline store collapses repeated entity rows and
    # drops a row that finds no value within the TTL. Joining its answer back onto the entity table keeps every
    # row, in its order, with null features where none joined.
    on = [*keys, TIME]
    entities[TIME] = pd.to_datetime(entities[TIME], utc=True).astype("datetime64[ns, UTC]")
    joined = store.get_historical_features(entity_df=entities[on].drop_duplicates(), features=service).to_df()
    joined[TIME] = pd.to_datetime(joined[TIME], utc=True).astype("datetime64[ns, UTC]")
    features = [column for column in joined.columns if column not in entities.columns]
    joined = entities.merge(joined[[*on, *features]], on=on, how="left", validate="many_to_one")
    joined.to_parquet(request["out"], index=False)
    with open(request["description"], "w") as handle:
        json.dump(description, handle)


def main():  # noqa: ANN201
    with open(sys.argv[1]) as handle:
        request = json.load(handle)
    try:
        {"historical": historical}[request["action"]](request)
    except Exception as exc:  # every failure is reported as one line the platform shows
        message = " ".join(str(exc).split())
        print(f"mlops-feast-error: {type(exc).__name__}: {message}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
