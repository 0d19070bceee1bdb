"""Accuracy classes (``tuner.core.accuracy``): what a floor accepts, and that the ``bf16x3``
allowance passes the split's own error while refusing cheaper arithmetic, simulated in NumPy
on random normal data with float64 sums (the split written exactly as the kernel writes it)."""

from __future__ import annotations

import numpy as np
import pytest

from tuner.core.accuracy import (
    ACCURACY_CLASSES,
    BF16X3,
    DEFAULT_ACCURACY,
    EXACT,
    accepted,
    allowance,
    check_accuracy,
    loosest,
)
from tuner.core.errors import InputError
from tuner.gpu.measure import tolerance
from tuner.kernels.families.emulated import A_PARTS, B_PARTS


def round_float32(x: np.ndarray, kept_bits: int) -> np.ndarray:
    """``x`` (float32) rounded to nearest even at ``kept_bits`` significand bits: 8 is BF16,
    11 TF32 (what cvt.rn.bf16.f32 does for 8)."""
    drop = 24 - kept_bits
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    lsb = (bits >> np.uint64(drop)) & np.uint64(1)
    bits = (bits + np.uint64((1 << (drop - 1)) - 1) + lsb) & ~np.uint64((1 << drop) - 1)
    return bits.astype(np.uint32).view(np.float32)


def split(x: np.ndarray) -> dict[str, np.ndarray]:
    hi = round_float32(x, 8)
    return {"hi": hi, "lo": round_float32(x - hi, 8)}


def relative_error(c: np.ndarray, exact: np.ndarray) -> float:
    return float(np.linalg.norm(c - exact) / np.linalg.norm(exact))


@pytest.fixture(scope="module", params=[16, 1000, 4096])
def operands(request: pytest.FixtureRequest) -> tuple[np.ndarray, np.ndarray, int]:
    k = request.param
    rng = np.random.default_rng(k)
    a = rng.standard_normal((96, k)).astype(np.float32)
    b = rng.standard_normal((k, 80)).astype(np.float32)
    return a, b, k


def _products(a: np.ndarray, b: np.ndarray, pairs: list[tuple[str, str]]) -> np.ndarray:
    pa, pb = split(a), split(b)
    return sum(pa[x].astype(np.float64) @ pb[y].astype(np.float64) for x, y in pairs)


def test_the_split_passes_within_its_allowance(operands: tuple[np.ndarray, ...]) -> None:
    a, b, k = operands
    exact = a.astype(np.float64) @ b.astype(np.float64)
    pairs = list(zip(A_PARTS, B_PARTS, strict=True))
    assert sorted(pairs) == [("hi", "hi"), ("hi", "lo"), ("lo", "hi")]  # lo*lo alone dropped
    error = relative_error(_products(a, b, pairs), exact)
    limit = tolerance(int(k)) + allowance(BF16X3.name)
    assert error < limit / 2  # a margin for the GPU's FP32 sums


@pytest.mark.parametrize(
    "cheaper",
    ["tf32", "one bf16 pass", "hi*lo dropped", "lo*hi dropped"],
)
def test_cheaper_arithmetic_fails_the_allowance(
    operands: tuple[np.ndarray, ...], cheaper: str
) -> None:
    a, b, k = operands
    exact = a.astype(np.float64) @ b.astype(np.float64)
    if cheaper == "tf32":
        c = round_float32(a, 11).astype(np.float64) @ round_float32(b, 11).astype(np.float64)
    elif cheaper == "one bf16 pass":
        c = _products(a, b, [("hi", "hi")])
    elif cheaper == "hi*lo dropped":
        c = _products(a, b, [("hi", "hi"), ("lo", "hi")])
    else:
        c = _products(a, b, [("hi", "hi"), ("hi", "lo")])
    assert relative_error(c, exact) > 2 * (tolerance(int(k)) + allowance(BF16X3.name))


def test_exact_allows_nothing_extra_and_emulation_one_unit_of_its_last_bit() -> None:
    assert allowance(EXACT.name) == 0.0
    assert allowance(BF16X3.name) == 2.0**-16


def test_a_floor_accepts_itself_and_every_more_exact_class() -> None:
    assert DEFAULT_ACCURACY == "exact"
    assert accepted("exact") == {"exact"}
    assert accepted("bf16x3") == {"exact", "bf16x3"}
    assert loosest([]) == "exact"
    assert loosest(["exact", "bf16x3", "exact"]) == "bf16x3"


@pytest.mark.parametrize("value", ["tf32", "", None, 3, "EXACT"])
def test_an_unknown_class_names_the_value_and_the_choices(value: object) -> None:
    with pytest.raises(InputError) as raised:
        check_accuracy(value)
    message = str(raised.value)
    assert message.startswith("`accuracy` must be one of") and repr(value) in message
    assert all(name in message for name in ACCURACY_CLASSES)
