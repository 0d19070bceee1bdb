"""The answers' data held in memory and kept fresh, so answering needs no query at all.

The best_config table is small (one row per tuned device and shape), and so are the device and
device-rates tables: all three are read into an immutable :class:`Snapshot` (a
:class:`~tuner.answers.best.Tuning`). :class:`BestIndex` holds the current one and replaces it,
never changes it: after this process wrote results (:meth:`BestIndex.apply_written`, the rows
it made best) and whenever :meth:`BestIndex.refresh` runs (the API runs it in a background
thread), each time with only the rows that changed. Readers never wait for either.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

import storage
from tuner.answers.answer import DeviceInfo
from tuner.answers.answer_cache import AnswerCache, Change, Changes
from tuner.answers.best import Tuned, Tuning, shape_values
from tuner.answers.device_kind import MathRates
from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.kernels.families import checked_config, get_family

# Best configs are read again from this long before the newest update time the index holds: a
# writer stamps ``updated_at`` before it commits, so a row can appear later with an older time.
# Rows that appear later still are found by the fingerprint (a full read then).
LATE_COMMITS = timedelta(seconds=10)

# Incremental reads tried before a full one, when the database's fingerprint and the index's
# still differ after a read (a row deleted, or written while the index read).
_CATCH_UP_TRIES = 2


def device_info(row: storage.Device) -> DeviceInfo:
    return DeviceInfo(row.name, row.arch, row.sm_count)


# Tuned's fields read off the best config's measurement record as they are.
_FROM_RECORD = (
    "family", "config_name", "params", "tflops", "cublas_tflops", "ratio", "provenance", "accuracy",
)  # fmt: skip


def readable(family: str, config_name: str, shape: Shape | None = None) -> bool:
    """Whether this version can serve a stored config: a known family, a name that parses to
    a config of that family obeying its rules (rendering anything else could fail), and, for
    ``shape``, a family that computes its dtype, layout and type of C (a row stored before
    uploads were held to that, e.g. a warptile time for a float16 shape, measured another
    product and would be served for this one)."""
    try:
        config = checked_config(config_name, family)
    except InputError:
        return False
    if config.name != config_name:
        return False
    return shape is None or get_family(family).unsupported(shape) is None


def tuned(row: storage.BestConfig) -> Tuned:
    """One best_config row (with its device, shape and measurement) as plain values."""
    values = storage.measurement_values(row.measurement, derive_tflops=True)
    return Tuned(
        best_id=row.id,
        device=device_info(row.device),
        **shape_values(row.shape),
        ms=values["ms"] if values["ms"] is not None else math.inf,
        **{name: values[name] for name in _FROM_RECORD},
    )


@dataclass(frozen=True)
class StoredBest:
    """One best_config row as the index holds it: its values, and what tells a newer
    version of the row from this one."""

    best_id: int
    measurement_id: int
    updated_at: datetime
    config_name: str
    entry: Tuned | None  # None: this version cannot read the config, so it is never served

    @property
    def version(self) -> tuple[int, datetime]:
        return self.measurement_id, self.updated_at


def stored_best(row: storage.BestConfig) -> StoredBest:
    name, family = row.measurement.config_name, row.measurement.family
    try:
        shape = Shape(**shape_values(row.shape))
    except ValueError:  # a dtype or layout this version does not know (InputError too)
        entry = None
    else:
        entry = tuned(row) if readable(family, name, shape) else None
    return StoredBest(row.id, row.measurement_id, row.updated_at, name, entry)


class Snapshot(Tuning):
    """A :class:`~tuner.answers.best.Tuning` as read at one moment, with a cache for the API.

    Immutable once built: a change makes a new snapshot (:meth:`merged`), whose response cache
    starts with the answers the change cannot alter.
    """

    def __init__(
        self,
        bests: Iterable[StoredBest] = (),
        devices: Mapping[int, DeviceInfo] | None = None,
        rates: Mapping[str, MathRates] | None = None,
        rates_id: int = 0,
        responses: AnswerCache | None = None,
    ) -> None:
        self.bests = {best.best_id: best for best in bests}
        # Rendered responses by request, filled by the API; what a change cannot alter is
        # carried into the next snapshot (merged).
        self.responses = responses if responses is not None else AnswerCache()
        self.device_ids = dict(devices or {})
        self.rates_id = rates_id  # the newest device_rates row when the rates were read
        readable_ones = (best.entry for best in self.bests.values() if best.entry is not None)
        super().__init__(readable_ones, self.device_ids.values(), rates or {})
        # Best configs left out because this version cannot read them (never served).
        self.unreadable = tuple(b.config_name for b in self.bests.values() if b.entry is None)

    def mark(self) -> storage.BestConfigsMark:
        """The fingerprint of a database holding exactly what this snapshot holds."""
        return storage.BestConfigsMark(
            bests=len(self.bests),
            best_id_sum=sum(self.bests),
            measurement_id_sum=sum(best.measurement_id for best in self.bests.values()),
            devices=len(self.device_ids),
            last_device_id=max(self.device_ids, default=0),
            last_rates_id=self.rates_id,
        )

    def newest_update(self) -> datetime | None:
        return max((best.updated_at for best in self.bests.values()), default=None)

    def merged(
        self,
        bests: Iterable[StoredBest] = (),
        devices: Mapping[int, DeviceInfo] | None = None,
        rates: tuple[Mapping[str, MathRates], int] | None = None,
    ) -> Snapshot:
        """A snapshot with these rows added or replaced; this one when none differs. The
        rendered answers the change cannot alter come along (:mod:`tuner.answers.answer_cache`)."""
        changed = {b.best_id: b for b in bests if _version(self.bests.get(b.best_id)) != b.version}
        added = {i: d for i, d in (devices or {}).items() if self.device_ids.get(i) != d}
        new_rates_read = rates is not None and rates[1] != self.rates_id
        if not changed and not added and not new_rates_read:
            return self
        new_rates, rates_id = rates if rates is not None else (self.rates, self.rates_id)
        moved = (self.bests.get(i) for i in changed)
        shapes = _changes((*moved, *changed.values()))
        kept = self.responses.carried(Changes(shapes, everything=bool(added) or new_rates_read))
        return Snapshot(
            {**self.bests, **changed}.values(),
            {**self.device_ids, **added},
            new_rates,
            rates_id,
            kept,
        )


def _version(best: StoredBest | None) -> tuple[int, datetime] | None:
    return None if best is None else best.version


def _changes(bests: Iterable[StoredBest | None]) -> tuple[Change, ...]:
    """Where the readable ones among ``bests`` (old and new versions of changed rows) sit."""
    return tuple(
        Change((b.entry.dtype, b.entry.layout), b.entry.log_point)
        for b in bests
        if b is not None and b.entry is not None
    )


def read_rates(session: Session) -> tuple[dict[str, MathRates], int]:
    """The newest rates of every device, and the newest device_rates id (read first, so rates
    stored meanwhile show as a change next time)."""
    rates_id = storage.best_configs_fingerprint(session).last_rates_id
    rates = {
        row.device.name: MathRates(row.ffma_tflops, row.fp64_tensor_tflops)
        for row in storage.latest_device_rates(session)
    }
    return rates, rates_id


def load_snapshot(session: Session) -> Snapshot:
    """Every best config (readable or not), device and newest device rates in the database."""
    rates, rates_id = read_rates(session)
    devices = {row.id: device_info(row) for row in storage.list_devices(session, trusted_only=True)}
    bests = [stored_best(row) for row in storage.best_configs(session)]
    return Snapshot(bests, devices, rates, rates_id)


def catch_up(session: Session, snapshot: Snapshot) -> Snapshot:
    """``snapshot`` brought up to the database by reading only what changed: best configs
    updated since its newest (less :data:`LATE_COMMITS`), devices after its last, the rates
    when new ones were stored. Read in full when that does not account for the difference
    (a row deleted, or committed later than :data:`LATE_COMMITS` after its update time)."""
    for _ in range(_CATCH_UP_TRIES):
        mark, own = storage.best_configs_fingerprint(session), snapshot.mark()
        if mark == own:
            return snapshot
        bests = []
        if mark[:3] != own[:3]:
            newest = snapshot.newest_update()
            since = None if newest is None else newest - LATE_COMMITS
            bests = [stored_best(row) for row in storage.best_configs_updated_since(session, since)]
        devices = {}
        if mark[3:5] != own[3:5]:
            later = storage.devices_after(session, own.last_device_id)
            devices = {row.id: device_info(row) for row in later}
        rates = read_rates(session) if mark.last_rates_id != own.last_rates_id else None
        snapshot = snapshot.merged(bests, devices, rates)
    if storage.best_configs_fingerprint(session) == snapshot.mark():
        return snapshot
    return load_snapshot(session)


class BestIndex:
    """The current :class:`Snapshot` of a database, replaced as the database changes.

    Thread-safe. :meth:`snapshot` only reads an attribute (it queries once, when nothing has
    been read yet). :meth:`refresh` and :meth:`apply_written` hold one lock across their read
    and the swap, so a read made earlier never replaces one made later.
    """

    def __init__(
        self,
        sessions: sessionmaker[Session],
        ttl_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sessions = sessions
        self.interval_s = ttl_s  # how often a refresher should call refresh()
        self._clock = clock
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._refreshed_at = -math.inf
        # Why the snapshot may be out of date (the database failed at the last read), or None.
        self.stale: str | None = None
        self._succeeded_at = -math.inf

    @property
    def current(self) -> Snapshot | None:
        """The current snapshot, or None when nothing was read yet; never reads."""
        return self._snapshot

    def snapshot(self) -> Snapshot:
        """The current snapshot (read from the database only if there is none yet).

        Raises:
            SQLAlchemyError: nothing was read yet and the database fails.
        """
        current = self._snapshot
        if current is not None:
            return current
        with self._lock:
            if self._snapshot is None:
                self._read(load_snapshot)
            assert self._snapshot is not None
            return self._snapshot

    def refresh(self) -> None:
        """Bring the snapshot up to date (:func:`catch_up`: a one-row fingerprint, then only
        the rows that changed). When the database fails the snapshot stays and :attr:`stale`
        says why; it clears at the next read that succeeds.

        Raises:
            SQLAlchemyError: nothing was read yet and the database fails.
        """
        with self._lock:
            current = self._snapshot
            self._read(load_snapshot if current is None else lambda s: catch_up(s, current))

    def refresh_if_due(self) -> Snapshot:
        """The snapshot, refreshed first when the last refresh is ``ttl_s`` old: for a process
        that runs no refresher of its own (the Python client reading a database)."""
        if self._clock() - self._refreshed_at >= self.interval_s:
            self.refresh()
        return self.snapshot()

    def apply_written(self, measurement_ids: Sequence[int]) -> None:
        """Merge the best configs among ``measurement_ids`` (just committed by this process),
        and the devices they brought, so the next answer has them. A database failure here
        loses nothing: the rows are stored, and the next :meth:`refresh` reads them."""
        if not measurement_ids:
            return
        with self._lock:
            current = self._snapshot
            if current is None:
                return  # the first snapshot() reads everything

            def written(session: Session) -> Snapshot:
                bests = [stored_best(r) for r in storage.best_configs_of(session, measurement_ids)]
                after = max(current.device_ids, default=0)
                devices = {r.id: device_info(r) for r in storage.devices_after(session, after)}
                return current.merged(bests, devices)

            self._read(written, refreshed=False)  # a snapshot exists: never raises

    def _read(self, read: Callable[[Session], Snapshot], refreshed: bool = True) -> None:
        """Swap in ``read``'s snapshot; on a database error keep the old one (raise when
        there is none) and say why in :attr:`stale`. Call with the lock held."""
        started = self._clock()
        try:
            with self._sessions() as session:
                snapshot = read(session)
        except SQLAlchemyError as exc:
            if self._snapshot is None:
                raise
            self.stale = _stale_reason(exc, started - self._succeeded_at)
        else:
            self._snapshot = snapshot
            self.stale, self._succeeded_at = None, started
        if refreshed:
            self._refreshed_at = started


def _stale_reason(exc: SQLAlchemyError, age_s: float) -> str:
    """One ASCII line (it travels in an HTTP header)."""
    original = getattr(exc, "orig", None) or exc
    first = (str(original).strip().splitlines() or [type(original).__name__])[0]
    text = " ".join(first.split())[:200].encode("ascii", "replace").decode()
    return f"database unavailable ({text}); answers come from memory, as read {age_s:.0f} s earlier"
