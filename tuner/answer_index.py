"""The answers' data held in memory and kept fresh, so answering needs no query at all.

The best_config table is small (one row per tuned device and shape), and so are the device and
device-rates tables: all three are read into an immutable :class:`Snapshot` (a
:class:`~tuner.answers.Tuning`). :class:`BestIndex` reloads it after ``ttl_s`` seconds when the
database changed (:func:`storage.best_configs_fingerprint`, a one-row query), or at once after
this process wrote a result (:meth:`BestIndex.invalidate`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from functools import cached_property

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

import storage
from tuner.answers import DeviceInfo, Tuned, Tuning, shape_values
from tuner.device_kind import MathRates
from tuner.errors import InputError
from tuner.families import checked_config


def device_info(row: storage.Device) -> DeviceInfo:
    return DeviceInfo(row.name, row.arch, row.sm_count)


# Tuned's fields read off the best config's measurement record as they are.
_FROM_RECORD = ("family", "config_name", "params", "tflops", "cublas_tflops", "ratio", "provenance")


def readable(family: str, config_name: str) -> bool:
    """Whether this version can serve a stored config: a known family, a name that parses to
    a config of that family obeying its rules (rendering anything else could fail)."""
    try:
        return checked_config(config_name, family).name == config_name
    except InputError:
        return False


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


class Snapshot(Tuning):
    """A :class:`~tuner.answers.Tuning` as read at one moment, with a cache for the API."""

    # Best configs left out because this version cannot read them (never served).
    unreadable: tuple[str, ...] = ()

    @cached_property
    def responses(self) -> dict[tuple[object, ...], bytes]:
        """Rendered responses by request, filled by the API; dies with the snapshot."""
        return {}


def load_snapshot(session: Session) -> Snapshot:
    """Every readable best config, device and newest device rates in the database."""
    rates = {
        row.device.name: MathRates(row.ffma_tflops, row.fp64_tensor_tflops)
        for row in storage.latest_device_rates(session)
    }
    entries, unreadable = [], []
    for row in storage.best_configs(session):
        name, family = row.measurement.config_name, row.measurement.family
        if readable(family, name):
            entries.append(tuned(row))
        else:
            unreadable.append(name)
    snapshot = Snapshot(entries, (device_info(row) for row in storage.list_devices(session)), rates)
    snapshot.unreadable = tuple(unreadable)
    return snapshot


class BestIndex:
    """A :class:`Snapshot` kept fresh: reloaded after ``ttl_s`` or after :meth:`invalidate`.

    Thread-safe: readers take the current snapshot (an immutable object) without locking; one
    thread at a time reloads it.
    """

    def __init__(
        self,
        sessions: sessionmaker[Session],
        ttl_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sessions = sessions
        self._ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._loaded_at = -math.inf
        # A write bumps the generation; a reload that began before the write does not count.
        self._generation = 0
        self._loaded_generation = -1
        self._fingerprint: tuple[object, ...] | None = None
        # Why the snapshot may be out of date (the database failed at the last reload), or None.
        self.stale: str | None = None
        self._succeeded_at = -math.inf

    def invalidate(self) -> None:
        """Forget the snapshot: the next answer reloads (call after writing results)."""
        self._generation += 1

    def _fresh(self) -> bool:
        return (
            self._snapshot is not None
            and self._loaded_generation == self._generation
            and self._clock() - self._loaded_at < self._ttl_s
        )

    def snapshot(self) -> Snapshot:
        current = self._snapshot
        if current is not None and self._fresh():
            return current
        with self._lock:
            if not self._fresh():
                generation, started = self._generation, self._clock()
                try:
                    self._reload(generation)
                except SQLAlchemyError as exc:
                    if self._snapshot is None:
                        raise
                    # Keep answering from memory; try the database again after the TTL.
                    self.stale = _stale_reason(exc, started - self._succeeded_at)
                else:
                    self.stale, self._succeeded_at = None, started
                self._loaded_at, self._loaded_generation = started, generation
            assert self._snapshot is not None
            return self._snapshot

    def _reload(self, generation: int) -> None:
        with self._sessions() as session:
            # After the TTL, a one-row query says whether anything changed; the tables are
            # only read again when it did.
            mark = storage.best_configs_fingerprint(session)
            if (
                self._snapshot is None
                or mark != self._fingerprint
                or generation != self._loaded_generation
            ):
                self._snapshot = load_snapshot(session)
                self._fingerprint = mark


def _stale_reason(exc: SQLAlchemyError, age_s: float) -> str:
    """One ASCII line (it travels in an HTTP header)."""
    original = getattr(exc, "orig", None) or exc
    first = (str(original).strip().splitlines() or [type(original).__name__])[0]
    text = " ".join(first.split())[:200].encode("ascii", "replace").decode()
    return f"database unavailable ({text}); answers come from memory, as read {age_s:.0f} s earlier"
