"""Which config to run for a GEMM: the answer behind ``POST /v1/configs/best`` and
``tuner.client.best``.

Three sources, tried in order:

* ``exact``: a config tuned for this very shape (and device, if one is named);
* ``nearest``: the config tuned for the closest tuned shape with the same dtype and layout, on the
  same device. Distance is Euclidean in log space, ``sqrt(sum((ln a_i - ln b_i)^2))`` over
  (m, n, k) (:func:`storage.shape_distance`): equal ratios are equal distances, so 128 -> 256 is
  as far as 4096 -> 8192. Its numbers were measured on that other shape and are labelled so;
* ``default``: nothing tuned yet, so a warptile config picked by :func:`default_config`. Every
  kernel is correct for any M, N, K >= 1, so a default is always safe, only maybe slow.

The best_config table is small (one row per tuned device and shape), so it is held in memory as
an immutable snapshot (:class:`BestIndex`) and answers need no query at all; the snapshot is
reloaded after ``ttl_s`` seconds or at once when this process writes a result.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

import storage
from tuner.config import Config
from tuner.families import parse_config
from tuner.render import KernelSource, Launch, render
from tuner.shape import Shape

Source = Literal["exact", "nearest", "default"]

# The default rule: 128x128 block tiles once there are enough of them to fill every SM of an
# H100 (132) at least once; smaller 64x64 tiles otherwise, so small or skinny problems still
# spread over the chip. Both configs are valid for every family rule and fit sm_80..sm_90; on the
# committed H100 sweep they rank 61st of 2575 at 4096^3 (large) and 19th-21st of 1821-2575 at
# 1000^3 and 128x4096x4096 (small).
DEFAULT_LARGE = "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128"
DEFAULT_SMALL = "warptile_bm64_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t128"
DEFAULT_TILE = 128
DEFAULT_WAVE_BLOCKS = 132
DEFAULT_RULE = (
    f"{DEFAULT_LARGE} when ceil(m/{DEFAULT_TILE})*ceil(n/{DEFAULT_TILE}) >= "
    f"{DEFAULT_WAVE_BLOCKS} (one full wave on an H100), else {DEFAULT_SMALL}"
)


def default_config(m: int, n: int) -> Config:
    """The rule-chosen config for a shape nobody has tuned (see :data:`DEFAULT_RULE`)."""
    blocks = -(-m // DEFAULT_TILE) * -(-n // DEFAULT_TILE)
    return parse_config(DEFAULT_LARGE if blocks >= DEFAULT_WAVE_BLOCKS else DEFAULT_SMALL)


def tflops(m: int, n: int, k: int, ms: float | None) -> float | None:
    """TFLOP/s of one m x n x k GEMM done in ``ms`` milliseconds."""
    if ms is None or not ms > 0:
        return None
    value = 2.0 * m * n * k / ms / 1e9
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    arch: str
    sm_count: int


@dataclass(frozen=True)
class Tuned:
    """One best_config row, flattened into plain values (safe to share between threads)."""

    best_id: int
    device: DeviceInfo
    m: int
    n: int
    k: int
    dtype: str
    layout: str
    family: str
    config_name: str
    params: Mapping[str, int]
    ms: float
    tflops: float | None
    cublas_tflops: float | None
    ratio: float | None
    provenance: Mapping[str, Any]
    log_mnk: tuple[float, float, float]

    @classmethod
    def from_row(cls, row: storage.BestConfig) -> Tuned:
        meas, shape, dev = row.measurement, row.shape, row.device
        m, n, k = shape.m, shape.n, shape.k
        cublas_tf = meas.cublas_tflops
        if cublas_tf is None:
            cublas_tf = tflops(m, n, k, meas.cublas_ms)
        return cls(
            best_id=row.id,
            device=DeviceInfo(dev.name, dev.arch, dev.sm_count),
            m=m,
            n=n,
            k=k,
            dtype=shape.dtype,
            layout=shape.layout,
            family=meas.family,
            config_name=meas.config_name,
            params=dict(meas.params),
            ms=meas.ms if meas.ms is not None else math.inf,
            tflops=meas.tflops if meas.tflops is not None else tflops(m, n, k, meas.ms),
            cublas_tflops=cublas_tf,
            ratio=meas.ratio,
            provenance=dict(meas.provenance or {}),
            log_mnk=(math.log(m), math.log(n), math.log(k)),
        )


@dataclass(frozen=True)
class Answer:
    """The config to run for (m, n, k), where it came from, and what it measured."""

    m: int
    n: int
    k: int
    dtype: str
    layout: str
    family: str
    params: Mapping[str, int]
    name: str
    source: Source
    distance: float | None
    measured_on: tuple[int, int, int] | None
    ms: float | None
    tflops: float | None
    cublas_tflops: float | None
    ratio: float | None
    device: DeviceInfo | None
    provenance: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""

    def config(self) -> Config:
        return parse_config(self.name)


@lru_cache(maxsize=256)
def kernel_source(name: str) -> KernelSource:
    """Rendered CUDA source of a config, cached by its procedural name."""
    return render(parse_config(name))


def launch_geometry(name: str, m: int, n: int, k: int, sm_count: int | None) -> Launch:
    """Grid, block and dynamic shared memory of ``name`` for the shape; a persistent grid
    (``streamk``) is sized for ``sm_count``, the SMs of the device it was measured on."""
    return kernel_source(name).launch(Shape(m, n, k), sm_count)


class Snapshot:
    """Best configs indexed for lookup: exact by shape key, nearest by a scan of the list."""

    def __init__(self, entries: Iterable[Tuned]) -> None:
        self.entries = tuple(entries)
        self.by_shape: dict[tuple[int, int, int, str, str], list[Tuned]] = {}
        for entry in self.entries:
            key = (entry.m, entry.n, entry.k, entry.dtype, entry.layout)
            self.by_shape.setdefault(key, []).append(entry)
        for group in self.by_shape.values():
            group.sort(key=lambda e: (e.ms, e.best_id))
        # Rendered responses by request, filled by the API; dies with the snapshot.
        self.responses: dict[tuple[object, ...], bytes] = {}

    def answer(
        self,
        m: int,
        n: int,
        k: int,
        dtype: str = "float32",
        layout: str = "row-major",
        device: str | None = None,
    ) -> Answer:
        """Exact, else nearest (same device, dtype and layout), else the default rule."""
        for entry in self.by_shape.get((m, n, k, dtype, layout), ()):
            if device is None or entry.device.name == device:
                return _from_entry(entry, m, n, k, "exact", 0.0)
        target = (math.log(m), math.log(n), math.log(k))
        best: tuple[float, float, int, Tuned] | None = None
        for entry in self.entries:
            if entry.dtype != dtype or entry.layout != layout:
                continue
            if device is not None and entry.device.name != device:
                continue
            a, b, c = entry.log_mnk
            dist = math.sqrt((a - target[0]) ** 2 + (b - target[1]) ** 2 + (c - target[2]) ** 2)
            key = (dist, entry.ms, entry.best_id, entry)
            if best is None or key[:3] < best[:3]:
                best = key
        if best is not None:
            return _from_entry(best[3], m, n, k, "nearest", best[0])
        return _default_answer(m, n, k, dtype, layout, device)


def _from_entry(entry: Tuned, m: int, n: int, k: int, source: Source, dist: float) -> Answer:
    if source == "exact":
        note = f"tuned for {m}x{n}x{k} on {entry.device.name}"
    else:
        note = (
            f"no config tuned for {m}x{n}x{k}; this one was tuned for the nearest tuned shape "
            f"{entry.m}x{entry.n}x{entry.k} on {entry.device.name} (log-space distance "
            f"{dist:.3f}); ms, tflops, cublas_tflops and ratio were measured on that shape"
        )
    return Answer(
        m=m,
        n=n,
        k=k,
        dtype=entry.dtype,
        layout=entry.layout,
        family=entry.family,
        params=entry.params,
        name=entry.config_name,
        source=source,
        distance=dist,
        measured_on=(entry.m, entry.n, entry.k),
        ms=entry.ms,
        tflops=entry.tflops,
        cublas_tflops=entry.cublas_tflops,
        ratio=entry.ratio,
        device=entry.device,
        provenance=entry.provenance,
        note=note,
    )


def _default_answer(m: int, n: int, k: int, dtype: str, layout: str, device: str | None) -> Answer:
    config = default_config(m, n)
    where = f" on {device}" if device else ""
    return Answer(
        m=m,
        n=n,
        k=k,
        dtype=dtype,
        layout=layout,
        family=config.family,
        params=config.as_dict(),
        name=config.name,
        source="default",
        distance=None,
        measured_on=None,
        ms=None,
        tflops=None,
        cublas_tflops=None,
        ratio=None,
        device=None,
        provenance={"rule": DEFAULT_RULE},
        note=f"nothing tuned{where} for {dtype} {layout} yet; config chosen by rule: "
        + DEFAULT_RULE,
    )


def fingerprint(session: Session) -> tuple[int, int, object]:
    """Changes whenever a best_config row is added or replaced: (count, max measurement, time)."""
    row = session.execute(
        select(
            func.count(storage.BestConfig.id),
            func.max(storage.BestConfig.measurement_id),
            func.max(storage.BestConfig.updated_at),
        )
    ).one()
    return int(row[0]), int(row[1] or 0), row[2]


def load_snapshot(session: Session) -> Snapshot:
    """Every best config in the database, as a :class:`Snapshot`."""
    return Snapshot(Tuned.from_row(row) for row in storage.best_configs(session))


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
        self._fingerprint: tuple[int, int, object] | None = None

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
                    # whole table is only read again when it did.
                    mark = fingerprint(session)
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
