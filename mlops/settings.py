"""One source per setting: typed configs in sections, one address per setting.

Every stage's settings are a pydantic model that declares its *section*
(``section: ClassVar[str] = "train"``); each field is a setting with one default, one
description (its docstring) and its validation. A setting's one address is
``section.field`` (nested models go deeper: ``train.model.dropout``), and field names
are unique only within their section, so no name carries a hand-made prefix. The KFP
form, ``mlops run --help`` / ``--set``, MLflow params, schema files and notebooks all
use the address.

A pipeline hands a task one section as one ``dict`` (:func:`section_values`), and the
task rebuilds the config with :func:`from_section`; the few settings a person changes
per run travel as plain parameters beside it and are given to :func:`from_section` as
keyword arguments.

Why text values are decoded here: the KFP UI (and ``--set``) hand over a non-text value
typed into a form as text (``"3"``, ``"[128, 64]"``, ``"true"``), so such a value is
parsed as JSON before validation; a text field is never decoded.
"""

from __future__ import annotations

import difflib
import json
import os
import types
import typing
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Self, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo

ModelT = TypeVar("ModelT", bound=BaseModel)

SETTINGS_CONFIG = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)
"""Every config's conventions: immutable, unknown settings refused, each field's docstring is its
description (the text the KFP UI form, ``--help`` and the compiled YAML show)."""

LOCAL_FILE: dict[str, Any] = {"local_file": True}
"""``json_schema_extra`` of a setting that names a file (or ``s3://`` object): a local run makes a
relative path absolute and checks the file exists before anything runs (tasks run elsewhere)."""


class SettingsError(ValueError):
    """A setting's value or address does not fit its config; the message names it and the fix."""

    def __init__(self, message: str, problems: Sequence[str] = ()):
        super().__init__(message)
        self.problems = list(problems) or [message]
        """One line per problem, each naming its address (``train.epochs: … (got 0)``): every problem of
        every config given, so a run's mistakes are listed at once."""


ENV_PREFIX = "MLOPS_"
"""The prefix of every setting read from the environment (``s3_sse`` ↔ ``MLOPS_S3_SSE``)."""


class EnvSettings(BaseModel):
    """Settings read from the environment, not from a form: each field from ``MLOPS_`` + its
    name in capitals; an unset or empty variable keeps the field's default.

    A subclass names the error an invalid environment raises and what it holds, in words."""

    model_config = SETTINGS_CONFIG

    env_error: ClassVar[type[ValueError]] = SettingsError
    env_subject: ClassVar[str] = "settings"

    @classmethod
    def env_name(cls, field: str) -> str:
        return ENV_PREFIX + field.upper()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        """The settings the environment states; unset variables keep their defaults."""
        environ = os.environ if environ is None else environ
        values = {f: environ[cls.env_name(f)] for f in cls.model_fields if environ.get(cls.env_name(f), "")}
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            problems = "; ".join(
                f"{cls.env_name(str(e['loc'][0]))}={e.get('input')!r}: {e['msg']}" for e in exc.errors()
            )
            raise cls.env_error(f"invalid {cls.env_subject} in the environment: {problems}") from exc


@dataclass(frozen=True)
class Setting:
    """One setting: a non-model field of a config, or of a model nested in it."""

    section: str
    """The declaring config's section (``train``)."""
    path: tuple[str, ...]
    """Field names from the section down to this field (``("model", "dropout")``)."""
    annotation: Any
    """The field's type annotation."""
    field: FieldInfo
    """The pydantic field: default, description, constraints."""

    @property
    def address(self) -> str:
        """The setting's one name everywhere: ``section.field`` (``train.model.dropout``)."""
        return ".".join((self.section, *self.path))

    @property
    def form_name(self) -> str:
        """The KFP parameter name when the setting is per-run: the address with ``_`` for ``.``."""
        return self.address.replace(".", "_")

    @property
    def keyword(self) -> str:
        """The keyword :func:`from_section` takes this setting by (field path joined by ``_``)."""
        return "_".join(self.path)

    @property
    def description(self) -> str:
        return " ".join((self.field.description or "").split())

    @property
    def names_a_file(self) -> bool:
        extra = self.field.json_schema_extra
        return isinstance(extra, dict) and bool(extra.get("local_file"))


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def section_of(config: type[BaseModel]) -> str:
    """The section ``config`` declares; a clear error for a config that declares none."""
    section = getattr(config, "section", None)
    if not isinstance(section, str) or not section.isidentifier():
        raise SettingsError(
            f'{config.__name__} declares no section; add `section: ClassVar[str] = "<name>"` to it'
        )
    return section


def _settings(config: type[BaseModel], section: str, prefix: tuple[str, ...]) -> list[Setting]:
    found: list[Setting] = []
    for name, field in config.model_fields.items():
        if _is_model(field.annotation):
            found += _settings(field.annotation, section, (*prefix, name))  # type: ignore[arg-type]
        else:
            found.append(Setting(section, (*prefix, name), field.annotation, field))
    return found


def settings_of(config: type[BaseModel]) -> list[Setting]:
    """Every setting of ``config``, nested models flattened, in declaration order."""
    found = _settings(config, section_of(config), ())
    keywords = [setting.keyword for setting in found]
    clashes = sorted({k for k in keywords if keywords.count(k) > 1})
    if clashes:  # e.g. a field ``model_dropout`` beside ``model.dropout``: one form name, two settings
        raise SettingsError(
            f"{config.__name__} has two settings named {clashes} once '.' becomes '_'; rename one"
        )
    return found


def iter_settings(*configs: type[BaseModel]) -> Iterator[tuple[type[BaseModel], Setting]]:
    """Every (config, setting) of several configs; two configs claiming one section is an error."""
    claimed: dict[str, str] = {}
    for config in configs:
        section = section_of(config)
        if section in claimed:
            raise SettingsError(
                f"section {section!r} is declared by both {claimed[section]} and {config.__name__}; "
                "one section, one config"
            )
        claimed[section] = config.__name__
        for setting in settings_of(config):
            yield config, setting


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def _wants_text(annotation: Any) -> bool:
    """True when a field holds text, so a string value must not be JSON-decoded."""
    if annotation is str:
        return True
    origin = get_origin(annotation)
    if origin is Literal:
        return all(isinstance(arg, str) for arg in get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return any(_wants_text(arg) for arg in get_args(annotation) if arg is not type(None))
    return False


def decode(setting: Setting, value: Any) -> Any:
    """``value`` as the setting's type wants it: text of a non-text setting is parsed as JSON."""
    if not isinstance(value, str) or _wants_text(setting.annotation):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value  # validation then names the field and the expected type


def _value_at(instance: BaseModel, path: tuple[str, ...]) -> Any:
    value: Any = instance
    for part in path:
        value = getattr(value, part)
    return value


def section_values(instance: BaseModel, exclude: Iterable[str] = frozenset()) -> dict[str, Any]:
    """One section's values as the nested JSON-able ``dict`` a task receives, without the ``exclude``
    addresses (the per-run settings, which travel as plain parameters)."""
    section = section_of(type(instance))
    values: dict[str, Any] = instance.model_dump(mode="json")
    for address in exclude:
        parts = address.split(".")
        if parts[0] != section:
            raise SettingsError(f"cannot exclude {address!r} from section {section!r}: it is not in it")
        target = values
        for part in parts[1:-1]:
            target = target.get(part, {})
        if parts[-1] not in target:
            raise SettingsError(f"section {section!r} has no setting {address!r}")
        del target[parts[-1]]
    return values


def _validate(config: type[ModelT], values: Mapping[str, Any], where: str) -> ModelT:
    """``config.model_validate(values)``; an invalid value is a :class:`SettingsError` naming its address."""
    try:
        return config.model_validate(values)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            address = ".".join([where, *(str(part) for part in error["loc"])])
            # A whole-config check (empty loc) names its values in its own message.
            got = f" (got {error.get('input')!r})" if error["loc"] else ""
            problems.append(f"{address}: {str(error['msg']).removeprefix('Value error, ')}{got}")
        raise SettingsError(f"invalid {where} setting(s):\n  " + "\n  ".join(problems), problems) from exc


def _nested(config: type[BaseModel], values: Any, where: str) -> dict[str, Any]:
    """``values`` (a mapping, or its JSON text) checked against ``config``'s fields and decoded."""
    if isinstance(values, str):
        try:
            values = json.loads(values)
        except json.JSONDecodeError as exc:
            raise SettingsError(
                f"{where} must be a JSON object of settings; got {values!r} ({exc})"
            ) from None
    if not isinstance(values, Mapping):
        raise SettingsError(f"{where} must be a mapping of settings; got {type(values).__name__} {values!r}")
    fields = config.model_fields
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise SettingsError(
            f"{where} has no setting(s) {[f'{where}.{key}' for key in unknown]}; "
            f"known: {', '.join(f'{where}.{name}' for name in fields)}"
        )
    nested: dict[str, Any] = {}
    for name, value in values.items():
        field = fields[name]
        if _is_model(field.annotation):
            nested[name] = _nested(field.annotation, value, f"{where}.{name}")  # type: ignore[arg-type]
        else:
            nested[name] = decode(Setting("", (name,), field.annotation, field), value)
    return nested


def from_values(config: type[ModelT], values: Mapping[str, Any] | str | None, where: str) -> ModelT:
    """Build a (possibly nested, section-less) model from a part of a section, e.g. the
    ``behavioural`` tests inside ``model_validation``; ``where`` is its address for messages."""
    return _validate(config, _nested(config, {} if values is None else values, where), where)


def from_section(config: type[ModelT], values: Mapping[str, Any] | str | None, **per_run: Any) -> ModelT:
    """Build ``config`` from its section as a task receives it; missing settings default.

    ``values`` is the section's nested ``dict`` (or its JSON text; None: all defaults). The
    per-run settings arrive as keyword arguments named by :attr:`Setting.keyword` (the field
    path joined by ``_``: ``uri``, ``cpu_request``). An unknown key raises :class:`SettingsError`
    naming ``section.key`` and the known ones.
    """
    section = section_of(config)
    nested = _nested(config, {} if values is None else values, section)
    by_keyword = {setting.keyword: setting for setting in settings_of(config)}
    for keyword, value in per_run.items():
        if keyword not in by_keyword:
            raise SettingsError(
                f"{config.__name__} has no per-run setting {keyword!r}; known: {', '.join(by_keyword)}"
            )
        setting = by_keyword[keyword]
        target = nested
        for part in setting.path[:-1]:
            target = target.setdefault(part, {})
        if setting.path[-1] in target:
            raise SettingsError(
                f"{setting.address} is given both in the {section!r} section and as the per-run "
                f"parameter {setting.form_name}; a per-run setting travels only as its own parameter"
            )
        target[setting.path[-1]] = decode(setting, value)
    return _validate(config, nested, section)


def addressed(instance: BaseModel) -> dict[str, Any]:
    """Address → JSON-able value of every setting of ``instance`` (MLflow params, ``--set``)."""
    return {
        setting.address: _jsonable(_value_at(instance, setting.path))
        for setting in settings_of(type(instance))
    }


def tracker_params(instance: BaseModel) -> dict[str, Any]:
    """Address → scalar of every setting, as experiment trackers (MLflow params) take them: a list
    of scalars as ``"128,64"``, any other structure as compact JSON."""
    params: dict[str, Any] = {}
    for address, value in addressed(instance).items():
        if isinstance(value, list) and all(isinstance(v, str | int | float | bool) for v in value):
            value = ",".join(map(str, value))
        elif isinstance(value, list | dict):
            value = json.dumps(value, separators=(",", ":"), sort_keys=True)
        params[address] = value
    return params


def from_addressed(
    values: Mapping[str, Any], configs: Iterable[type[BaseModel] | BaseModel]
) -> list[BaseModel]:
    """The inverse of :func:`addressed` for several configs: each config (a type, or an instance whose
    values are the defaults) rebuilt with the addressed values on top, in the order given.

    Text values of non-text settings are JSON-decoded (``--set train.epochs=5``); an address that
    no config declares is a :class:`SettingsError` naming it and the sections there are; invalid values
    are one :class:`SettingsError` whose ``problems`` name each, in every config.
    """
    bases = [(c, None) if isinstance(c, type) else (type(c), c) for c in configs]
    by_address: dict[str, tuple[int, Setting]] = {}
    for index, (config, _) in enumerate(bases):
        for setting in settings_of(config):
            if setting.address in by_address:
                raise SettingsError(f"{setting.address} is declared by two configs; one section, one config")
            by_address[setting.address] = (index, setting)
    updates: list[dict[str, Any]] = [_Path() for _ in bases]
    for address, value in values.items():
        if address not in by_address:
            raise SettingsError(unknown_address([s for _, s in by_address.values()], address))
        index, setting = by_address[address]
        target = updates[index]
        for part in setting.path[:-1]:
            target = target.setdefault(part, _Path())
        target[setting.path[-1]] = decode(setting, value)
    built: list[BaseModel] = []
    problems: list[str] = []
    for (config, instance), update in zip(bases, updates, strict=True):
        base = instance.model_dump(mode="json") if instance is not None else {}
        try:
            built.append(_validate(config, _merge(base, update), section_of(config)))
        except SettingsError as exc:  # every config is checked, so all of a run's mistakes are named at once
            problems += exc.problems
    if problems:
        raise SettingsError("invalid setting(s):\n  " + "\n  ".join(problems), problems)
    return built


def unknown_address(known: Sequence[Setting], address: str, owner: str = "") -> str:
    """The one message for an address no setting has: the closest address, then what is there.

    ``known`` are the settings the address was looked up among, ``owner`` names their pipeline
    (empty: none). A pre-sections name is pointed at its address (``tune_trials`` is the form name of
    ``tune.trials``, ``epochs`` a field of ``train``) before the closest spelling; then the address's
    section lists its settings, or, for an address outside every section, the sections are listed.
    """
    addresses = [setting.address for setting in known]
    guesses = [s.address for s in known if address in (s.form_name, s.path[-1], "_".join(s.path))]
    guesses += difflib.get_close_matches(address, addresses, n=1)
    hint = f"did you mean {guesses[0]!r}? " if guesses else ""
    sections = list(dict.fromkeys(setting.section for setting in known))
    section = address.split(".", 1)[0]
    if section in sections:
        listed = f"{section}'s settings: {', '.join(s.address for s in known if s.section == section)}"
    else:
        whose = f"{owner}'s sections" if owner else "sections"
        listed = f"settings are named section.field; {whose}: {', '.join(sections)}"
    of = f" of pipeline {owner!r}" if owner else ""
    return f"unknown setting {address!r}{of}; {hint}{listed}"


class _Path(dict[str, Any]):
    """Values under a nested model's field name, merged into the base; a dict-valued setting replaces."""


def _merge(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        nested = isinstance(value, _Path) and isinstance(merged.get(key), dict)
        merged[key] = _merge(merged[key], value) if nested else value
    return merged
