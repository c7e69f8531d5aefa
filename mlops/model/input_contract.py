"""Can a registered model score a dataset? Its input contract (the fitted :class:`FeatureSpec`) against a schema.

A second dataset trained under an existing model's name would register a version the
champion cannot be compared with; this says so, naming the columns, before anything trains.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mlops.data.dataset import DatasetSchema
    from mlops.data.features import FeatureSpec


def contract_problems(spec: FeatureSpec, schema: DatasetSchema) -> list[str]:
    """What keeps a model with input contract ``spec`` from scoring (and being compared on) data declared
    by ``schema``, one phrase each; empty when nothing does."""
    problems = []
    if spec.label and spec.label != schema.label:
        problems.append(f"it predicts label {spec.label!r}, this data's label is {schema.label!r}")
    declared = set(schema.columns)
    absent = [name for name in (*spec.numeric, *spec.categorical) if name not in declared]
    if absent:
        problems.append(f"it needs column(s) {absent} that this data does not declare")
    retyped = [name for name in spec.numeric if name in schema.categorical_features]
    if retyped:
        problems.append(f"column(s) {retyped} are numeric for it and categorical here")
    return problems
