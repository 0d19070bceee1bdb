from __future__ import annotations

import math

import pytest

from tuner.core.shape import Shape
from tuner.kernels.families import FAMILIES, KERNEL_FAMILIES, Family, get_family
from tuner.kernels.resources import DEVICE_TABLE
from tuner.kernels.space import Space, SpaceCounts, rule_verdicts, shape_waste

H100 = DEVICE_TABLE["sm_90"]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_enumeration_is_deterministic_and_counts_add_up(family: str) -> None:
    # The streaming family is only for small M: it has no candidate for 4096 rows.
    fam = get_family(family)
    m = 16 if family == "skinny" else 4096
    shape = Shape(m, 4096, 4096, fam.dtypes[0], fam.layouts[-1], fam.out_dtypes[0])
    space = Space(family, shape, H100)
    checks, counts = space.evaluate()
    again = space.candidates()
    assert [c.config for c in checks] == again
    pinned = fam.pinned(shape)  # one value each: the shape's
    assert counts.raw == math.prod(1 if p.name in pinned else len(p.values) for p in fam.params)
    assert all(c[name] == value for c in again for name, value in pinned.items())
    assert counts.raw >= counts.valid >= counts.useful >= counts.fits == len(again) > 0
    assert counts.raw - counts.fits == sum(counts.pruned.values())
    assert all(not fam.broken_rules(c) for c in again)


def test_tiny_shapes_keep_only_small_tiles_but_never_nothing() -> None:
    for family in KERNEL_FAMILIES:  # the vendor library has no tiles
        fam = get_family(family)
        # TMA reads rows of whole 16-byte vectors only (8 halves): a 1 x 1 x 1 shape is left
        # to its padded configs, 8 x 8 x 8 is its tiny shape.
        side = 8 if fam.tensor_maps else 1
        shape = Shape(side, side, side, fam.dtypes[0], fam.layouts[0], fam.out_dtypes[0])
        small = Space(family, shape, H100).candidates()
        assert small, family
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


# What the space counted before the rule step was kept per family (the reasons in the order a
# walk over the configs meets them): a second Space must count the same without the rules.
SPLITK_LARGE_K = SpaceCounts(
    raw=69120,
    valid=7280,
    useful=2600,
    fits=2539,
    pruned={
        "split-K: fewer blocks than SMs": 4448,
        "split-K: more blocks per SM than needed": 232,
        "(BM/WM)*(BN/WN) must equal THREADS/32: one warp per warp tile": 40800,
        "WM*WN must be a multiple of 32*TM*TN*WNITER: WMITER is a whole number": 3660,
        "BM must be a multiple of WM: the block is a whole grid of warp tiles": 17280,
        "BM*BK must be a multiple of 4*threads: the A tile loads in whole float4 passes": 100,
        "resources: shared memory": 61,
    },
)
SKINNY_SMALL_M = SpaceCounts(
    raw=10080,
    valid=7896,
    useful=1440,
    fits=1278,
    pruned={
        "BN must be a multiple of (32/LK)*TN: warps cover whole column strips": 1512,
        "skinny: wasteful for this shape": 1316,
        "threads per block must be at most 1024 (CUDA's limit)": 672,
        "split-K: more blocks per SM than needed": 2532,
        "split-K: fewer BK tiles than slices": 120,
        "resources: registers": 162,
        "split-K: fewer blocks than SMs": 1172,
        "tile larger than the matrix": 1316,
    },
)


@pytest.mark.parametrize(
    ("family", "shape", "expected"),
    [
        ("splitk", Shape(256, 256, 65536), SPLITK_LARGE_K),
        ("skinny", Shape(16, 4096, 4096), SKINNY_SMALL_M),
    ],
    ids=["splitk", "skinny"],
)
def test_a_second_space_of_a_family_skips_the_rules_and_counts_the_same(
    family: str, shape: Shape, expected: SpaceCounts, monkeypatch: pytest.MonkeyPatch
) -> None:
    rule_verdicts(get_family(family))  # the first Space of the family in this process, or not

    def no_rules(self: Family, config: object) -> list[str]:
        raise AssertionError(f"{self.name}'s rules were checked again")

    monkeypatch.setattr(Family, "broken_rules", no_rules)
    checks, counts = Space(family, shape, H100).evaluate()
    assert counts == expected
    assert list(counts.pruned) == list(expected.pruned)  # in the order the walk meets them
    assert len(checks) == expected.fits
