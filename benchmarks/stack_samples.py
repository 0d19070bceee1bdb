"""Where processes spend their time, from ``py-spy dump`` every few tenths of a second: for each
process, how often its main thread stood in each function, counted at the innermost frame of the
project's own code (the ``tuner``, ``storage`` and ``api`` folders beside the installed
``tuner``) and at the innermost frame of all.

Used by ``fleet_scaling.py --py-spy`` to tell apart what a fleet of workers waits on (a compile,
a measurement, the database). py-spy must be on the PATH and allowed to read the processes
(ptrace); a dump that fails is counted, not raised.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tuner

PROJECT_PACKAGES = ("tuner", "storage", "api")
THREAD = re.compile(r"^Thread (\d+) \((\w+)\)")
FRAME = re.compile(r"^\s+(\S.*?) \((.+):(\d+)\)\s*$")


def project_roots() -> tuple[str, ...]:
    """The folders of the project's own code, as py-spy's full file names start: beside the
    ``tuner`` package this process imports (the workers run the same tree)."""
    root = Path(tuner.__file__).resolve().parents[1]
    return tuple(f"{root / package}/" for package in PROJECT_PACKAGES)


@dataclass(frozen=True)
class Frame:
    function: str
    path: str
    line: int

    def label(self) -> str:
        """``function (file:line)``, the file's path cut to its last two parts."""
        short = "/".join(self.path.rsplit("/", 2)[-2:])
        return f"{self.function} ({short}:{self.line})"


@dataclass(frozen=True)
class MainThread:
    """One dump's main thread: py-spy's state for it (``active`` or ``idle``) and its frames,
    innermost first."""

    state: str
    frames: tuple[Frame, ...]

    def project_frame(self, roots: tuple[str, ...]) -> Frame | None:
        """The innermost frame in a file under one of ``roots``, if any."""
        return next((f for f in self.frames if f.path.startswith(roots)), None)


def main_thread(dump: str, pid: int) -> MainThread | None:
    """The main thread (the one whose id is the process id) of one ``py-spy dump`` text; None
    where the dump holds no such thread."""
    state: str | None = None
    frames: list[Frame] = []
    for line in dump.splitlines():
        header = THREAD.match(line)
        if header:
            if state is not None:  # the main thread's block has ended
                break
            if int(header.group(1)) == pid:
                state = header.group(2)
            continue
        frame = FRAME.match(line) if state is not None else None
        if frame:
            frames.append(Frame(frame.group(1), frame.group(2), int(frame.group(3))))
    return MainThread(state, tuple(frames)) if state is not None else None


@dataclass
class Tally:
    """What the dumps of one process said."""

    roots: tuple[str, ...] = field(default_factory=project_roots)
    samples: int = 0
    failed: int = 0
    states: Counter[str] = field(default_factory=Counter)
    project: Counter[str] = field(default_factory=Counter)
    innermost: Counter[str] = field(default_factory=Counter)

    def add(self, thread: MainThread | None) -> None:
        if thread is None:
            self.failed += 1
            return
        self.samples += 1
        self.states[thread.state] += 1
        own = thread.project_frame(self.roots)
        self.project[own.label() if own else "(outside the project)"] += 1
        self.innermost[thread.frames[0].label() if thread.frames else "(no frame)"] += 1

    def summary(self, top: int = 12) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "failed_dumps": self.failed,
            "states": dict(self.states),
            "project_frames": dict(self.project.most_common(top)),
            "innermost_frames": dict(self.innermost.most_common(top)),
        }


class StackSampler:
    """``py-spy dump`` of each named process every ``interval_s`` from a thread, while the
    ``with`` block runs."""

    def __init__(self, processes: dict[str, int], interval_s: float) -> None:
        self.processes = processes
        self.interval_s = interval_s
        self.tallies = {name: Tally() for name in processes}
        self.py_spy = shutil.which("py-spy")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _dump(self, pid: int) -> MainThread | None:
        assert self.py_spy is not None
        try:
            done = subprocess.run(
                [self.py_spy, "dump", "--full-filenames", "--pid", str(pid)],
                capture_output=True,
                text=True,
                timeout=10,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return main_thread(done.stdout, pid) if done.returncode == 0 else None

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            for name, pid in self.processes.items():
                self.tallies[name].add(self._dump(pid))

    def __enter__(self) -> StackSampler:
        if self.py_spy is None:
            raise SystemExit("py-spy is not on the PATH (pip install py-spy)")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, Any]:
        return {name: tally.summary() for name, tally in self.tallies.items()}
