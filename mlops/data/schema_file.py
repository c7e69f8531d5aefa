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

from pydantic import Field, ValidationError, model_validator

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
    # --- model card: what only a person can declare ---
    card: CardFields = Field(default_factory=CardFields)
    """What only a person can say on the model card: intended use, users, limitations, owners (mlops card)."""

    # --- the model this data trains: one dataset, one registered model ---
    model_name: str = Field(default="", pattern=r"^$|" + NAME_PATTERN)
    """Registered model this data trains (`mlops data init` writes the file's stem); empty: registration.model_name."""

    # --- reasons served with each score: one text per feature (mlops.model.row_attribution) ---
    reasons: dict[str, str] = Field(default_factory=dict)
    """The text a person reads when a feature is among the reasons for a score (adverse-action reasons), e.g. {credit_score: "Credit score too low"}; a feature not named here reads "<feature> = <value>"."""

    @model_validator(mode="after")
    def _reasons_name_features(self) -> SchemaFile:
        self.require_features(
            "reasons",
            self.reasons,
            "reasons explain the model's inputs only: fix the name or remove the entry",
        )
        blank = [name for name, text in self.reasons.items() if not text.strip()]
        if blank:
            raise ValueError(
                f"reasons gives {blank} an empty text; write the sentence a person reads, or remove it"
            )
        return self

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

    def to_yaml(self, header: str = "", omit: tuple[str, ...] = ()) -> str:
        """The file's text: ``header`` as comments, then every field but those in ``omit`` (left to their
        defaults, e.g. a fairness setting nobody declared)."""
        import yaml

        document = {k: v for k, v in self.model_dump(mode="json").items() if k not in omit}
        document["invariance"] = [t.model_dump(mode="json") for t in self.invariance]
        document["directional"] = [t.model_dump(mode="json") for t in self.directional]
        comments = "".join(f"# {line}\n".replace("# \n", "#\n") for line in header.splitlines())
        text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
        if "\x85" in text:  # PyYAML writes a NEL raw in single quotes, and reads it back as a space
            text = yaml.safe_dump(document, sort_keys=False, allow_unicode=False, width=100)
        return comments + text


def _loader() -> type:
    """``yaml.safe_load``'s loader, but a key written twice in one mapping is an error (PyYAML would
    keep the last one silently: a second ``label:`` replacing the first)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # `<<: *defaults`: keys given beside it override the merged ones, as YAML says
                key = self.construct_object(key_node, deep=True)
                try:
                    twice = key in seen
                except TypeError:
                    continue  # an unhashable key: SafeLoader's own error names it
                if twice:
                    raise yaml.constructor.ConstructorError(
                        "while reading a mapping",
                        node.start_mark,
                        f"found the key {key!r} twice",
                        key_node.start_mark,
                    )
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def _text_keys(value: Any, uri: str, where: str = "") -> None:
    """Refuse a key YAML read as something other than text (``yes:``, ``1:``, ``~:``), naming it."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(value, dict) and not isinstance(key, str):
            raise DatasetError(
                f"schema file {uri}: the key {key!r}{f' in {where}' if where else ''} is not text "
                f"(YAML reads it as {type(key).__name__}); quote it, e.g. '{key}': …, or remove it"
            )
        _text_keys(item, uri, f"{where}.{key}" if where else str(key))


def _whole_characters(value: Any, uri: str) -> Any:
    """``value`` with every UTF-16 surrogate pair joined into its character: YAML reads the escapes of a
    JSON file written with ``ensure_ascii`` (``"\\ud83d\\ude00"``) one by one, leaving two halves."""
    if isinstance(value, dict):
        return {_whole_characters(k, uri): _whole_characters(v, uri) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_characters(item, uri) for item in value]
    if isinstance(value, str) and any("\ud800" <= c <= "\udfff" for c in value):
        try:
            return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
        except UnicodeDecodeError as exc:
            raise DatasetError(
                f"schema file {uri}: the text {value!r} holds half of a UTF-16 surrogate pair (an escape "
                "\\ud800-\\udfff without its other half); write the character itself"
            ) from exc
    return value


def parse_schema_file(text: str, uri: str) -> SchemaFile:
    """A schema file's text as a :class:`SchemaFile`; a :class:`DatasetError` names the bad field."""
    import yaml

    try:
        raw: Any = yaml.load(text, Loader=_loader())  # noqa: S506 - a SafeLoader subclass
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: an integer of over 4300 digits
        raise DatasetError(f"schema file {uri} is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise DatasetError(f"schema file {uri} must be a mapping of settings (label: …, numeric_features: …)")
    _text_keys(raw, uri)
    raw = _whole_characters(raw, uri)
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
