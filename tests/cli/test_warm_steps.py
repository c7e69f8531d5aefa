"""Warm steps keep kfp.local's step contract: same outputs, environment, failures and exit handling as cold.

Each pipeline here runs twice on the real kfp.local ``SubprocessRunner``, once with steps forked from the
warm process and once with a new interpreter per step, and what the steps saw and wrote is compared.
(No ``from __future__ import annotations``: KFP reads the components' annotations as types.)
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from kfp import dsl
from kfp.dsl import Output

from cli.local_run import PipelineFailed, run_locally
from cli.warm_steps import step_runner
from cli.warm_steps.program import LIGHTWEIGHT_SCRIPT, lightweight_program, module_source, preloadable_imports
from cli.warm_steps.step_runner import WarmSteps, component_sources
from cli.warm_steps.zygote import next_import
from mlops.workspace import Workspace


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def what_a_step_sees(word: str, report: Output[dsl.Artifact]) -> str:
    """Everything a step could tell apart between a forked and a new process."""
    import json
    import os
    import random
    import sys

    import numpy

    seen = {
        "word": word,
        "cwd": os.getcwd(),
        "argv": [os.path.basename(sys.argv[0]), sys.argv[1], os.path.basename(sys.argv[2]), *sys.argv[3:4]],
        "task_variable": os.environ.get("MLOPS_WARM_TEST"),
        "kfp_runtime": os.environ.get("_KFP_RUNTIME"),
        "stdin": sys.stdin.read(),
        "numpy_draw": float(numpy.random.random()),
        "random_draw": random.random(),
    }
    with open(report.path, "w") as file:
        json.dump(seen, file)
    return json.dumps(seen)


@dsl.pipeline(name="sees")
def sees(word: str) -> str:
    first = what_a_step_sees(word=word).set_env_variable("MLOPS_WARM_TEST", "task-level")
    second = what_a_step_sees(word=word).after(first)
    return second.outputs["Output"]


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def finishes_after_exit(marker: str) -> str:
    """An exit handler and a non-daemon thread that outlive the function, as MLflow's async logging does."""
    import atexit
    import threading
    import time

    def late() -> None:
        time.sleep(0.5)
        with open(marker, "a") as file:
            file.write("thread\n")

    def at_exit() -> None:
        with open(marker, "a") as file:
            file.write("atexit\n")

    atexit.register(at_exit)
    threading.Thread(target=late).start()
    return "returned"


@dsl.pipeline(name="finishes")
def finishes(marker: str) -> str:
    return finishes_after_exit(marker=marker).output


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def fails(how: str) -> str:
    import os
    import signal
    import sys

    print("about to fail:", how, flush=True)
    if how == "raise":
        raise ValueError("the planted failure")
    if how == "exit":
        sys.exit(3)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    return "not failed"


@dsl.pipeline(name="failing")
def failing(how: str) -> str:
    return fails(how=how).output


@dsl.component(base_image="python:3.11", install_kfp_package=False)
def finds_its_library_imported() -> str:
    import sys

    found = "pandas" in sys.modules  # before the step imports it itself
    import pandas  # noqa: F401

    return str(found)


@dsl.pipeline(name="finds")
def finds() -> str:
    return finds_its_library_imported().output


def run(pipeline: Any, arguments: dict[str, Any], workspace: Workspace, warm: bool) -> Any:
    return run_locally(pipeline, arguments, workspace, warm=warm)


def test_kfps_own_lightweight_command_is_recognised_and_any_other_runs_cold() -> None:
    command = list(what_a_step_sees.component_spec.implementation.container.command)
    args = list(what_a_step_sees.component_spec.implementation.container.args)
    program = lightweight_program([*command, *args], sys.executable)
    assert program is not None and program.source == command[3] and program.args == tuple(args)
    # kfp.local's subprocess runner writes its interpreter for python3 in the script.
    as_run = [command[0], command[1], command[2].replace("python3", sys.executable), *command[3:], *args]
    assert lightweight_program(as_run, sys.executable) is not None
    assert lightweight_program(as_run, "/some/other/python") is None
    installs = ["sh", "-c", "pip install x && " + LIGHTWEIGHT_SCRIPT, command[3], *args]
    assert lightweight_program(installs, sys.executable) is None
    installs_kfp = dsl.component(base_image="python:3.11")(what_a_step_sees.python_func)  # KFP's default
    spec = installs_kfp.component_spec.implementation.container
    assert lightweight_program([*spec.command, *spec.args], sys.executable) is None
    assert (
        lightweight_program(["sh", "-ec", LIGHTWEIGHT_SCRIPT + "echo more\n", command[3]], sys.executable)
        is None
    )
    assert lightweight_program(["python", "-m", "kfp.dsl.executor_main", "--x"], sys.executable) is None
    assert lightweight_program(["sh", "-ec", LIGHTWEIGHT_SCRIPT], sys.executable) is None  # no source


def test_every_platform_component_would_start_warm() -> None:
    from google.protobuf.json_format import MessageToDict

    from pipelines.catalog import pipelines

    commands = []
    for pipeline in pipelines().values():
        for spec in MessageToDict(pipeline.pipeline_spec.deployment_spec)["executors"].values():
            commands.append([*spec["container"]["command"], *spec["container"].get("args", [])])
    assert len(commands) >= 20
    cold = [c[3][:200] for c in commands if lightweight_program(c, sys.executable) is None]
    assert cold == []


@pytest.mark.slow
def test_a_warm_step_sees_and_writes_what_a_cold_one_does(tmp_path: Path) -> None:
    seen = {}
    for warm in (True, False):
        workspace = Workspace(tmp_path / f"ws-{warm}")
        result = run(sees, {"word": "héllo"}, workspace, warm)
        log = (result.log_path("what-a-step-sees-2") or Path()).read_text()
        assert ("[mlops] warm step: forked" in log) is warm, log[:400]
        first = json.loads((result.run_dir / "what-a-step-sees" / "report").read_text())
        second = json.loads(result.output)
        seen[warm] = (first, second)
    for warm, (first, second) in seen.items():
        assert first["task_variable"] == "task-level" and second["task_variable"] is None, warm
        assert first["kfp_runtime"] == second["kfp_runtime"] == "true"
        assert first["cwd"] == second["cwd"] == os.getcwd()
        assert first["argv"] == [
            "executor_main.py",
            "--component_module_path",
            "ephemeral_component.py",
            "--executor_input",
        ]
        assert first["stdin"] == ""
        assert first["numpy_draw"] != second["numpy_draw"], "each step draws from its own random state"
        assert first["random_draw"] != second["random_draw"]
    drawn = ("numpy_draw", "random_draw")
    same = [{k: v for k, v in step.items() if k not in drawn} for step in (*seen[True], *seen[False])]
    assert same[0] == same[2] and same[1] == same[3]


@pytest.mark.slow
def test_exit_handlers_and_threads_finish_before_a_warm_step_reports(tmp_path: Path) -> None:
    marker = tmp_path / "marker.txt"
    result = run(finishes, {"marker": str(marker)}, Workspace(tmp_path / "ws"), True)
    assert result.output == "returned"
    assert marker.read_text() == "thread\natexit\n"  # the thread is joined first, as at a cold exit


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("raise", "ValueError: the planted failure"),
        ("exit", "about to fail: exit"),
        ("kill", "ended without an exit status"),
    ],
)
def test_a_warm_step_that_fails_fails_its_run_with_its_output(tmp_path: Path, how: str, said: str) -> None:
    with pytest.raises(PipelineFailed) as failed:
        run(failing, {"how": how}, Workspace(tmp_path / "ws"), True)
    assert failed.value.task == "fails"
    log = (failed.value.run.log_path("fails") or Path()).read_text()
    assert said in log and "[mlops] warm step: forked" in log, log[-2000:]


def test_the_warm_process_imports_what_the_steps_reach_in_the_order_they_run() -> None:
    from pipelines.training.pipeline import training_pipeline

    sources = component_sources(training_pipeline)
    assert "def prepare_data(" in sources[0] and "def validate_data(" in sources[1]  # dependencies first
    preload = preloadable_imports(sources, module_source)
    assert preload[0] == "kfp.dsl.executor_main"
    # Reached through the platform's modules, which import them inside their functions.
    for heavy in ("torch", "mlflow", "great_expectations", "onnxruntime", "pandas"):
        assert heavy in preload, preload
    position = preload.index
    assert position("components.prepare_data.data_source") < position("components.train.training_task")
    assert position("great_expectations") < position("torch")  # validate-data runs before train-model


def test_a_step_asked_for_early_waits_for_what_it_imports_and_that_is_imported_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm process's list starts with torch (another component's, a few seconds); the step, asked for
    while it runs, imports pandas: pandas is taken next and the step forks with it, so no two processes
    import it side by side."""
    real = component_sources
    monkeypatch.setattr(
        step_runner,
        "component_sources",
        lambda pipeline: ["def other():\n    import torch\n", *real(pipeline)],
    )
    result = run(finds, {}, Workspace(tmp_path / "ws"), True)
    log = (result.log_path("finds-its-library-imported") or Path()).read_text()
    assert result.output == "True", log[:600]
    assert "imported once for the run: kfp.dsl.executor_main" in log and "pandas (" in log, log[:600]


def test_the_next_import_is_the_earliest_waiting_steps_first_untried_one() -> None:
    remaining = ["torch", "pandas", "sklearn", "great_expectations"]
    assert next_import(remaining, [], set()) == "torch"  # nobody waits: the run's order
    assert next_import(remaining, [("kfp", "pandas", "great_expectations")], {"kfp"}) == "pandas"
    assert next_import(remaining, [("great_expectations",), ("sklearn",)], set()) == "great_expectations"
    assert next_import(["sklearn"], [("pandas",), ("sklearn",)], {"pandas"}) == "sklearn"


def test_a_users_own_modules_are_left_to_the_step_and_nothing_is_imported_to_decide() -> None:
    source = "def step():\n    import sklearn.metrics\n    import my_team_lib\n    from mlops.settings import addressed\n"
    before = set(sys.modules)
    preload = preloadable_imports([source], module_source)
    assert "sklearn.metrics" in preload and "mlops.settings" in preload
    assert not any(name.startswith("my_team_lib") for name in preload)
    assert "pydantic" not in preload  # not a heavy library: the platform module imports it when imported
    assert set(sys.modules) - before == set()
    assert (
        module_source("mlops.settings") == Path(__file__).parents[2].joinpath("mlops/settings.py").read_text()
    )
    assert module_source("mlops.no_such_module") is None and module_source("no_such_package.x") is None


def test_the_platforms_modules_are_found_outside_the_repository(tmp_path: Path) -> None:
    """``mlops run`` from a data folder: the packages come from the install's finder, not the working folder."""
    import subprocess

    script = (
        "from cli.warm_steps.step_runner import component_sources\n"
        "from cli.warm_steps.program import module_source, preloadable_imports\n"
        "from pipelines.training.pipeline import training_pipeline\n"
        "print(sorted({'torch', 'components.train.training_task'} & set(preloadable_imports(component_sources(training_pipeline), module_source))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "['components.train.training_task', 'torch']", done.stdout + done.stderr


def test_without_a_warm_process_a_step_runs_cold_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    calls = []

    def cold(full_command: list[str], env_vars: dict[str, str] | None = None) -> int:
        calls.append((full_command, env_vars))
        return 7

    before = set(Path(tempfile.gettempdir()).glob("mlops-warm-*"))
    warm = WarmSteps(cold, [])  # never started: no process to fork from, and no folder left behind
    command = [*what_a_step_sees.component_spec.implementation.container.command, "--executor_input", "{}"]
    assert warm.run(command, {"A": "1"}) == 7
    assert calls == [(command, {"A": "1"})] and warm.cold_steps == 1 and warm.warm_steps == 0
    assert "cold step (no warm process)" in capsys.readouterr().out
    assert warm.run(["sh", "-c", "true"]) == 7
    assert "cold step (not KFP's lightweight-component command)" in capsys.readouterr().out
    assert set(Path(tempfile.gettempdir()).glob("mlops-warm-*")) == before


def test_a_warm_process_that_died_sends_its_steps_cold(capsys: pytest.CaptureFixture[str]) -> None:
    warm = WarmSteps(lambda full_command, env_vars=None: 0, []).start()
    try:
        assert warm.is_ready(timeout=60)
        assert warm._process is not None
        warm._process.kill()
        warm._process.wait()
        assert not warm.is_ready(timeout=1)
        command = [
            *what_a_step_sees.component_spec.implementation.container.command,
            "--executor_input",
            "{}",
        ]
        assert warm.run(command) == 0 and warm.cold_steps == 1
    finally:
        warm.close()
    assert not Path(warm.socket_path).parent.exists()


def test_what_torch_imports_on_its_first_optimizer_is_taken_last_and_only_with_torch() -> None:
    with_torch = preloadable_imports(["def step():\n    import torch\n    import pandas\n"], module_source)
    assert with_torch[-1] == "torch._dynamo" and with_torch.index("torch") < with_torch.index("pandas")
    assert "torch._dynamo" not in preloadable_imports(["def step():\n    import pandas\n"], module_source)
    # The reason it is taken: a step's first optimizer imports it, inside the step, when the warm process has not.
    code = "import sys, torch; torch.optim.AdamW(torch.nn.Linear(2, 1).parameters()); print('torch._dynamo' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True", "torch no longer imports torch._dynamo for an optimizer: drop the companion"


def test_the_warm_process_ends_cleanly_when_its_run_closes_it() -> None:
    source = "def step():\n    import numpy\n"
    warm = WarmSteps(lambda full_command, env_vars=None: 0, [source]).start()
    assert warm.is_ready(timeout=60)
    process = warm._process
    assert process is not None
    warm.close()
    assert process.returncode == 0  # its own exit, not close()'s kill after the wait ran out
    assert not Path(warm.socket_path).parent.exists()
