"""MLflow's server app in one process: the variables it sets are the ones MLflow's own server reads.

What the server then serves is tested through it: ``tests/mlops/test_served_tracking.py`` (the light REST
client against it, read back through ``MlflowClient``) and every local run of the test suite.
"""

from __future__ import annotations

import pytest

from mlops.tracking import mlflow_app


def test_the_variables_are_mlflows_own() -> None:
    from mlflow import environment_variables
    from mlflow.server import constants, handlers

    assert mlflow_app.BACKEND_STORE_URI_ENV == constants.BACKEND_STORE_URI_ENV_VAR
    assert mlflow_app.REGISTRY_STORE_URI_ENV == constants.REGISTRY_STORE_URI_ENV_VAR
    assert mlflow_app.ARTIFACT_ROOT_ENV == constants.ARTIFACT_ROOT_ENV_VAR
    assert mlflow_app.STATIC_PREFIX_ENV == handlers.STATIC_PREFIX_ENV_VAR
    assert environment_variables._MLFLOW_SGI_NAME.name == mlflow_app.SERVER_NAME_ENV
    assert environment_variables._MLFLOW_SERVER_BOOT_ID.name == mlflow_app.BOOT_ID_ENV
    assert environment_variables._MLFLOW_IN_JOB_EXECUTOR.name == mlflow_app.IN_JOB_EXECUTOR_ENV


def test_the_app_is_the_one_mlflow_server_runs_and_its_logging_file_exists() -> None:
    import inspect
    from pathlib import Path

    from mlflow import server

    assert f'"{mlflow_app.APP}"' in inspect.getsource(server._run_server)
    assert Path(mlflow_app.uvicorn_log_config()) == server._UVICORN_LOG_CONFIG
    assert Path(mlflow_app.uvicorn_log_config()).is_file()


def test_an_empty_option_sets_nothing_and_each_start_has_its_own_id() -> None:
    first = mlflow_app.server_environment("sqlite:////s.db", "sqlite:////s.db", "", "")
    assert mlflow_app.ARTIFACT_ROOT_ENV not in first and mlflow_app.STATIC_PREFIX_ENV not in first
    assert (
        first[mlflow_app.BACKEND_STORE_URI_ENV]
        == first[mlflow_app.REGISTRY_STORE_URI_ENV]
        == "sqlite:////s.db"
    )
    assert first[mlflow_app.SERVER_NAME_ENV] == "uvicorn" and first[mlflow_app.IN_JOB_EXECUTOR_ENV] == "false"
    second = mlflow_app.server_environment("sqlite:////s.db", "", "/art", "/p")
    assert mlflow_app.REGISTRY_STORE_URI_ENV not in second
    assert second[mlflow_app.ARTIFACT_ROOT_ENV] == "/art" and second[mlflow_app.STATIC_PREFIX_ENV] == "/p"
    assert first[mlflow_app.BOOT_ID_ENV] != second[mlflow_app.BOOT_ID_ENV]


def test_a_missing_store_option_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        mlflow_app.command_line(["--port", "5000"])
    assert "--backend-store-uri" in capsys.readouterr().err
