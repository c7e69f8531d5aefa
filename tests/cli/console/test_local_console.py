"""A real kfp.local run of a two-step pipeline: step lines, per-step logs, failure reasons, the cache."""

from pathlib import Path

import pytest
from kfp import dsl

from cli.local_run import PipelineFailed, run_locally
from mlops.workspace import Workspace


@dsl.component(base_image="python:3.11")
def count(n: int, counted: dsl.Output[dsl.Artifact]) -> int:
    from pathlib import Path

    from mlops.progress import Progress, emit

    for i in range(1, n + 1):
        emit(Progress(unit="epoch", total=n, completed=i, text=f"epoch {i}"))
    Path(counted.path).write_text(str(n))
    print(f"counted to {n}")
    return n


@dsl.component(base_image="python:3.11")
def check(value: int, counted: dsl.Input[dsl.Artifact], limit: int) -> str:
    if value > limit:
        raise ValueError(f"value {value} is too big; lower n (below {limit + 1}); or raise the limit")
    return "fine"


@dsl.pipeline(name="toy")
def toy(n: int, limit: int = 3) -> str:
    counted = count(n=n)
    return check(value=counted.outputs["Output"], counted=counted.outputs["counted"], limit=limit).output


def test_steps_are_lines_and_their_output_is_in_their_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = Workspace(tmp_path / "ws")
    result = run_locally(toy, {"n": 2}, workspace)
    out = capsys.readouterr().out
    assert result.output == "fine"
    assert [(s.name, s.status) for s in result.steps] == [("count", "finished"), ("check", "finished")]
    lines = out.splitlines()
    assert [line.split()[:2] for line in lines] == [["ok", "count"], ["ok", "check"]]
    assert "KFP Executor" not in out and "mlops-progress" not in out
    assert result.run_dir is not None and result.log_dir == result.run_dir / "logs"
    count_log = (result.log_dir / "count.log").read_text()
    assert "counted to 2" in count_log and '"completed":2' in count_log
    assert "KFP Executor" in count_log


def test_verbose_streams_the_raw_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_locally(toy, {"n": 1}, Workspace(tmp_path / "ws"), verbose=True)
    out = capsys.readouterr().out
    assert "counted to 1" in out and "KFP Executor" in out and len(out.splitlines()) > 40


def test_a_failed_step_is_named_with_its_reasons_and_log(tmp_path: Path) -> None:
    with pytest.raises(PipelineFailed, match="step check failed") as failure:
        run_locally(toy, {"n": 5}, Workspace(tmp_path / "ws"))
    assert failure.value.headline == "ValueError"
    assert failure.value.details == ["value 5 is too big", "lower n (below 4)", "or raise the limit"]
    assert [(s.name, s.status) for s in failure.value.run.steps] == [
        ("count", "finished"),
        ("check", "failed"),
    ]
    log = failure.value.run.log_path("check")
    assert log is not None and "ValueError: value 5 is too big" in log.read_text()


def test_cache_reuses_steps_whose_inputs_did_not_change(tmp_path: Path) -> None:
    workspace, cache = Workspace(tmp_path / "ws"), tmp_path / "cache"
    first = run_locally(toy, {"n": 2}, workspace, cache_root=cache)
    again = run_locally(toy, {"n": 2}, workspace, cache_root=cache)
    changed = run_locally(toy, {"n": 2, "limit": 4}, workspace, cache_root=cache)
    assert [s.status for s in first.steps] == ["finished", "finished"]
    assert [s.status for s in again.steps] == ["cached", "cached"] and again.output == "fine"
    assert all(s.seconds == 0 for s in again.steps)
    # count is reused (its artifact lives in the first run's folder); check runs again, and its
    # log lands in this run's folder, not in the folder its input came from.
    assert [(s.name, s.status) for s in changed.steps] == [("count", "cached"), ("check", "finished")]
    assert changed.run_dir is not None and changed.run_dir != first.run_dir
    assert changed.log_path("check") == changed.run_dir / "logs" / "check.log"
    assert (changed.run_dir / "logs" / "check.log").is_file()
    assert (
        first.run_dir is not None
        and (first.run_dir / "logs" / "check.log").read_text().count("Executing") == 1
    )
    # A reused step names the run whose step made its outputs, in its line and in the run's steps.
    assert [s.reused_from for s in again.steps] == [first.run_dir.name] * 2
    assert changed.steps[0].figure == f"inputs unchanged: outputs of run {first.run_dir.name} reused"
    assert changed.steps[1].reused_from == ""


def test_a_hit_whose_outputs_were_deleted_runs_again(tmp_path: Path) -> None:
    """kfp.local treats an entry whose output file is gone as a miss; the consumers of the new output run
    again too (its URI is in their key), and the next hit names the run that made the output anew."""
    import shutil

    workspace, cache = Workspace(tmp_path / "ws"), tmp_path / "cache"
    first = run_locally(toy, {"n": 2}, workspace, cache_root=cache)
    assert first.run_dir is not None
    shutil.rmtree(first.run_dir / "count")  # a user cleaning the workspace
    remade = run_locally(toy, {"n": 2}, workspace, cache_root=cache)
    assert [(s.name, s.status) for s in remade.steps] == [("count", "finished"), ("check", "finished")]
    assert remade.output == "fine" and remade.run_dir is not None
    again = run_locally(toy, {"n": 2}, workspace, cache_root=cache)
    assert [s.status for s in again.steps] == ["cached", "cached"]
    assert [s.reused_from for s in again.steps] == [remade.run_dir.name] * 2


def test_a_print_left_swapped_by_kfp_is_restored_after_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """kfp.local indents task output by swapping builtins.print; tasks of a ParallelFor swap it on threads at
    once and can leave the indenting print behind (it happened: every later line of the process started with
    four spaces). Here the swap is left behind on purpose, as the race leaves it."""
    import builtins
    import contextlib
    from collections.abc import Iterator

    from kfp.local import logging_utils

    original = builtins.print
    monkeypatch.setattr(builtins, "print", original)  # put back at teardown even if the run leaks it

    @contextlib.contextmanager
    def leaky_indent(num_spaces: int = 4) -> Iterator[None]:
        before = builtins.print
        builtins.print = lambda *a, **k: before(" " * num_spaces, *a, **k)
        yield

    monkeypatch.setattr(logging_utils, "indented_print", leaky_indent)
    result = run_locally(toy, {"n": 1}, Workspace(tmp_path / "ws"))
    assert result.output == "fine"
    assert builtins.print is original
    capsys.readouterr()
    print("after the run")
    assert capsys.readouterr().out == "after the run\n"
