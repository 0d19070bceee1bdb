from __future__ import annotations

import pytest

from tuner.families import FAMILIES, get_family
from tuner.resources import DEVICE_TABLE
from tuner.shape import Shape
from tuner.space import Space, shape_waste

H100 = DEVICE_TABLE["sm_90"]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_enumeration_is_deterministic_and_counts_add_up(family: str) -> None:
    # The streaming family is only for small M: it has no candidate for 4096 rows.
    shape = Shape(16, 4096, 4096) if family == "skinny" else Shape(4096, 4096, 4096)
    space = Space(family, shape, H100)
    checks, counts = space.evaluate()
    again = space.candidates()
    assert [c.config for c in checks] == again
    assert counts.raw == len(list(space.all_configs()))
    assert counts.raw >= counts.valid >= counts.useful >= counts.fits == len(again) > 0
    assert counts.raw - counts.fits == sum(counts.pruned.values())
    fam = get_family(family)
    assert all(not fam.broken_rules(c) for c in again)


def test_tiny_shapes_keep_only_small_tiles_but_never_nothing() -> None:
    for family in FAMILIES:
        small = Space(family, Shape(1, 1, 1), H100).candidates()
        assert small, family
        fam = get_family(family)
        smallest = {p.name: p.values[0] for p in fam.params}
        assert all(c["BM"] == smallest["BM"] and c["BN"] == smallest["BN"] for c in small)


def test_shape_waste_names_the_dimension() -> None:
    fam = get_family("blocktile_2d")
    config = fam.config({"BM": 128, "BN": 32, "BK": 8, "TM": 8, "TN": 4})
    assert shape_waste(fam, config, Shape(16, 4096, 4096)) == "BM=128 exceeds M=16 rounded up to 16"
    assert shape_waste(fam, config, Shape(100, 4096, 4096)) is None  # 100 -> 128


def test_smaller_devices_fit_fewer_pipelined_configs() -> None:
    shape = Shape(4096, 4096, 4096)
    h100 = Space("pipelined", shape, H100).evaluate()[1].fits
    ampere = Space("pipelined", shape, DEVICE_TABLE["sm_86"]).evaluate()[1].fits
    assert ampere < h100
