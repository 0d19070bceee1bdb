"""Studies as the dashboard last read them, with what their pages computed from them.

Reading a 10 000-trial study and drawing its charts takes about half a second; a page view
that finds the study as it was (the same :class:`storage.StudyProgress`: trial count, numbered
trials, newest id and time, one small query) takes what was kept instead, and only the trial
table is cut again. A study that gained, or numbered, a trial since is read again (only the
new rows, when they were appended), so a page is never staler than its one progress query, but
for its parameter importances: those are computed again once the study has grown by
:data:`STALE_SHARE`, and until then the page shows the last ones and on how many trials.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from sqlalchemy.orm import Session

import storage
from api.study_data import Study, extend_study, load_study
from tuner.core.phases import Phase

T = TypeVar("T")

# A running study's page computes its importances again once it has this share more trials
# than they were computed on (a 10 000-trial study: every 500 trials, not on every one).
STALE_SHARE = 0.05


@dataclass(frozen=True)
class Importances:
    """Parameter importances of a study (:func:`api.importance.importances`) and the trial
    count of the state they were computed on; ``current`` False: an earlier state's."""

    values: dict[str, float]
    trials: int
    current: bool


@dataclass
class CachedStudy:
    """One study in one state, and the values computed from it (charts per view).

    ``earlier`` holds the importances computed on earlier states of the study (by family);
    they serve while the study has grown by at most ``stale_share`` of their trial count.
    """

    state: storage.StudyProgress
    study: Study
    earlier: dict[str | None, Importances] = field(default_factory=dict)
    stale_share: float = 0.0
    _kept: dict[Hashable, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, once per ``key`` for this state of the study."""
        with self._lock:
            if key in self._kept:
                return self._kept[key]  # type: ignore[no-any-return]
        value = compute()  # outside the lock: another view of the study need not wait
        with self._lock:
            return self._kept.setdefault(key, value)  # type: ignore[no-any-return]

    def importances(
        self, family: str | None, compute: Callable[[], dict[str, float]]
    ) -> Importances:
        """The importances within ``family``: an earlier state's while they are recent
        enough, else this state's, computed here once."""
        key = ("importances", family)
        with self._lock:
            done = key in self._kept
        older = self.earlier.get(family)
        grown = 0 if older is None else self.state.trials - older.trials
        if not done and older is not None and 0 < grown <= self.stale_share * older.trials:
            return older
        return Importances(self.memo(key, compute), self.state.trials, current=True)

    def latest_importances(self) -> dict[str | None, Importances]:
        """The newest importances known, by family: this state's, else an earlier one's."""
        with self._lock:
            mine = {
                key[1]: Importances(value, self.state.trials, current=True)
                for key, value in self._kept.items()
                if isinstance(key, tuple) and key[0] == "importances"
            }
        return {**self.earlier, **mine}


class StudyCache:
    """The last ``size`` studies read, by name and phase; safe to share between request
    threads."""

    def __init__(self, size: int = 4, stale_share: float = STALE_SHARE) -> None:
        self.size = size
        self.stale_share = stale_share
        self._studies: OrderedDict[tuple[str, Phase], CachedStudy] = OrderedDict()
        self._lock = threading.Lock()
        self.reads = 0  # how many times a study was read from the database (tests, benchmarks)

    def get(
        self, session: Session, name: str, phase: Phase = Phase.SCREENING
    ) -> CachedStudy | None:
        """The study named ``name``, in ``phase``, as stored now (None when no measurement
        belongs to it)."""
        key = (name, phase)
        state = storage.study_progress(session, name, phase)
        with self._lock:
            kept = self._studies.get(key)
            if kept is not None and kept.state == state:
                self._studies.move_to_end(key)
                return kept
        if state.trials == 0:
            self._forget(key)
            return None
        # Read after the state: the rows are at least as new as it, so a later change shows
        # as a different state and is read then.
        study = _appended(session, kept, state) if kept is not None else None
        study = study or load_study(session, name, phase)
        if study is None:
            self._forget(key)
            return None
        earlier = (
            {}
            if kept is None
            else {
                family: replace(found, current=False)
                for family, found in kept.latest_importances().items()
            }
        )
        fresh = CachedStudy(state, study, earlier, self.stale_share)
        with self._lock:
            self.reads += 1
            self._studies[key] = fresh
            self._studies.move_to_end(key)
            while len(self._studies) > self.size:
                self._studies.popitem(last=False)
        return fresh

    def _forget(self, key: tuple[str, Phase]) -> None:
        with self._lock:
            self._studies.pop(key, None)


def _appended(session: Session, kept: CachedStudy, state: storage.StudyProgress) -> Study | None:
    """The kept study with the trials stored since, when it only gained numbered trials (a
    running study); None when it has to be read whole."""
    before = kept.state
    every_numbered = before.numbered == before.trials and state.numbered == state.trials
    if before.last_id is None or not every_numbered or state.trials <= before.trials:
        return None
    return extend_study(session, kept.study, before.last_id, state.trials - before.trials)
