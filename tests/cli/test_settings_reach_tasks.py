"""A setting given on the command line by its address reaches the task that uses it.

``mlops run`` hands kfp.local the pipeline's form arguments (per-run plain parameters and
whole section dicts); the tasks rebuild their configs from them. The first test stops at
the hand-over to kfp.local, the second runs a real kfp.local task on a section built so.
"""

import json
from pathlib import Path
from typing import Any

import pytest
from kfp import dsl

from cli.commands.run import local_arguments, parse_pipeline_arguments
from cli.local_run import run_locally
from cli.main import main
from mlops.workspace import Workspace


class Handed(Exception):
    """Raised by the stand-in for kfp.local once it has the arguments."""


def test_set_and_flags_reach_the_arguments_handed_to_kfp_local(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cli.local_run
    from components.train.config import TrainTaskSettings
    from pipelines.training.pipeline import FORM, training_pipeline
    from training.config import TrainConfig

    handed: dict[str, Any] = {}

    def kfp_local(pipeline: Any, arguments: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        handed.update(pipeline=pipeline, arguments=arguments)
        raise Handed

    monkeypatch.setattr(cli.local_run, "run_locally", kfp_local)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loans.csv").write_text("a,b\n1,2\n")
    ws = tmp_path / "ws"
    with pytest.raises(Handed):
        main(
            ["--workspace", str(ws), "run", "training", "--set", "train.epochs=2", "--set", "tune.trials=3",
             "--train.model.hidden_units", "8,4", "--train_task.cluster.workers", "2", "--data", "loans.csv",
             "--set", 'gate={"auc_floor": 0.55}']
        )  # fmt: skip

    assert handed["pipeline"] is training_pipeline
    arguments = handed["arguments"]
    assert set(arguments) == {s.form_name for s in FORM.settings if s.per_run} | set(FORM.sections)
    assert arguments["tune_trials"] == 3 and arguments["data_uri"] == str(tmp_path / "loans.csv")
    assert arguments["train"]["epochs"] == 2 and arguments["train"]["model"]["hidden_units"] == [8, 4]
    assert arguments["gate"]["auc_floor"] == 0.55
    assert arguments["tracking"]["tracking_uri"] == Workspace(ws).tracking_uri  # filled in by the local run
    # What the tasks rebuild from them.
    configs = {type(config): config for config in FORM.configs(arguments)}
    assert configs[TrainConfig].epochs == 2 and configs[TrainConfig].model.hidden_units == (8, 4)
    assert configs[TrainTaskSettings].cluster.workers == 2
    assert configs[TrainConfig].batch_size == FORM.setting("train.batch_size").default  # the rest: defaults


@dsl.component(base_image="python:3.11")
def rebuild(registration: dict, registration_model_name: str) -> str:
    """What a task does with its section and a per-run setting (as the register task does)."""
    from mlops.registration_settings import RegistrationSettings
    from mlops.settings import addressed, from_section

    settings = from_section(RegistrationSettings, registration, model_name=registration_model_name)
    import json

    return json.dumps(addressed(settings))


@dsl.pipeline(name="reach")
def reach(registration: dict, registration_model_name: str) -> str:
    return rebuild(registration=registration, registration_model_name=registration_model_name).output


def test_a_section_built_from_set_reaches_a_real_task_intact(tmp_path: Path) -> None:
    """Quotes and backslashes included: a section travels as one dict, never as text substituted into one."""
    from pipelines.training.pipeline import FORM

    trigger = 'drift-monitor run "abc" \\ nightly'
    given = parse_pipeline_arguments(
        "training", ["--set", f"registration.trigger={trigger}", "--registration.model_name", "loans"]
    )
    arguments, _ = local_arguments(
        "training", {**given, "registration.git_commit": "0123abc"}, Workspace(tmp_path)
    )
    handed = {name: arguments[name] for name in ("registration", "registration_model_name")}

    result = run_locally(reach, handed, Workspace(tmp_path / "ws"))
    assert json.loads(result.output) == {
        "registration.model_name": "loans",
        "registration.git_commit": "0123abc",
        "registration.trigger": trigger,
        "registration.explain_reference_rows": 64,  # its default, travelling with the section
    }
    assert FORM.values(arguments)["registration.trigger"] == trigger
