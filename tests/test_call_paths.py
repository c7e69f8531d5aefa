"""Values move through the packages top down: a ``--set`` value and a registry alias move, traced.

Each flow runs under :func:`sys.setprofile`; every call from one of the repository's modules into another
is a crossing. A crossing from a lower layer into a higher one (the layers of ``pyproject.toml``'s
import-linter contracts, and the bottom package's own) is a bounce: import-linter cannot see one made
through a callback. The one allowed kind is pydantic running a config class's own validators: the
classes are handed down to :mod:`mlops.settings` as data, and their checks run where they are defined.
The ``--set`` flow also validates each stage's config once (``tests/cli/test_parameters.py``).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_RANK = {
    "cli": 5,
    "pipelines": 4,
    "components": 3,
    "delivery": 2,
    "training": 1,
    "serving": 1,
    "mlops": 0,
}
BOTTOM_RANK = {
    "tracking": 6,
    "monitoring": 6,
    "governance": 5,
    "model": 4,
    "features": 4,
    "data": 3,
    "storage": 2,
    "registration_settings": 2,
    "storage_policy": 1,
    "vocabulary": 1,
    "origin_facts": 1,
    "workspace": 1,
    "gates": 1,
    "progress": 1,
    "images": 1,
    "settings": 0,
}


def module_of(frame: FrameType) -> str | None:
    path = Path(frame.f_code.co_filename)
    if not path.is_relative_to(ROOT) or ".venv" in path.parts or path.parts[len(ROOT.parts)] == "tests":
        return None
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def rank(module: str) -> tuple[int, int]:
    package, _, rest = module.partition(".")
    return PACKAGE_RANK[package], BOTTOM_RANK.get(rest.split(".")[0], 0) if package == "mlops" else 0


def config_checks() -> set[tuple[str, str]]:
    """(module, function) of every validator and serializer a loaded pydantic model declares."""
    from pydantic import BaseModel

    found: set[tuple[str, str]] = set()
    stack = list(BaseModel.__subclasses__())
    while stack:
        model = stack.pop()
        stack += model.__subclasses__()
        decorators = model.__pydantic_decorators__
        for group in (
            decorators.field_validators,
            decorators.model_validators,
            decorators.field_serializers,
            decorators.model_serializers,
        ):
            found |= {(model.__module__, decorator.func.__name__) for decorator in group.values()}
    return found


def bounces(crossings: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The crossings that go up, less pydantic running a config class's own checks from ``mlops.settings``."""
    checks = config_checks()
    return [
        (caller, callee, function)
        for caller, callee, function in crossings
        if rank(caller) < rank(callee) and not (caller == "mlops.settings" and (callee, function) in checks)
    ]


@contextmanager
def traced() -> Iterator[list[tuple[str, str, str]]]:
    crossings: list[tuple[str, str, str]] = []

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if event != "call" or (callee := module_of(frame)) is None:
            return
        outer = frame.f_back
        while outer is not None and module_of(outer) is None:
            outer = outer.f_back
        caller = module_of(outer) if outer is not None else None
        if caller is not None and caller != callee:
            crossings.append((caller, callee, frame.f_code.co_name))

    sys.setprofile(profile)
    threading.setprofile(profile)  # threads started inside the block (a test client's event loop) too
    try:
        yield crossings
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def test_an_upward_call_is_a_bounce_and_a_config_validator_is_not() -> None:
    assert bounces([("mlops.settings", "pipelines.signature", "f")]) == [
        ("mlops.settings", "pipelines.signature", "f")
    ]
    assert bounces([("mlops.storage.location", "mlops.tracking.store", "f")]) != []
    assert bounces([("mlops.tracking.store", "mlops.governance.audit", "f")]) == []
    from training.config import ModelConfig

    (validator,) = [d.func.__name__ for d in ModelConfig.__pydantic_decorators__.field_validators.values()]
    assert bounces([("mlops.settings", "training.config", validator)]) == []
    assert bounces([("mlops.settings", "training.config", "not_a_validator")]) != []
    assert bounces([("cli.parameters", "mlops.settings", "f")]) == []


def test_a_set_value_goes_down_from_the_command_line_to_the_settings_once() -> None:
    from cli.parameters import checked_arguments, parse_overrides
    from pipelines.training.pipeline import FORM

    with traced() as crossings:
        arguments = checked_arguments(FORM, parse_overrides(FORM, ["train.learning_rate=0.01"]))
    assert arguments["train"]["learning_rate"] == 0.01
    assert bounces(crossings) == []
    into_pipelines = [c for c in crossings if c[1].startswith("pipelines.")]
    assert [(c[0], c[2]) for c in into_pipelines] == [("cli.parameters", "arguments")], (
        "one hand-off to the form"
    )


def test_an_alias_move_goes_down_from_the_gate_to_the_registry_and_the_audit_log(
    tracking: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlflow import MlflowClient

    from components.promotion_gate.promotion import promote

    monkeypatch.chdir(tmp_path)
    client = MlflowClient(tracking_uri=tracking.tracking_uri)
    client.create_registered_model("m")
    for _ in range(2):
        client.create_model_version("m", source=str(tmp_path))
    promote("m", "1", tracking)
    moved: Callable[[], str | None] = lambda: tracking.alias_version("m", "champion")  # noqa: E731
    with traced() as crossings:
        replaced = promote("m", "2", tracking, reason="traced")
    assert (replaced, moved()) == ("1", "2")
    assert bounces(crossings) == []
    assert any(callee.startswith("mlops.governance.audit") for _, callee, _ in crossings), (
        "the move is audited"
    )
