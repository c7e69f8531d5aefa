"""Build a KFP pipeline's parameters from its stages' typed configs.

A pipeline lists the configs of its stages (each as an instance: its values are the
pipeline's defaults); every leaf setting becomes one pipeline parameter with the
config's name, default and description, so the KFP UI form, ``mlops run <pipeline>
--help``, ``--set`` and the compiled YAML read the same source. The body receives
:class:`Parameters` and hands each task one config's settings as one ``dict``.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Sequence
from typing import Any

from kfp import dsl
from kfp.dsl.graph_component import GraphComponent
from pydantic import BaseModel

from mlops.settings import Leaf, SettingsError, flat, iter_settings, pipeline_type
from mlops.tracking.context import TrackingSettings

PACKABLE = (int, float, bool, str, typing.List[int], typing.List[float])  # noqa: UP006
"""Types a setting may have to travel inside a ``dict`` argument. KFP (the local runner, and
the backend before it) substitutes a channel inside a dict as raw text, so a value that
itself holds quotes (a list of strings, a dict) would break the JSON: such settings are
passed as arguments of their own (:meth:`Parameters.unpacked`)."""


def packable(leaf: Leaf) -> bool:
    return pipeline_type(leaf) in PACKABLE


class Parameters:
    """The pipeline's parameters (KFP channels while compiling), grouped by declaring config."""

    def __init__(self, values: dict[str, Any], groups: dict[type[BaseModel], list[Leaf]]):
        self._values = values
        self._groups = groups

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def _leaves(self, config: type[BaseModel]) -> list[Leaf]:
        if config not in self._groups:
            raise SettingsError(f"this pipeline declares no {config.__name__} settings")
        return self._groups[config]

    def of(self, config: type[BaseModel]) -> dict[str, Any]:
        """One config's (packable) settings as one ``dict`` argument; the task rebuilds it with ``from_flat``."""
        return {leaf.name: self._values[leaf.name] for leaf in self._leaves(config) if packable(leaf)}

    def unpacked(self, config: type[BaseModel]) -> dict[str, Any]:
        """The config's settings that cannot travel inside a dict, as keyword arguments of their own."""
        return {leaf.name: self._values[leaf.name] for leaf in self._leaves(config) if not packable(leaf)}

    def tracking(self) -> dict[str, Any]:
        """The keyword arguments every logging task takes: the tracking settings and, beside them, the KFP run id."""
        return {"tracking": self.of(TrackingSettings), "pipeline_run_id": dsl.PIPELINE_JOB_ID_PLACEHOLDER}


def parameter_table(defaults: Sequence[BaseModel]) -> list[tuple[type[BaseModel], Leaf, Any]]:
    """(config, setting, pipeline default) for every setting of the given config instances."""
    by_type = {type(instance): flat(instance) for instance in defaults}
    if len(by_type) != len(defaults):
        raise SettingsError("a pipeline lists the same config twice")
    return [(config, leaf, by_type[config][leaf.name]) for config, leaf in iter_settings(*by_type)]


def _docstring(summary: str, table: list[tuple[type[BaseModel], Leaf, Any]], returns: str) -> str:
    lines = [summary.strip(), "", "Args:"]
    lines += [f"    {leaf.name}: {leaf.description or leaf.name}" for _, leaf, _ in table]
    if returns:
        lines += ["", "Returns:", f"    {returns}"]
    return "\n".join(lines)


def settings_pipeline(
    name: str,
    description: str,
    defaults: Sequence[BaseModel],
    *,
    returns: tuple[type, str] | None = None,
) -> Callable[[Callable[[Parameters], Any]], GraphComponent]:
    """Decorate ``body(parameters)`` into a ``@dsl.pipeline`` whose parameters are the configs' settings.

    ``returns`` is the type and description of the pipeline's single output (None: no output).
    """
    table = parameter_table(defaults)
    groups: dict[type[BaseModel], list[Leaf]] = {}
    for config, leaf, _ in table:
        groups.setdefault(config, []).append(leaf)
    signature = inspect.Signature(
        [
            inspect.Parameter(
                leaf.name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=value,
                annotation=pipeline_type(leaf),
            )
            for _, leaf, value in table
        ],
        return_annotation=returns[0] if returns else inspect.Signature.empty,
    )
    names = [leaf.name for _, leaf, _ in table]

    def decorate(body: Callable[[Parameters], Any]) -> GraphComponent:
        def pipeline_function(*args: Any) -> Any:
            return body(Parameters(dict(zip(names, args, strict=True)), groups))

        pipeline_function.__signature__ = signature  # type: ignore[attr-defined]
        pipeline_function.__doc__ = _docstring(description, table, returns[1] if returns else "")
        pipeline_function.__name__ = body.__name__
        pipeline_function.__qualname__ = body.__qualname__
        pipeline_function.__module__ = body.__module__
        return dsl.pipeline(name=name, description=description)(pipeline_function)

    return decorate
