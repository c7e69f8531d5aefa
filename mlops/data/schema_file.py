"""The schema file: a dataset's editable, versionable declaration (``mlops data init`` writes it).

One YAML file says what the columns mean (the :class:`~mlops.data.dataset.DatasetSchema`
fields, flat), which expectation suite guards the data (a path relative to the file, or
an ``s3://`` URI) and which behavioural tests the model must pass. ``mlops run training
--schema FILE`` (the ``schema_uri`` pipeline parameter) hands it to validate-data, which
reads it, checks every column it names and passes the declaration on with the data.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from pydantic import Field, ValidationError

from mlops.data.behaviour import DirectionalTest, InvarianceTest
from mlops.data.card_fields import CardFields
from mlops.data.dataset import DatasetError, DatasetSchema, read_bytes
from mlops.settings import SETTINGS_CONFIG
from mlops.vocabulary import NAME_PATTERN


class SchemaFile(DatasetSchema):
    """Everything a dataset declares: its columns' roles, its expectation suite, its behavioural tests."""

    model_config = SETTINGS_CONFIG

    expectation_suite: str = ""
    """The Great Expectations suite for this data: a path relative to this file, or an s3:// URI."""
    invariance: tuple[InvarianceTest, ...] = Field(default=())
    """Features whose perturbation must not move the score (e.g. a column that must not matter)."""
    directional: tuple[DirectionalTest, ...] = Field(default=())
    """Numeric features whose change must move the score one way."""
    # --- model card (issue 29) ---
    card: CardFields = Field(default_factory=CardFields)
    """What only a person can say on the model card: intended use, users, limitations, owners (mlops card)."""

    # --- the model this data trains (issue 30: one dataset, one registered model) ---
    model_name: str = Field(default="", pattern=r"^$|" + NAME_PATTERN)
    """Registered model this data trains (`mlops data init` writes the file's stem); empty: registration.model_name."""

    @property
    def dataset_schema(self) -> DatasetSchema:
        return DatasetSchema.model_validate(
            {name: getattr(self, name) for name in DatasetSchema.model_fields}
        )

    def suite_uri(self, schema_uri: str) -> str:
        """The suite's location: as written when absolute or ``s3://``, else beside the schema file."""
        suite = self.expectation_suite.strip()
        if not suite or suite.startswith("s3://") or PurePosixPath(suite).is_absolute():
            return suite
        base = schema_uri.removeprefix("file://")
        parent = base.rsplit("/", 1)[0] if "/" in base else "."
        return f"{parent}/{suite}"

    def unknown_columns(self, columns: list[str] | tuple[str, ...]) -> list[str]:
        return sorted(set(self.columns) | set(self.ignored_columns) - set(columns))

    def to_yaml(self, header: str = "") -> str:
        import yaml

        document = self.model_dump(mode="json")
        document["invariance"] = [t.model_dump(mode="json") for t in self.invariance]
        document["directional"] = [t.model_dump(mode="json") for t in self.directional]
        comments = "".join(f"# {line}\n".replace("# \n", "#\n") for line in header.splitlines())
        return comments + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


def parse_schema_file(text: str, uri: str) -> SchemaFile:
    """A schema file's text as a :class:`SchemaFile`; a :class:`DatasetError` names the bad field."""
    import yaml

    try:
        raw: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DatasetError(f"schema file {uri} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise DatasetError(f"schema file {uri} must be a mapping of settings (label: …, numeric_features: …)")
    try:
        return SchemaFile.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}" for err in exc.errors()
        )
        raise DatasetError(
            f"schema file {uri} is invalid: {problems}. Regenerate it with `mlops data init` or fix those fields."
        ) from exc


def load_schema_file(uri: str) -> SchemaFile:
    """Read a schema file from a local path, ``file://`` or ``s3://``."""
    data = read_bytes(uri)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"schema file {uri} is not UTF-8 text: {exc}") from exc
    return parse_schema_file(text, uri)
