"""Which declaration a run's data is checked against: a schema file, the built-in sample's, or the parameters.

Sample-only defaults (the credit-default suite, the sample's behavioural tests) apply
only to the built-in sample. User data brings its own declaration (``schema_uri``, from
``mlops data init``) or at least its own suite; nothing the sample declares is applied
to it. Every column a declaration or a setting names is checked here, at validate-data,
so a typo fails before any training, naming the column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from components.data_validation.config import DataValidationSettings
from components.data_validation.suite import DEFAULT_SUITE_PATH
from mlops.data.behaviour import DirectionalTest, InvarianceTest
from mlops.data.dataset import DatasetError, DatasetSchema
from mlops.data.sample_data import SAMPLE_ALLOWED_LEAKS, SAMPLE_DIRECTIONAL_TESTS, SAMPLE_INVARIANCE_TESTS
from mlops.data.schema_file import load_schema_file

BEHAVIOURAL_METADATA_KEY = "behavioural"
"""Key of the behavioural tests in a Dataset artifact's metadata (``{"invariance": [...], "directional": [...]}``)."""


@dataclass(frozen=True)
class Declaration:
    """What the data must be: its schema, its suite, the behavioural tests its model must pass."""

    schema: DatasetSchema
    suite_uri: str
    invariance: tuple[InvarianceTest, ...]
    directional: tuple[DirectionalTest, ...]
    source: str
    """Where the declaration came from, in words (for messages and reports)."""
    reasons: dict[str, str] = field(default_factory=dict)
    """The schema file's reason texts per feature: what a served or scored reason says to a person."""

    def behavioural_metadata(self) -> dict[str, list[dict[str, Any]]]:
        return {
            "invariance": [t.model_dump(mode="json") for t in self.invariance],
            "directional": [t.model_dump(mode="json") for t in self.directional],
        }

    def check_columns(self) -> None:
        """Every behavioural test names a model feature (directional ones a numeric feature)."""
        features = set(self.schema.features)
        tests: tuple[InvarianceTest | DirectionalTest, ...] = (*self.invariance, *self.directional)
        problems = [
            f"{test.name} names column {test.feature!r}, which is not a model feature"
            for test in tests
            if test.feature not in features
        ]
        problems += [
            f"{test.name} names column {test.feature!r}, which is categorical; directional tests need a "
            "numeric feature"
            for test in self.directional
            if test.feature in self.schema.categorical_features
        ]
        if problems:
            raise DatasetError(
                f"behavioural tests ({self.source}) cannot run: {'; '.join(problems)}. Model features: "
                f"{sorted(features)}. Fix the test (schema file or --invariance/--directional); nothing was trained."
            )


def resolve(
    parameters: DatasetSchema,
    settings: DataValidationSettings,
    sample: bool,
    invariance: Sequence[InvarianceTest] = (),
    directional: Sequence[DirectionalTest] = (),
) -> Declaration:
    """The run's declaration; behavioural tests given as settings replace the declared ones."""
    suite = settings.expectation_suite.strip()
    reasons: dict[str, str] = {}
    if settings.schema_uri.strip():
        uri = settings.schema_uri.strip()
        declared = load_schema_file(uri)
        schema, source = declared.dataset_schema, f"schema file {uri}"
        suite = suite or declared.suite_uri(uri)
        tests = (declared.invariance, declared.directional)
        reasons = dict(declared.reasons)
        if not suite:
            raise DatasetError(
                f"schema file {uri} names no expectation_suite and none was given; add the suite path to the "
                "file or pass --validation.expectation_suite FILE"
            )
    elif sample:
        known = [
            c for c in SAMPLE_ALLOWED_LEAKS if c in parameters.features and c not in parameters.allowed_leaks
        ]
        schema = parameters.model_copy(update={"allowed_leaks": (*parameters.allowed_leaks, *known)})
        source = "the built-in sample"
        suite = suite or str(DEFAULT_SUITE_PATH)
        tests = (SAMPLE_INVARIANCE_TESTS, SAMPLE_DIRECTIONAL_TESTS)
    else:
        schema, source = parameters, "pipeline parameters"
        tests = ((), ())
        if not suite:
            raise DatasetError(
                "user data needs its own declaration: the built-in suite describes only the sample. Run "
                "`mlops data init --data FILE --label COLUMN` and pass --schema FILE (or --validation.expectation_suite FILE)"
            )
    if invariance or directional:
        tests = (tuple(invariance), tuple(directional))
        source = "the invariance/directional settings"
    declaration = Declaration(schema, suite, tuple(tests[0]), tuple(tests[1]), source, reasons)
    declaration.check_columns()
    return declaration
