"""The space's enumeration (rules decided on prefixes, shape checks on precomputed numbers,
resource checks kept per device) against a plain reference: every point of the product built as
a config and checked one by one, rule after rule, as the space did before it was made faster."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from functools import cache

import pytest

from tuner.core.config import Config
from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.kernels.families import FAMILIES, SPLITK_MAX_TILES, Family, get_family
from tuner.kernels.resources import DEVICE_TABLE, DeviceLimits, static_check
from tuner.kernels.space import SPLITK_THREADS_PER_SM, Space, SpaceCounts

H100 = DEVICE_TABLE["sm_90"]
SHAPES = (
    Shape(4096, 4096, 4096),
    Shape(1024, 1024, 512),
    Shape(16, 4096, 4096),
    Shape(256, 256, 65536),
    Shape(1, 1, 1),
    Shape(4097, 17, 1000),
)
# Every default family, and families that exercise the rest: SPLITK with a family waste rule
# (skinny), pinned parameters (hmma), few parameters (smem_tiling).
CHECKED = ("warptile", "pipelined", "streamk", "skinny", "dmma", "dmma_pipelined", "hmma")


def reference_first_broken(family: Family, params: dict[str, int]) -> str | None:
    for rule in family.rules:
        try:
            ok = rule.holds(params)
        except ZeroDivisionError:
            ok = False
        if not ok:
            return rule.reason
    return None


Rules = tuple[int, list[tuple[int, Config]], dict[str, int], dict[str, int]]


@cache
def reference_rules(family: Family, pinned: tuple[tuple[str, int], ...]) -> Rules:
    """(raw, [(position, config)], {reason: first position}, {reason: count}) by brute force."""
    fixed = dict(pinned)
    names = [p.name for p in family.params]
    choices = [(fixed[p.name],) if p.name in fixed else p.values for p in family.params]
    valid: list[tuple[int, Config]] = []
    first: dict[str, int] = {}
    rejected: dict[str, int] = {}
    raw = 0
    for position, values in enumerate(itertools.product(*choices)):
        raw += 1
        config = family.config(dict(zip(names, values, strict=True)))
        reason = reference_first_broken(family, config.as_dict())
        if reason is None:
            valid.append((position, config))
        else:
            first.setdefault(reason, position)
            rejected[reason] = rejected.get(reason, 0) + 1
    return raw, valid, first, rejected


def pow2_ceil(value: int) -> int:
    result = 1
    while result < value:
        result *= 2
    return result


def reference_waste(
    family: Family, config: Config, shape: Shape, device: DeviceLimits
) -> str | None:
    params = config.as_dict()
    for name, side in (("BM", shape.m), ("BN", shape.n), ("BK", shape.k)):
        if name not in params:
            continue
        smallest = min(next(p.values for p in family.params if p.name == name))
        if params[name] > smallest and params[name] > pow2_ceil(side):
            return "tile larger than the matrix"
    if family.waste(params, shape):
        return f"{family.name}: wasteful for this shape"
    if "SPLITK" not in params:
        return None
    split = params["SPLITK"]
    values = next(p.values for p in family.params if p.name == "SPLITK")
    tiles = -(-shape.m // params["BM"]) * -(-shape.n // params["BN"])
    if tiles > SPLITK_MAX_TILES:
        return "split-K: more output tiles than ticket counters"
    k_tiles = -(-shape.k // family.k_step(params))
    per_sm = max(1, SPLITK_THREADS_PER_SM // max(family.threads(params), 1))
    limit = per_sm * device.sm_count
    if tiles * split < device.sm_count and any(
        split < s <= k_tiles and tiles * s <= limit for s in values
    ):
        return "split-K: fewer blocks than SMs"
    if split == values[0]:
        return None
    if k_tiles < split:
        return "split-K: fewer BK tiles than slices"
    if tiles * split > limit:
        return "split-K: more blocks per SM than needed"
    return None


def reference_space(
    family: Family, shape: Shape, device: DeviceLimits
) -> tuple[list[Config], SpaceCounts]:
    pinned = tuple(sorted(family.pinned(shape).items()))
    raw, valid, first, rejected = reference_rules(family, pinned)
    first, pruned = dict(first), dict(rejected)
    counts = SpaceCounts(raw=raw, valid=len(valid))
    kept = []
    for position, config in valid:
        reason = reference_waste(family, config, shape, device)
        if reason is None:
            counts.useful += 1
            check = static_check(config, device)
            if check.fits:
                kept.append(config)
                continue
            problem = check.problems[0]
            kinds = ("architecture", "static shared memory", "shared memory", "registers")
            kind = next((k for k in (*kinds, "threads", "no block fits") if k in problem), None)
            reason = f"resources: {kind}" if kind else "resources"
        first.setdefault(reason, position)
        pruned[reason] = pruned.get(reason, 0) + 1
    counts.fits = len(kept)
    counts.pruned = {r: pruned[r] for r in sorted(pruned, key=first.__getitem__)}
    return kept, counts


@pytest.mark.parametrize("family", CHECKED)
def test_the_space_equals_the_one_by_one_reference(family: str) -> None:
    fam = get_family(family)
    for shape in SHAPES:
        shape = Shape(shape.m, shape.n, shape.k, fam.dtypes[0], fam.layouts[-1])
        for device in (H100, DEVICE_TABLE["sm_86"]) if shape.m == 4096 else (H100,):
            checks, counts = Space(fam, shape, device).evaluate()
            expected, expected_counts = reference_space(fam, shape, device)
            assert [c.config for c in checks] == expected, (family, shape, device.arch)
            assert counts == expected_counts, (family, shape, device.arch)
            assert list(counts.pruned) == list(expected_counts.pruned)


# A family whose whole product is larger is checked with its pins, as a space walks it: one
# shape per layout, the input types and types of C taken in turn (tma_ws: 10 million points
# unpinned, 430 080 a pin set).
UNPINNED_LIMIT = 1_000_000


def rule_step_pins(family: Family) -> list[tuple[tuple[str, int], ...]]:
    """The pins the rule step is checked with: none, or one pin set per layout, each with the
    next pair of input type and type of C the family takes."""
    if math.prod(len(p.values) for p in family.params) <= UNPINNED_LIMIT:
        return [()]
    kinds = []
    for out, dtype in itertools.product(family.out_dtypes, family.dtypes):
        try:
            kinds.append(Shape(8, 8, 8, dtype, "NN", out))
        except InputError:  # a type of C this input type is not written in
            continue
    return [
        tuple(sorted(family.pinned(replace(kind, layout=layout)).items()))
        for kind, layout in zip(itertools.cycle(kinds), family.layouts, strict=False)
    ]


def test_every_family_s_rule_step_equals_the_reference() -> None:
    from tuner.kernels.rule_verdicts import rule_verdicts

    for family in FAMILIES.values():
        if family.name in CHECKED or len(family.rules) == 0:
            continue
        for pinned in rule_step_pins(family):
            raw, valid, first, rejected = reference_rules(family, pinned)
            verdicts = rule_verdicts(family, pinned)
            assert verdicts.raw == raw
            assert list(verdicts.valid) == valid, (family.name, pinned)
            assert [(r, first[r], rejected[r]) for r in first] == list(verdicts.broken), (
                family.name,
                pinned,
            )


def test_the_rule_step_of_a_large_family_is_checked_in_every_layout_and_type_of_c() -> None:
    pins = [dict(p) for p in rule_step_pins(get_family("tma_ws"))]
    assert sorted(p["LAYOUT"] for p in pins) == [0, 1, 2, 3]
    assert {p["OUT"] for p in pins} == {0, 1, 2} and {p["DTYPE"] for p in pins} == {0, 1}
    assert rule_step_pins(get_family("wgmma")) == [()]
