"""A KFP pipeline's form, built from its stages' typed configs.

A pipeline lists the configs of its stages (each as an instance: its values are the
pipeline's defaults) and the few settings a person changes per run. Its parameters are

1. one plain parameter per per-run setting, named :attr:`Setting.form_name`
   (``data_uri``, ``tune_trials``), typed, with the setting's description; and
2. one ``dict`` parameter per section, named by the section (``train``), whose default
   holds the section's other settings (nested, JSON) and whose description lists each
   of them as ``address: description (default …)``.

So the KFP UI form stays short and grouped by stage while every setting is reachable,
and ``mlops run <pipeline> --help`` / ``--set section.field=…`` and the compiled YAML read
the same source (:class:`PipelineForm`). A section travels to a task whole, as one
argument; no channel is ever placed inside a dict (KFP would substitute it as raw text).
A component that needs a per-run setting takes it as its own argument named by its form
name and gives it to :func:`mlops.settings.from_section`.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

from pydantic import BaseModel

if TYPE_CHECKING:
    from kfp.dsl.graph_component import GraphComponent

from mlops.settings import (
    Setting,
    SettingsError,
    addressed,
    from_addressed,
    from_section,
    iter_settings,
    section_of,
    section_values,
    unknown_address,
)

PER_RUN_TYPES = (str, int, float, bool)
"""Types a per-run setting may have: it is a plain parameter, and may drive a ``dsl.If`` or a pod resource."""


def pipeline_type(setting: Setting) -> Any:
    """The annotation KFP accepts for this setting (``int``, ``List[int]``, ``dict`` …)."""
    annotation = setting.annotation
    if annotation in (str, int, float, bool, dict):
        return annotation
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Literal:
        kinds = {type(arg) for arg in args}
        if len(kinds) == 1 and next(iter(kinds)) in (str, int, float, bool):
            return next(iter(kinds))
    if origin in (tuple, list) and args:
        element = args[0]
        if element in (str, int, float, bool):
            return typing.List[element]  # type: ignore[valid-type]  # noqa: UP006 - KFP parses typing.List
        if (
            (isinstance(element, type) and issubclass(element, BaseModel))
            or get_origin(element) is dict
            or element is dict
        ):
            return typing.List[dict]  # noqa: UP006
    if origin is dict:
        return dict
    raise SettingsError(
        f"setting {setting.address!r} has type {annotation!r}, which a pipeline parameter cannot carry; "
        "use str, int, float, bool, a tuple of those, a tuple of models or a dict"
    )


@dataclass(frozen=True)
class FormSetting(Setting):
    """A setting as one pipeline shows it: with this pipeline's default, and whether it is per-run."""

    default: Any
    """This pipeline's default (JSON-able)."""
    per_run: bool
    """True: a plain parameter named :attr:`form_name`; False: inside its section's ``dict`` parameter."""


class Parameters:
    """The pipeline's parameters (KFP channels while compiling): section dicts and per-run values."""

    def __init__(self, form: PipelineForm, values: Mapping[str, Any]):
        self._form = form
        self._values = dict(values)

    def section(self, name: str) -> Any:
        """The section's ``dict`` parameter, to hand to a task whole."""
        if name not in self._form.sections:
            raise SettingsError(
                f"pipeline {self._form.name!r} has no section parameter {name!r}; "
                f"its sections: {', '.join(self._form.sections)}"
            )
        return self._values[name]

    def has_section(self, name: str) -> bool:
        return name in self._form.sections

    def per_run(self, address: str) -> Any:
        """The plain parameter of a per-run setting (``parameters.per_run("tune.trials")``)."""
        setting = self._form.setting(address)
        if not setting.per_run:
            raise SettingsError(
                f"{address} is not a per-run setting of pipeline {self._form.name!r}; it travels inside "
                f"the {setting.section!r} section (per-run: {', '.join(self._form.per_run) or 'none'})"
            )
        return self._values[setting.form_name]

    def tracking(self) -> dict[str, Any]:
        """The keyword arguments every logging task takes: the tracking section and, beside it, the KFP run id."""
        from kfp import dsl

        return {"tracking": self.section("tracking"), "pipeline_run_id": dsl.PIPELINE_JOB_ID_PLACEHOLDER}


class PipelineForm:
    """What a pipeline asks for: every setting with this pipeline's default, per-run or in its section.

    The command line and tests read it: :meth:`arguments` turns addressed values into complete
    pipeline arguments, :meth:`values` reads them back, :meth:`configs` validates every stage.
    """

    def __init__(
        self,
        name: str,
        description: str,
        defaults: Sequence[BaseModel],
        *,
        per_run: Sequence[str] = (),
        returns: tuple[type, str] | None = None,
    ):
        self.name = name
        self.description = description
        self.defaults: tuple[BaseModel, ...] = tuple(defaults)
        self.per_run: tuple[str, ...] = tuple(per_run)
        self.returns = returns
        types_ = [type(instance) for instance in self.defaults]
        table = list(iter_settings(*types_))  # refuses two configs claiming one section
        known = {setting.address for _, setting in table}
        unknown = [address for address in self.per_run if address not in known]
        if unknown:
            raise SettingsError(f"pipeline {name!r}: per-run setting(s) {unknown} are not among its settings")
        values = {
            address: value for instance in self.defaults for address, value in addressed(instance).items()
        }
        self.settings: tuple[FormSetting, ...] = tuple(
            FormSetting(
                setting.section,
                setting.path,
                setting.annotation,
                setting.field,
                default=values[setting.address],
                per_run=setting.address in self.per_run,
            )
            for _, setting in table
        )
        for setting in self.settings:
            if setting.per_run and pipeline_type(setting) not in PER_RUN_TYPES:
                raise SettingsError(
                    f"pipeline {name!r}: per-run setting {setting.address} has type {setting.annotation!r}; "
                    "a per-run setting is a str, int, float or bool (lists and dicts ride in their section)"
                )
        self._by_address = {setting.address: setting for setting in self.settings}
        self.sections: tuple[str, ...] = tuple(
            dict.fromkeys(setting.section for setting in self.settings if not setting.per_run)
        )
        clash = {s.form_name for s in self.settings if s.per_run} & {section_of(t) for t in types_}
        if clash:
            raise SettingsError(
                f"pipeline {name!r}: per-run parameter(s) {sorted(clash)} clash with a section"
            )

    def setting(self, address: str) -> FormSetting:
        if address not in self._by_address:
            raise SettingsError(unknown_address(self.settings, address, self.name))
        return self._by_address[address]

    def _per_run_of(self, instance: BaseModel) -> list[str]:
        """The per-run addresses of ``instance``'s section, in declaration order."""
        section = section_of(type(instance))
        return [s.address for s in self.settings if s.per_run and s.section == section]

    def parameter_defaults(self) -> dict[str, Any]:
        """Parameter name → default: the per-run settings, then one dict per section."""
        return self.arguments({})

    def parameter_description(self, parameter: str) -> str:
        """The description the form shows beside a parameter."""
        if parameter in self.sections:
            lines = [f"Settings of {parameter!r} (a JSON object; a missing key takes its default):"]
            lines += [
                f"{s.address}: {s.description} (default {json.dumps(s.default)})"
                for s in self.settings
                if s.section == parameter and not s.per_run
            ]
            return "\n".join(lines)
        for setting in self.settings:
            if setting.per_run and setting.form_name == parameter:
                return setting.description
        raise SettingsError(f"pipeline {self.name!r} has no parameter {parameter!r}")

    def arguments(self, values_by_address: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Complete pipeline arguments: per-run plain values and full section dicts (this pipeline's
        defaults with the given addressed values on top), validated by each stage's config."""
        for address in values_by_address or {}:
            self.setting(address)  # names an unknown address with this pipeline's sections
        configs = from_addressed(values_by_address or {}, self.defaults)
        return self._arguments_of(configs)

    def _arguments_of(self, configs: Sequence[BaseModel]) -> dict[str, Any]:
        arguments: dict[str, Any] = {}
        for instance in configs:
            values = addressed(instance)
            for address in self._per_run_of(instance):
                arguments[self.setting(address).form_name] = values[address]
        for instance in configs:
            section = section_of(type(instance))
            if section in self.sections:
                arguments[section] = section_values(instance, exclude=self._per_run_of(instance))
        return arguments

    def configs(self, arguments: Mapping[str, Any]) -> list[BaseModel]:
        """Every stage's config as its task rebuilds it from these arguments (a missing argument is the
        pipeline's default; a section given replaces the default section whole, as KFP does)."""
        known = set(self.sections) | {s.form_name for s in self.settings if s.per_run}
        unknown = sorted(set(arguments) - known)
        if unknown:
            raise SettingsError(
                f"pipeline {self.name!r} has no parameter(s) {unknown}; its parameters: {', '.join(sorted(known))}"
            )
        defaults = self.parameter_defaults()
        built = []
        for instance in self.defaults:
            config = type(instance)
            section = section_of(config)
            per_run = {
                self.setting(address).keyword: arguments.get(
                    self.setting(address).form_name, defaults[self.setting(address).form_name]
                )
                for address in self._per_run_of(instance)
            }
            values = arguments.get(section, defaults.get(section)) if section in self.sections else None
            built.append(from_section(config, values, **per_run))
        return built

    def values(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Address → value of every setting, read from a run's arguments (the inverse of :meth:`arguments`)."""
        return {
            address: value
            for config in self.configs(arguments)
            for address, value in addressed(config).items()
        }

    def _docstring(self) -> str:
        lines = [self.description.strip(), "", "Args:"]
        for parameter in self.parameter_defaults():
            text = self.parameter_description(parameter).splitlines()
            lines.append(f"    {parameter}: {text[0]}")
            lines += [f"        {line}" for line in text[1:]]
        if self.returns:
            lines += ["", "Returns:", f"    {self.returns[1]}"]
        return "\n".join(lines)

    def pipeline(self, body: Callable[[Parameters], Any]) -> GraphComponent:
        """Decorate ``body(parameters)`` into the ``@dsl.pipeline`` with this form's parameters."""
        defaults = self.parameter_defaults()
        types_ = {s.form_name: pipeline_type(s) for s in self.settings if s.per_run}
        signature = inspect.Signature(
            [
                inspect.Parameter(
                    name,
                    inspect.Parameter.POSITIONAL_OR_KEYWORD,
                    default=default,
                    annotation=types_.get(name, dict),
                )
                for name, default in defaults.items()
            ],
            return_annotation=self.returns[0] if self.returns else inspect.Signature.empty,
        )
        names = list(defaults)

        def pipeline_function(*args: Any) -> Any:
            result = body(Parameters(self, dict(zip(names, args, strict=True))))
            # Secrets reach the tasks' pods through the compiled YAML (kfp-kubernetes).
            from kfp.dsl import pipeline_context

            from pipelines.task_secrets import TaskSecrets, mount_task_secrets

            mount_task_secrets(pipeline_context.Pipeline.get_default_pipeline().tasks.values(), TaskSecrets())
            return result

        pipeline_function.__signature__ = signature  # type: ignore[attr-defined]
        pipeline_function.__doc__ = self._docstring()
        pipeline_function.__name__ = body.__name__
        pipeline_function.__qualname__ = body.__qualname__
        pipeline_function.__module__ = body.__module__
        from kfp import dsl

        return dsl.pipeline(name=self.name, description=self.description)(pipeline_function)


def settings_pipeline(
    name: str,
    description: str,
    defaults: Sequence[BaseModel],
    *,
    per_run: Sequence[str] = (),
    returns: tuple[type, str] | None = None,
) -> Callable[[Callable[[Parameters], Any]], GraphComponent]:
    """Decorate ``body(parameters)`` into a ``@dsl.pipeline`` whose parameters are the configs' settings:
    the ``per_run`` addresses as plain parameters, every other setting inside its section's dict.

    ``returns`` is the type and description of the pipeline's single output (None: no output).
    """
    return PipelineForm(name, description, defaults, per_run=per_run, returns=returns).pipeline
