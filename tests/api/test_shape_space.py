"""The shape space's helpers: ratio bands and each tuned shape's nearest other tuned shape."""

from __future__ import annotations

import math

import pytest

from api.shape_space import SLOWER, band, neighbours
from tests.tuner.answers.test_answers import A100, CUBE, H100, SMALL, STREAMK, WARPTILE, tuned


@pytest.mark.parametrize(
    ("ratio", "label"),
    [(1.5, ">= 1.2x cuBLAS"), (1.0, "1.0-1.2x cuBLAS"), (0.85, "0.8-1.0x cuBLAS"), (0.2, SLOWER)],
)
def test_band(ratio: float, label: str) -> None:
    assert band(ratio) == label


def test_the_nearest_other_shape_is_of_the_same_device() -> None:
    entries = [
        tuned(H100, CUBE, WARPTILE, 2.0),
        tuned(H100, SMALL, WARPTILE, 0.1),
        tuned(A100, CUBE, STREAMK, 7.0),
    ]
    found = {(n.entry.device.name, n.entry.m): n for n in neighbours(entries)}
    h100 = found[(H100.name, 4096)]
    assert h100.nearest is entries[1] and h100.distance == pytest.approx(math.sqrt(3) * math.log(4))
    assert found[(A100.name, 4096)].nearest is None  # alone on its device
