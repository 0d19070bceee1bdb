"""The bar a half C is held to (``tuner.gpu.measure``), simulated in NumPy: our kernels must
round their FP32 sums once to C's type; the vendor library may round twice, as some cuBLASLt
algorithms do, but no worse."""

from __future__ import annotations

import numpy as np
import pytest

from tuner.core.shape import UNIT_ROUNDOFF
from tuner.gpu.measure import reference_tolerance, tolerance, vendor_half_c_allowance

K = 200


def to_bfloat16(x: np.ndarray) -> np.ndarray:
    """``x`` rounded to nearest even at BF16's 8 significand bits, kept as float32."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    lsb = (bits >> np.uint64(16)) & np.uint64(1)
    bits = (bits + np.uint64(0x7FFF) + lsb) & np.uint64(0xFFFF0000)
    return bits.astype(np.uint32).view(np.float32)


def relative(out: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


@pytest.fixture(scope="module")
def sums() -> tuple[np.ndarray, np.ndarray]:
    """alpha * A @ B and beta * C in FP32, for random normal BF16 inputs (0.5 and 3, as verify's
    first check)."""
    rng = np.random.default_rng(7)
    a = to_bfloat16(rng.standard_normal((256, K), dtype=np.float32))
    b = to_bfloat16(rng.standard_normal((K, 256), dtype=np.float32))
    c = to_bfloat16(rng.standard_normal((256, 256), dtype=np.float32))
    return (0.5 * (a.astype(np.float64) @ b)).astype(np.float32), 3 * c


def test_rounding_once_passes_ours_and_rounding_twice_does_not(sums) -> None:
    product, scaled_c = sums
    reference = to_bfloat16(product + scaled_c)
    twice = to_bfloat16(to_bfloat16(product) + scaled_c)
    ours = tolerance(K, "bfloat16", "bfloat16")
    assert relative(twice, reference) > ours


def test_the_vendor_may_round_twice_but_not_be_a_step_off(sums) -> None:
    product, scaled_c = sums
    reference = to_bfloat16(product + scaled_c)
    twice = to_bfloat16(to_bfloat16(product) + scaled_c)
    vendor = tolerance(K, "bfloat16", "bfloat16") + vendor_half_c_allowance("bfloat16")
    assert relative(twice, reference) <= vendor
    # Every element one step (two unit roundoffs) off: beyond what the vendor is allowed.
    step_off = reference * np.float32(1 + 2 * UNIT_ROUNDOFF["bfloat16"])
    assert relative(step_off, reference) > vendor
    # And the vendor's bar stays inside the check against FP32 on the unrounded values.
    assert vendor < reference_tolerance(K, "bfloat16", "bfloat16")
