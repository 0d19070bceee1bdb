"""Evaluated candidates copied into a persistent Optuna study, off the study's critical path.

Adding a finished trial to Optuna's RDB storage costs dozens of statements and a commit (about
50 a trial with this writer's check and numbering on the lent H200:
``benchmarks/results/h200-sql-times-2026-11-29-1-old.txt``; 73 ms a candidate in the study
process on the lent H100 beside 15 compiles:
``benchmarks/results/h100-search-throughput-profile-2026-11-24.txt``), so a writer thread does
it while the study measures the next candidates: :meth:`TrialMirror.add` only queues. Its
transactions still take SQLite's write lock, and the interpreter's, from the study loop's own
records (``benchmarks/notebook.md``, "The interpreter lock between the study loop and its
helpers").

What a crash can lose: the study stores a candidate's measurement (``Recorder.record``) before
queueing its trial, so a process killed with trials still queued leaves measurements without trials,
never the reverse; the next run of the study adds them as it finishes (``Study._mirror_missing``).
The queue drains (:meth:`TrialMirror.close`) after the study's finalists, whose rounds its last
trials overlap (``Study.finish``); as a worker leaves a study another worker finishes; when a search
fails; and when the study is closed. A write that fails stops the writer; the error is raised in the
study's thread at the next :meth:`add` or at :meth:`close`, and the candidates not written are added
by the next run as above.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager

import optuna

from tuner.core.result import Result
from tuner.search.trials import finished_trial


class TrialMirror:
    """Adds results to one persistent Optuna study from a writer thread, in the order given,
    and tells ``numbered`` (config name, trial number) after each."""

    def __init__(
        self,
        storage: optuna.storages.BaseStorage,
        study_id: int,
        families: tuple[str, ...],
        numbered: Callable[[str, int], None],
        lock: Callable[[], AbstractContextManager[object]],
    ) -> None:
        self._storage, self._study_id, self._families = storage, study_id, families
        self._numbered, self._lock = numbered, lock
        self._queue: queue.Queue[Result | None] = queue.Queue()
        self._error: BaseException | None = None  # the writer's, kept until raised
        self._stopped = False  # a write failed: the writer writes nothing more
        self._thread = threading.Thread(target=self._write_all, name="optuna-trials", daemon=True)
        self._thread.start()

    def add(self, result: Result) -> None:
        """Queue ``result`` as a finished trial; raises the writer's error, if it had one."""
        self._raise_error()
        self._queue.put(result)

    def close(self, raise_error: bool = True) -> None:
        """Write what is queued, stop the writer, and raise its error if it had one (unless
        ``raise_error`` is False: the study is already failing with an error of its own)."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        if raise_error:
            self._raise_error()

    def _write(self, result: Result) -> None:
        """Add ``result``'s trial unless the study has one for its config: another worker may
        have added it (its ``Study.finish`` adds what it finds missing while this writer still
        held it queued). The check and the write are one step under the study's lock, which
        every worker of the study shares (``Recorder.trial_lock``)."""
        with self._lock():
            number = self._trial_of(result.config_name)
            if number is None:
                trial_id = self._storage.create_new_trial(
                    self._study_id, template_trial=finished_trial(result, self._families)
                )
                number = self._storage.get_trial_number_from_id(trial_id)
        self._numbered(result.config_name, number)

    def _trial_of(self, config_name: str) -> int | None:
        """The number of the study's trial for ``config_name``, if it has one (read again: other
        processes add trials)."""
        for trial in self._storage.get_all_trials(self._study_id, deepcopy=False):
            if trial.user_attrs.get("config") == config_name:
                return trial.number
        return None

    def _raise_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    def _write_all(self) -> None:
        while (result := self._queue.get()) is not None:
            if self._stopped:
                continue  # the next run adds what is left (module docstring)
            try:
                self._write(result)
            except BaseException as exc:  # raised in the study's thread (_raise_error)
                self._error, self._stopped = exc, True
