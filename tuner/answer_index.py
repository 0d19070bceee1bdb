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
from collections.abc import Callable, Iterable, Mapping

from sqlalchemy.orm import Session, sessionmaker

import storage
from tuner.answers import DeviceInfo, Tuned, Tuning
from tuner.device_kind import MathRates


def device_info(row: storage.Device) -> DeviceInfo:
    return DeviceInfo(row.name, row.arch, row.sm_count)


def tuned(row: storage.BestConfig) -> Tuned:
    """One best_config row (with its device, shape and measurement) as plain values."""
    shape = row.shape
    values = storage.measurement_values(row.measurement, derive_tflops=True)
    return Tuned(
        best_id=row.id,
        device=device_info(row.device),
        m=shape.m,
        n=shape.n,
        k=shape.k,
        dtype=shape.dtype,
        layout=shape.layout,
        family=values["family"],
        config_name=values["config_name"],
        params=values["params"],
        ms=values["ms"] if values["ms"] is not None else math.inf,
        tflops=values["tflops"],
        cublas_tflops=values["cublas_tflops"],
        ratio=values["ratio"],
        provenance=values["provenance"],
    )


class Snapshot(Tuning):
    """A :class:`~tuner.answers.Tuning` as read at one moment, with a cache for the API."""

    def __init__(
        self,
        entries: Iterable[Tuned],
        devices: Iterable[DeviceInfo],
        rates: Mapping[str, MathRates],
    ) -> None:
        super().__init__(entries, devices, rates)
        # Rendered responses by request, filled by the API; dies with the snapshot.
        self.responses: dict[tuple[object, ...], bytes] = {}


def load_snapshot(session: Session) -> Snapshot:
    """Every best config, device and newest device rates in the database."""
    rates = {
        row.device.name: MathRates(row.ffma_tflops, row.fp64_tensor_tflops)
        for row in storage.latest_device_rates(session)
    }
    return Snapshot(
        (tuned(row) for row in storage.best_configs(session)),
        (device_info(row) for row in storage.list_devices(session)),
        rates,
    )


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
                with self._sessions() as session:
                    # After the TTL, a one-row query says whether anything changed; the
                    # tables are only read again when it did.
                    mark = storage.best_configs_fingerprint(session)
                    if (
                        self._snapshot is None
                        or mark != self._fingerprint
                        or generation != self._loaded_generation
                    ):
                        self._snapshot = load_snapshot(session)
                        self._fingerprint = mark
                self._loaded_at, self._loaded_generation = started, generation
            assert self._snapshot is not None
            return self._snapshot
