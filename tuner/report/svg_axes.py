"""Where a value lands along an axis of an x/y chart, and which round values mark it: a linear
scale, or a logarithmic one whose ticks are log-spaced (decades, 1-2-5 steps or powers of two).

A log scale is what a spread of times or rates that covers orders of magnitude needs: on a
linear axis from 0.05 ms to 12 ms every fast trial sits on the bottom line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# Mantissas of the log ticks finer than decades, the coarser set first; the first that marks the
# data with enough ticks is used.
_LOG_MANTISSAS = ((1.0, 2.0, 5.0), (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0))
_MOST_TICKS = 9


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]: about ``count`` steps of 1, 2, 2.5 or 5 times a
    power of ten, from the last multiple of the step at or below ``low`` to the first at or
    above ``high``."""
    if not math.isfinite(low) or not math.isfinite(high) or high <= low:
        high = low + 1.0
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(f * power for f in (1, 2, 2.5, 5, 10) if f * power >= raw)
    first, last = math.floor(low / step), math.ceil(high / step - 1e-9)
    return [round(i * step, 10) for i in range(first, last + 1)]


def _geometric(low: float, high: float, base: int) -> list[float]:
    """Powers of ``base`` covering [low, high], every k-th power where there would be more
    than ``_MOST_TICKS`` (k = 1 when they fit), so the ticks stay evenly spaced."""
    first = math.floor(math.log(low, base) + 1e-9)
    last = math.ceil(math.log(high, base) - 1e-9)
    k = max(1, math.ceil((last - first) / (_MOST_TICKS - 1)))
    first, last = math.floor(first / k) * k, math.ceil(last / k) * k
    if base == 10:
        return [float(f"1e{e}") for e in range(first, last + 1, k)]  # 0.01, not 0.010000000002
    return [float(base) ** e for e in range(first, last + 1, k)]


def _covering(low: float, high: float, mantissas: Sequence[float]) -> list[float]:
    """The values m·10^e (m in ``mantissas``) from the last at or below ``low`` to the first at
    or above ``high``."""
    values = [
        float(f"{m}e{e}")  # exact decimals: 0.2, not 0.20000000000000004
        for e in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
        for m in mantissas
    ]
    below = max(v for v in values if v <= low * (1 + 1e-12))
    above = min(v for v in values if v >= high * (1 - 1e-12))
    return [v for v in values if below <= v <= above]


def log_ticks(low: float, high: float, *, powers_of_two: bool = False) -> list[float]:
    """Log-spaced ticks covering [low, high] (both > 0): powers of two where asked (a tile
    size), else decades, else 1-2-5 steps, else 1..9 times a power of ten, the first set that
    gives at least four ticks. A range narrower than that (43-58 TFLOP/s) is nearly linear even
    on a log scale: it gets :func:`nice_ticks`, still placed by their logarithm.

    Raises:
        ValueError: ``low`` not positive (a log scale has no place for 0 or below).
    """
    if not (low > 0 and math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"a log scale needs values > 0, got {low:g}")
    high = max(high, low)
    if powers_of_two:
        if high == low:
            return [low / 2, low, low * 2]
        return _geometric(low, high, 2)
    decades = _geometric(low, high, 10)
    if len(decades) >= 4:
        return decades
    for mantissas in _LOG_MANTISSAS:
        ticks = _covering(low, high, mantissas)
        if len(ticks) >= 4:
            return ticks
    return [t for t in nice_ticks(low, high) if t > 0] or [low, high]


def _is_power_of_two(value: float) -> bool:
    return value >= 1 and value.is_integer() and int(value) & (int(value) - 1) == 0


@dataclass(frozen=True)
class Scale:
    """One axis: its ticks (the first and last are its ends) and whether values are placed by
    their logarithm."""

    ticks: tuple[float, ...]
    log: bool = False

    @classmethod
    def fit(
        cls,
        values: Sequence[float],
        *,
        log: bool = False,
        low: float | None = None,
        high: float | None = None,
    ) -> Scale:
        """The scale of ``values``, from ``low`` to ``high`` where given (a chosen range) and
        else from the data's least to its greatest value (never from 0 just because: the
        data fill the plot). Values that are all powers of two get power-of-two ticks on a
        log scale."""
        lo = min(values, default=1.0) if low is None else low
        hi = max(values, default=lo + 1.0) if high is None else high
        if not log:
            return cls(tuple(nice_ticks(lo, hi)))
        doubling = bool(values) and all(_is_power_of_two(v) for v in values)
        return cls(tuple(log_ticks(lo, hi, powers_of_two=doubling)), log=True)

    def fraction(self, value: float) -> float:
        """How far along the axis ``value`` lies: 0 at the first tick, 1 at the last."""
        lo, hi = self.ticks[0], self.ticks[-1]
        if self.log:
            value, lo, hi = math.log10(value), math.log10(lo), math.log10(hi)
        return (value - lo) / ((hi - lo) or 1.0)
