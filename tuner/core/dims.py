"""A GEMM's size as numbers: how far apart two sizes are, and the rate a time makes.

Imports nothing of ours, so every layer uses these one definitions, ``storage`` included.
"""

from __future__ import annotations

import math

# (m, n, k) of a GEMM.
Dims = tuple[int, int, int]


def tflops(m: int, n: int, k: int, ms: float | None) -> float | None:
    """TFLOP/s of one m x n x k GEMM (2·m·n·k floating-point operations) done in ``ms``
    milliseconds; None without a usable time (missing, not positive, or so short that the
    rate is not finite)."""
    if ms is None or not ms > 0:
        return None
    value = 2 * m * n * k / (ms * 1e9)
    return value if math.isfinite(value) else None


def log_dims(dims: Dims) -> tuple[float, float, float]:
    """(ln m, ln n, ln k): where a size sits in the space :func:`shape_distance` measures."""
    m, n, k = dims
    return (math.log(m), math.log(n), math.log(k))


def shape_distance(a: Dims, b: Dims) -> float:
    """Euclidean distance between two (m, n, k) in log space: ``math.dist(log_dims(a),
    log_dims(b))``.

    GEMM behaviour scales with ratios, not differences: 128 vs 256 changes tiling, waves and
    arithmetic intensity about as much as 4096 vs 8192, while 4096 vs 4224 barely matters. Logs
    make equal ratios equal distances.
    """
    return math.dist(log_dims(a), log_dims(b))
