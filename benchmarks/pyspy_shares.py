"""Where a process's time goes: py-spy's samples of it, summed by function.

``record(pid, path)`` starts ``py-spy record`` on a running process (every thread, idle ones left out, raw
collapsed stacks); ``shares(path)`` reads that file and gives each function the share of samples whose
stack holds it (inclusive: a caller counts its callees' time) and the share where it is the innermost
frame (self). A benchmark prints the largest of both beside its figures, so a missed goal comes with its
measured cause.

    python -m benchmarks.pyspy_shares PROFILE.txt [--top 20]    # the shares of a recorded profile
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

_FRAME = re.compile(r"^(?P<function>.+?) \((?P<file>[^()]*?)(?::\d+)?\)$")


@dataclass(frozen=True)
class Share:
    frame: str
    """``function (file)``: the file shortened to its last two parts, the line left out."""
    inclusive: float
    """Share of all samples whose stack holds this frame."""
    self_: float
    """Share of all samples where this frame is the innermost one."""


def record(pid: int, path: Path, rate: int = 100, subprocesses: bool = False) -> subprocess.Popen[bytes]:
    """Start sampling ``pid`` (and its child processes, with ``subprocesses``) into ``path`` until it exits (or
    the returned process is stopped with SIGINT)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    return subprocess.Popen(
        [spy, "record", "--pid", str(pid), "--format", "raw", "--output", str(path), "--rate", str(rate)]
        + ["--threads", "--nonblocking"]
        + (["--subprocesses"] if subprocesses else []),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def record_command(command: list[str], path: Path, rate: int = 100) -> int:
    """Run ``command`` under ``py-spy record`` (its child processes too) into ``path``; its exit status."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    flags = ["--format", "raw", "--output", str(path), "--rate", str(rate), "--threads", "--subprocesses"]
    return subprocess.run([spy, "record", *flags, "--", *command], stdout=subprocess.DEVNULL).returncode


def _frame(text: str) -> str | None:
    """``function (dir/file)``; None for a frame without a file (a ``python -c`` line: its source text)."""
    match = _FRAME.match(text.strip())
    if match is None:
        return None
    file = "/".join(Path(match.group("file")).parts[-2:])
    return f"{match.group('function')} ({file})"


def shares(path: Path) -> tuple[int, list[Share]]:
    """(samples, every frame's shares, largest inclusive first) of a raw py-spy profile."""
    inclusive: Counter[str] = Counter()
    innermost: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        named = (_frame(part) for part in stack.split(";") if not part.startswith(("thread ", "process ")))
        frames = [frame for frame in named if frame is not None]
        if not frames:
            continue
        total += count
        for frame in set(frames):
            inclusive[frame] += count
        innermost[frames[-1]] += count
    if not total:
        return 0, []
    found = [Share(frame, inclusive[frame] / total, innermost[frame] / total) for frame in inclusive]
    return total, sorted(found, key=lambda share: (-share.inclusive, share.frame))


def table(path: Path, top: int = 15) -> list[str]:
    """Markdown rows: the ``top`` frames by inclusive share, then by self share."""
    total, found = shares(path)
    lines = [f"py-spy, {total:,} samples (every thread, idle left out) of `{path.name}`:", ""]
    lines += ["| frame | inclusive | self |", "| --- | ---: | ---: |"]
    by_self = sorted(found, key=lambda share: -share.self_)[:top]
    shown = [*found[:top], *(s for s in by_self if s not in found[:top])]
    lines += [f"| `{s.frame}` | {s.inclusive:.1%} | {s.self_:.1%} |" for s in shown]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("profile", type=Path, help="a py-spy record --format raw file")
    parser.add_argument("--top", type=int, default=15, help="frames shown by inclusive and by self share")
    args = parser.parse_args()
    print("\n".join(table(args.profile, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
