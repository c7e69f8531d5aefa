"""The checked-in YAML is what the code compiles to, and the KFP UI form is fully described."""

from pathlib import Path

import pytest
import yaml

from pipelines.catalog import compile_all, compiled_path, pipelines


def _normalise(text: str) -> list[dict]:
    """The pipeline spec (without the SDK version) and the platform spec (kfp-kubernetes' Secrets)."""
    spec, *platform = yaml.safe_load_all(text)
    spec.pop("sdkVersion", None)
    return [spec, *platform]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("compiled")
    compile_all(out)
    return out


@pytest.mark.parametrize("name", sorted(pipelines()))
def test_golden_yaml_matches_a_fresh_compile(name: str, fresh: Path) -> None:
    golden = compiled_path(name)
    assert golden.is_file(), f"{golden} missing: run `mlops compile` and commit it"
    assert _normalise((fresh / f"{name}.yaml").read_text()) == _normalise(golden.read_text()), (
        f"{golden.name} is stale: run `mlops compile` and commit the result"
    )


@pytest.mark.parametrize("name", sorted(pipelines()))
def test_every_run_form_parameter_has_a_description_and_default(name: str) -> None:
    spec = next(yaml.safe_load_all(compiled_path(name).read_text()))
    parameters = spec["root"]["inputDefinitions"]["parameters"]
    assert parameters
    for param, definition in parameters.items():
        assert definition.get("description", "").strip(), f"{name}: parameter {param} has no description"
        assert "defaultValue" in definition or definition.get("isOptional"), f"{name}: {param} has no default"
