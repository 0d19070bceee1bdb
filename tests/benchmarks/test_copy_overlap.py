"""benchmarks/copy_overlap.py without a GPU: where its chained ways cut K, and the wide buffers
its copies fill."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lab_scripts import lab_script
from tuner.core.shape import Shape

copy_overlap = lab_script("copy_overlap")
FRACTIONS, K_STEP = copy_overlap.FRACTIONS, copy_overlap.K_STEP
Operands, first_part = copy_overlap.Operands, copy_overlap.first_part


@pytest.mark.parametrize("k", [33, 255, 1019, 2047, 4093, 4097])
@pytest.mark.parametrize("fraction", FRACTIONS)
def test_the_first_part_is_whole_steps_short_of_k(k: int, fraction: float) -> None:
    k1 = first_part(k, fraction)
    assert k1 % K_STEP == 0
    assert K_STEP <= k1 < k
    if k >= 4 * K_STEP:  # room to follow the fraction: within half a step of it
        assert abs(k1 - fraction * k) <= K_STEP / 2


def test_both_wide_sets_hold_the_operands_on_128_byte_lines() -> None:
    shape = Shape(5, 7, 9)
    ops = Operands(np, shape)
    assert ops.a.shape == (5, 9) and ops.b.shape == (9, 7)
    for a_wide, b_wide in ops.wide:
        assert a_wide.strides[0] == b_wide.strides[0] == 32 * 4
        assert np.array_equal(a_wide, ops.a) and np.array_equal(b_wide, ops.b)
    assert not np.shares_memory(ops.wide[0][0], ops.wide[1][0])
