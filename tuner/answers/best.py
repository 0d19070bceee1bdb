"""Which config to run for a GEMM on a GPU: the one answer of ``POST /v1/configs/best``,
``gemmtune best`` and ``tuner.client.best``.

Sources, tried in order within the data the device may use:

* ``exact``: a config tuned for this very shape;
* ``nearest``: the config tuned for the closest tuned shape with the same dtype, layout and
  type of C (``out_dtype``).
  Distance is Euclidean in log space, ``sqrt(sum((ln a_i - ln b_i)^2))`` over (m, n, k)
  (:func:`tuner.core.dims.shape_distance`): equal ratios are equal distances, so 128 -> 256 is
  as far as 4096 -> 8192. Its numbers were measured on that other shape and are labelled so.
  A config its family says would be many times slower at the asked shape is passed over
  (``Family.answer_waste``: a 16-row ``tma_ws`` tile asked about more rows than it holds);
* ``far``: the nearest tuned shape is farther than :data:`FAR_DISTANCE`: what it measured says
  little about this shape (a 3x5x7 GEMM is not a 1000^3 one), so the config is the default rule's
  and no numbers are given; ``distance`` and the note name the nearest tuned shape;
* ``default``: nothing usable tuned yet, so a warptile config picked by :func:`default_config`.
  Every kernel is correct for any M, N, K >= 1, so a default is always safe, only maybe slow.

The type of C is part of the shape: a config that writes float32 C never answers a question for a
half C exactly. Where nothing of the asked type of C is tuned within :data:`FAR_DISTANCE` (a
database measured before C had a type holds float32 C only), a config tuned for the same input
type and layout writing another type of C is the ``nearest`` answer, its OUT parameter set to the
asked type (the tiles are the same kernel; only the epilogue's stores change); its numbers were
measured writing the other type, which the note says. A split-K config, which writes float32 C
only, is never used so.

Every answer carries a ``confidence`` in [0, 1] (:func:`confidence`): 1 for exact, falling
linearly with the distance to 0 at :data:`FAR_DISTANCE`; 0 for far and default.

Which data (``device_match``), for the :class:`~tuner.answers.device_kind.DeviceSpec` asked about:

1. no device named: every device's, the fastest per shape (``any_device``);
2. the device's own, when the database knows its name (``same_device``);
3. else, or when none of its own is usable, that of other devices of the same kind, the same
   architecture and SM count (``same_kind``: an H200 answered from H100 data);
4. else the default rule.

On a named device a family that runs slowly there (:func:`tuner.answers.device_kind.slow_math`: the
FP64 tensor-core families on most non-datacenter GPUs) is never the answer. A name the database does
not know, given without an architecture to find its kind, is an error listing the known devices
(:class:`UnknownDeviceError`): answering it with another GPU's data, or a silent default, would hide
a typo. Every answer says which device its numbers were measured on (``measured_on_device``, None
for a default) apart from the device it is for (``device``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from tuner.answers.answer import (
    FAR_DISTANCE,
    REPINNED_NOTE,
    SKIPPED_NOTE,
    Answer,
    DeviceInfo,
    Match,
    Source,
    confidence,
)
from tuner.answers.default_rule import DEFAULT_RULE, applied_branch, default_config
from tuner.answers.device_kind import ARCH_FORMAT, DeviceSpec, MathRates, SlowMath, slow_math
from tuner.core.accuracy import ACCURACY_NAMES, DEFAULT_ACCURACY, accepted
from tuner.core.dims import log_dims
from tuner.core.errors import InputError
from tuner.core.shape import STORED_OUT_DTYPE, Shape
from tuner.kernels.families import FAMILIES, get_family, parse_config, repinned

SHAPE_FIELDS = ("m", "n", "k", "dtype", "layout", "out_dtype")


def shape_values(shape: Any) -> dict[str, Any]:
    """m, n, k, dtype, layout and out_dtype of a shape (``tuner.core.shape.Shape`` or a stored
    row) by name."""
    return {name: getattr(shape, name) for name in SHAPE_FIELDS}


@dataclass(frozen=True)
class Tuned:
    """One best config as plain values (safe to share between threads)."""

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
    accuracy: str = DEFAULT_ACCURACY  # the class of its family (``tuner.core.accuracy``)
    out_dtype: str = STORED_OUT_DTYPE  # the type of C it was measured writing
    # Taken once: every answer measures its distance to every entry of a pool.
    log_point: tuple[float, float, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "log_point", log_dims((self.m, self.n, self.k)))


class UnknownDeviceError(InputError):
    """A device name with no stored results and no architecture to find its kind by."""

    field = "device"

    def __init__(self, device: DeviceSpec, known: Iterable[str]) -> None:
        self.device = device
        self.known = tuple(sorted(set(known)))
        sms = f" with {device.sm_count} SMs" if device.sm_count is not None else ""
        # What is wrong and what is allowed; a caller adds how to pass an arch in its terms.
        self.detail = (
            f"{device.name!r}{sms} is not a known device (nothing is stored for it); known "
            f"devices: {', '.join(repr(name) for name in self.known) or 'none'}"
        )
        super().__init__(
            f"device {self.detail}; or give its architecture and SM count to be answered "
            "from devices of the same kind"
        )


class UncomputedLayoutError(InputError):
    """A dtype and layout that no family of a class the floor accepts computes (float32 in
    NT, TN or TT at ``exact``): answering a config of another layout would compute another
    product."""

    field = "layout"

    def __init__(self, shape: Shape, accuracy: str) -> None:
        self.detail = (
            f"{shape.layout!r}: no family of accuracy class {accuracy} or a more exact one "
            f"computes {shape.dtype} inputs in layout {shape.layout}; store the operands as NN "
            "(copy the transposed ones) or accept accuracy bf16x3"
        )
        super().__init__(f"`layout` {self.detail}")


@lru_cache(maxsize=64)
def computed(dtype: str, layout: str, accuracy: str = DEFAULT_ACCURACY) -> bool:
    """Whether some family of a class the floor ``accuracy`` accepts computes ``dtype`` inputs
    in ``layout`` (float32 is computed in NT, TN and TT only by the emulated families). The
    vendor library (``cublaslt``) computes everything but is not counted: it is a candidate beside
    our kernels, and the default rule answers where nothing is tuned with a kernel of ours."""
    allowed = accepted(accuracy)
    return any(
        dtype in f.dtypes and layout in f.layouts and f.accuracy in allowed and not f.vendor
        for f in FAMILIES.values()
    )


class Tuning:
    """What answers are chosen from: the best configs, every device seen (with or without a
    best config) and the devices' measured rates, indexed by device name and kind."""

    def __init__(
        self,
        entries: Iterable[Tuned],
        devices: Iterable[DeviceInfo],
        rates: Mapping[str, MathRates],
    ) -> None:
        self.entries = tuple(entries)
        self.devices = tuple(dict.fromkeys((*devices, *(e.device for e in self.entries))))
        self.rates = dict(rates)
        # The entries each floor accepts (``tuner.core.accuracy``), so an answer filters nothing.
        self.by_floor = {
            floor: tuple(e for e in self.entries if e.accuracy in accepted(floor))
            for floor in ACCURACY_NAMES
        }
        # Each floor's entries by device kind (arch, SM count).
        self.by_kind: dict[str, dict[tuple[str, int], list[Tuned]]] = {}
        for floor, floor_entries in self.by_floor.items():
            kinds = self.by_kind[floor] = {}
            for entry in floor_entries:
                kinds.setdefault((entry.device.arch, entry.device.sm_count), []).append(entry)

    def answer(
        self,
        m: int,
        n: int,
        k: int,
        dtype: str = "float32",
        layout: str = "NN",
        device: DeviceSpec | None = None,
        accuracy: str = DEFAULT_ACCURACY,
        out_dtype: str | None = None,
    ) -> Answer:
        """The answer for (m, n, k) on ``device`` at the floor ``accuracy``, writing C in
        ``out_dtype`` (None: the input type) (see the module's docstring for the rules).

        Raises:
            InputError: a bad dimension, dtype, layout, out_dtype or accuracy (naming it).
            UncomputedLayoutError: no family of the floor computes the dtype in the layout.
            UnknownDeviceError: ``device`` is not stored and has no ``arch``.
        """
        shape = Shape(m, n, k, dtype, layout, out_dtype)
        # computed() raises InputError on an unknown accuracy, before the layout is judged.
        if not computed(shape.dtype, shape.layout, accuracy):
            raise UncomputedLayoutError(shape, accuracy)
        entries = self.by_floor[accuracy]
        if device is None:
            found = _tuned(entries, shape, "any_device", None)
            if isinstance(found, Answer):
                return found
            return _default(shape, None, found, accuracy)
        stored = self._stored(device)
        asked = DeviceSpec(
            device.name,
            # An arch stored in another spelling (uploads take any text) is not used.
            device.arch or _only({d.arch for d in stored if ARCH_FORMAT.fullmatch(d.arch)}),
            device.sm_count or _only({d.sm_count for d in stored}),
        )
        slow = slow_math(asked.arch, self.rates.get(asked.name))
        kind = self.by_kind[accuracy].get(asked.kind, []) if asked.kind else []
        pools: tuple[tuple[Match, Sequence[Tuned]], ...] = (
            ("same_device", [e for e in entries if e.device in stored]),
            ("same_kind", [e for e in kind if e.device not in stored]),
        )
        farthest: Far | None = None
        for match, pool in pools:
            usable = [e for e in pool if slow.allows(e.family)]
            found = _tuned(usable, shape, match, asked)
            if isinstance(found, Answer):
                return _with_skipped(found, len(pool) - len(usable), slow)
            farthest = farthest or found
        if not stored and asked.arch is None:
            raise UnknownDeviceError(asked, (d.name for d in self.devices))
        return _default(shape, asked, farthest, accuracy)

    def _stored(self, device: DeviceSpec) -> set[DeviceInfo]:
        """The stored devices ``device`` names (its name, and its arch and SM count if given)."""
        return {
            d
            for d in self.devices
            if d.name == device.name
            and device.arch in (None, d.arch)
            and device.sm_count in (None, d.sm_count)
        }


def _only(values: set[Any]) -> Any:
    """The value when there is exactly one (a name stored with two SM counts has none)."""
    return next(iter(values)) if len(values) == 1 else None


@dataclass(frozen=True)
class Far:
    """The nearest tuned shape of a pool, too far away to answer for the asked one."""

    entry: Tuned
    distance: float


def _tuned(
    pool: Sequence[Tuned], shape: Shape, match: Match, device: DeviceSpec | None
) -> Answer | Far | None:
    """The exact answer from ``pool``, else the nearest within :data:`FAR_DISTANCE` writing the
    same type of C, else the nearest within it writing another type that the asked one can be
    pinned in (see the module's docstring), else the nearest farther away (:class:`Far`), else
    None (nothing of this dtype and layout)."""
    kind = (shape.dtype, shape.layout)
    same_out = [e for e in pool if (e.dtype, e.layout, e.out_dtype) == (*kind, shape.out)]
    key = (shape.m, shape.n, shape.k)
    exact = [e for e in same_out if (e.m, e.n, e.k) == key]
    if exact:
        best = min(exact, key=lambda e: (e.ms, e.best_id))
        return _from_entry(best, shape, "exact", 0.0, match, device)
    found = _closest_answering(same_out, shape)
    if isinstance(found, tuple):
        return _from_entry(found[0], shape, "nearest", found[1], match, device)
    other_out = [
        e
        for e in pool
        if (e.dtype, e.layout) == kind
        and e.out_dtype != shape.out
        and shape.out in get_family(e.family).out_dtypes
    ]
    moved = _closest_answering(other_out, shape)
    if isinstance(moved, tuple):
        return _from_entry(moved[0], shape, "nearest", moved[1], match, device)
    return found or moved


def _may_answer(entry: Tuned, shape: Shape) -> bool:
    """Whether a config tuned for another shape may answer for ``shape``: not where its family
    says it would be many times slower there (``Family.answer_waste``: a 16-row ``tma_ws`` tile
    asked about 100 rows would read B seven times)."""
    return get_family(entry.family).answer_waste(entry.params, shape) is None


def _closest_answering(pool: Sequence[Tuned], shape: Shape) -> tuple[Tuned, float] | Far | None:
    """:func:`_closest` among the entries that may answer for ``shape``: the nearest entry is
    asked first, and the pool filtered only when it may not (the rare case), so an answer does
    not call every entry's family."""
    found = _closest(pool, shape)
    if found is None or _may_answer(found[0] if isinstance(found, tuple) else found.entry, shape):
        return found
    return _closest([e for e in pool if _may_answer(e, shape)], shape)


def _closest(pool: Sequence[Tuned], shape: Shape) -> tuple[Tuned, float] | Far | None:
    """The entry of ``pool`` nearest to ``shape`` and its distance, if within
    :data:`FAR_DISTANCE`; else the nearest as :class:`Far`; None for an empty pool."""
    # shape_distance(shape.dims, entry dims), from the entries' logs taken once.
    target = log_dims(shape.dims)
    scored = [(math.dist(e.log_point, target), e.ms, e.best_id, e) for e in pool]
    if not scored:
        return None
    distance, _, _, entry = min(scored, key=lambda item: item[:3])
    if distance > FAR_DISTANCE:
        return Far(entry, distance)
    return entry, distance


def _from_entry(
    entry: Tuned,
    shape: Shape,
    source: Source,
    distance: float,
    match: Match,
    device: DeviceSpec | None,
) -> Answer:
    where = f"{entry.m}x{entry.n}x{entry.k} on {entry.device.name}"
    name, params = entry.config_name, entry.params
    if source == "exact":
        note = f"tuned for {where}"
    else:
        note = (
            f"no config tuned for {shape}; this one was tuned for the nearest tuned shape "
            f"{where} (log-space distance {distance:.3f}); ms, tflops, cublas_tflops and ratio "
            "were measured on that shape"
        )
    if entry.out_dtype != shape.out:
        config = repinned(parse_config(entry.config_name), shape)
        assert config is not None  # _tuned offers only families that write the asked type
        name, params = config.name, config.as_dict()
        note = (
            f"{REPINNED_NOTE} {shape.out} C; {entry.config_name} was tuned for "
            f"{where} writing {entry.out_dtype} C, and is answered with OUT set for "
            f"{shape.out} C (the same tiles); ms, tflops, cublas_tflops and ratio were "
            f"measured writing {entry.out_dtype} C"
            + (f" (log-space distance {distance:.3f})" if distance else "")
        )
    if match == "any_device":
        note += "; no device named: the fastest of every device's configs"
    elif match == "same_kind" and device is not None:
        note += (
            f"; nothing usable is stored for {device.name}, so this comes from a GPU of the same "
            f"kind ({entry.device.arch}, {entry.device.sm_count} SMs)"
        )
    return Answer(
        **shape_values(shape),  # the entry's dtype and layout are the shape's
        name=name,
        family=entry.family,
        params=params,
        source=source,
        distance=distance,
        confidence=confidence(distance),
        measured_on=(entry.m, entry.n, entry.k),
        ms=entry.ms,
        tflops=entry.tflops,
        cublas_tflops=entry.cublas_tflops,
        ratio=entry.ratio,
        device=device,
        measured_on_device=entry.device,
        device_match=match,
        provenance=entry.provenance,
        note=note,
        accuracy=entry.accuracy,
    )


def _with_skipped(answer: Answer, skipped: int, slow: SlowMath) -> Answer:
    if not skipped:
        return answer
    units = ", ".join(sorted(slow.units))
    note = f"{answer.note}; {skipped} tuned config(s) on {units} {SKIPPED_NOTE}: {slow.reason}"
    return replace(answer, note=note)


def _default(
    shape: Shape,
    device: DeviceSpec | None,
    far: Far | None = None,
    accuracy: str = DEFAULT_ACCURACY,
) -> Answer:
    """The default rule's answer; ``far`` (the nearest tuned shape, too far) makes it ``far``."""
    config = default_config(shape.m, shape.n, shape.dtype, shape.layout, accuracy, shape.out)
    where = f" on {device.name} or a GPU of its kind" if device is not None else ""
    branch = applied_branch(shape.m, shape.n, shape.dtype, shape.layout, accuracy)
    rule = f"config chosen by the default rule (in the provenance): {branch}"
    if far is None:
        out = f" -> {shape.out}" if shape.out != shape.dtype else ""
        note = f"nothing tuned{where} for {shape.dtype} {shape.layout}{out} yet; {rule}"
    else:
        near = far.entry
        note = (
            f"nearest tuned shape{where} is {near.m}x{near.n}x{near.k} on {near.device.name}, "
            f"at log-space distance {far.distance:.3f} > {FAR_DISTANCE:g}: too far for its "
            f"config or numbers to answer for {shape}; {rule}"
        )
    return Answer(
        **shape_values(shape),
        name=config.name,
        family=config.family,
        params=config.as_dict(),
        source="default" if far is None else "far",
        distance=None if far is None else far.distance,
        device=device,
        provenance={"rule": DEFAULT_RULE},
        note=note,
        accuracy=get_family(config.family).accuracy,
    )
