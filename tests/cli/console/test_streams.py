"""TaskStreams sorts kfp.local's output into per-task logs and events, thread by thread."""

from __future__ import annotations

import threading
from pathlib import Path

from cli.console.kfp_lines import TaskEvent, run_dir_pattern, task_event
from cli.console.streams import RUN_LOG, TaskStreams
from mlops.progress import Progress


class Recorder:
    def __init__(self) -> None:
        self.events: list[TaskEvent] = []
        self.progress: list[tuple[str, Progress]] = []

    def on_task(self, event: TaskEvent) -> None:
        self.events.append(event)

    def on_progress(self, task: str, progress: Progress) -> None:
        self.progress.append((task, progress))


def _streams(tmp_path: Path, recorder: Recorder) -> TaskStreams:
    root = tmp_path / "pipeline-runs"
    return TaskStreams(root / ".logs-1", run_dir_pattern(str(root), "toy"), recorder)


def test_kfp_lines_with_colour_codes_are_task_events() -> None:
    assert task_event("15:07:08.567 - INFO - Executing task 'prepare-data'") == TaskEvent(
        "started", "prepare-data"
    )
    assert task_event("15:07:09.950 - INFO - Task 'a-b' finished with status SUCCESS") == TaskEvent(
        "finished", "a-b"
    )
    assert task_event("15:07:09.950 - ERROR - Task 'x' finished with status FAILURE") == TaskEvent(
        "failed", "x"
    )
    assert task_event("Task train-model cache hit (key=0123456789ab); skipping execution.") == TaskEvent(
        "cached", "train-model", "0123456789ab"
    )
    assert task_event("    Executing task 'x' said the user") is None


def test_each_line_goes_to_its_task_log_and_the_run_folder_is_found(tmp_path: Path) -> None:
    recorder = Recorder()
    streams = _streams(tmp_path, recorder)
    run_dir = tmp_path / "pipeline-runs" / "toy-2026-01-02-03-04-05-123456"
    streams.write("12:00:00.000 - INFO - Running pipeline: \x1b[95m'toy'\x1b[0m\n")
    streams.write("12:00:00.001 - INFO - Executing task \x1b[96m'count'\x1b[0m\n")
    earlier = tmp_path / "pipeline-runs" / "toy-2026-01-01-03-04-05-000001"
    streams.write(f'    "uri": "{earlier}/prepare/data",\n')  # an input from an earlier (cached) run
    streams.write("    ")  # kfp.local prints a task's line as indent + text, in two writes
    streams.write(f'    "outputFile": "{run_dir}/count/executor_output.json"\n')
    streams.write('    ::mlops-progress:: {"unit":"epoch","total":3,"completed":1,"text":"val AUC 0.7"}\n')
    streams.write("    counted 3\n12:00:01.000 - INFO - Task 'count' finished with status SUCCESS\n")
    streams.write("-" * 80 + "\n")
    streams.write("12:00:01.000 - INFO - Pipeline 'toy' finished\n")
    streams.close()

    assert streams.run_dir == run_dir
    assert streams.log_dir == run_dir / "logs" and not (tmp_path / "pipeline-runs" / ".logs-1").exists()
    count_log = (run_dir / "logs" / "count.log").read_text()
    assert "counted 3" in count_log and "Pipeline 'toy' finished" not in count_log
    assert "Pipeline 'toy' finished" in (run_dir / "logs" / RUN_LOG).read_text()
    assert recorder.events == [TaskEvent("started", "count"), TaskEvent("finished", "count")]
    assert recorder.progress == [("count", Progress("epoch", 3, completed=1, text="val AUC 0.7"))]


def test_parallel_tasks_keep_their_own_lines(tmp_path: Path) -> None:
    recorder = Recorder()
    streams = _streams(tmp_path, recorder)
    barrier = threading.Barrier(2)

    def task(name: str) -> None:
        streams.write(f"12:00:00.000 - INFO - Executing task '{name}'\n")
        barrier.wait()
        for i in range(200):
            streams.write("    ")
            streams.write(f"{name} line {i}\n")

    threads = [threading.Thread(target=task, args=(n,)) for n in ("worker-1", "worker-2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    streams.close()
    for name, other in (("worker-1", "worker-2"), ("worker-2", "worker-1")):
        text = (streams.log_dir / f"{name}.log").read_text()
        assert text.count(f"{name} line") == 200 and other not in text.replace(f"'{name}'", "")


def test_verbose_echoes_the_raw_output(tmp_path: Path) -> None:
    import io

    echo = io.StringIO()
    root = tmp_path / "pipeline-runs"
    streams = TaskStreams(root / ".logs", run_dir_pattern(str(root), "toy"), Recorder(), echo=echo)
    streams.write("12:00:00.000 - INFO - Executing task 'count'\n    hello\n")
    streams.close()
    assert echo.getvalue() == "12:00:00.000 - INFO - Executing task 'count'\n    hello\n"
