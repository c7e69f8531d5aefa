"""A training set's feature-store lineage record as version tags (registration writes them; its test checks
they arrive), and ``mlops lineage`` printing them in its chain."""

from __future__ import annotations

from mlops.governance.provenance import lineage_lines
from mlops.vocabulary import feature_lineage_tags

RECORD = {
    "feature_service": "telco_churn_service",
    "project": "mlops",
    "feature_views": {
        "telco_churn": {
            "features": ["tenure", "Contract"],
            "join_keys": ["customerID"],
            "ttl_seconds": 604800,
            "definition_sha256": "a" * 64,
        }
    },
    "entity_table": {"uri": "/data/labels.csv", "sha256": "e" * 64, "rows": 3},
    "training_set": {"path": "/x/sample", "sha256": "t" * 64, "rows": 3},
    "rows_without_features": 0,
}


def test_the_record_becomes_tags_and_the_lineage_prints_them() -> None:
    tags = feature_lineage_tags(RECORD)
    assert tags["mlops.features.service"] == "telco_churn_service"
    assert (
        tags["mlops.features.view.telco_churn"] == f"sha256:{'a' * 64} ttl=604800s features=tenure,Contract"
    )
    assert tags["mlops.features.entity_table_sha256"] == "e" * 64
    assert feature_lineage_tags({}) == {}
    text = "\n".join(lineage_lines("churn", "champion", "1", tags, []))
    assert "feature service    telco_churn_service (Feast project mlops)" in text
    assert f"view telco_churn   sha256:{'a' * 64} ttl=604800s features=tenure,Contract" in text
    assert f"entity table       sha256 {'e' * 64} (/data/labels.csv)" in text
    assert "feature service" not in "\n".join(lineage_lines("m", "champion", "1", {}, []))
