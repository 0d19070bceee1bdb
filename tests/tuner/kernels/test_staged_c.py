"""C through shared memory for the FP64 tensor-core families (templates/_staged_c.cuh.j2), on
the CPU: which configs have room for it, that the rendered kernels take it only where C's rows
cannot take float4 stores, and that its index arithmetic, as rendered, puts every sum of a warp
tile in a cell of its own and reads every cell back once, inside the warp's region.
Correctness against cuBLAS on odd row pitches is in tests/gpu/test_alignment.py and
tests/gpu/test_staged_c.py."""

from __future__ import annotations

import functools
import random
import re
from types import CodeType

import pytest

from tests.gpu.test_staged_c import CONFIGS
from tuner.core.config import Config
from tuner.kernels.families import get_family, parse_config
from tuner.kernels.render import render
from tuner.kernels.space import all_configs

FAMILIES = ("dmma", "dmma_pipelined")


@functools.cache
def _valid(family: str) -> tuple[Config, ...]:
    fam = get_family(family)
    return tuple(c for c in all_configs(fam) if not fam.broken_rules(c))


def _valid_sample(family: str, count: int = 300, seed: int = 3) -> list[Config]:
    return random.Random(seed).sample(_valid(family), count)


@pytest.mark.parametrize("family", FAMILIES)
def test_staged_c_is_offered_exactly_where_the_warp_regions_fit_the_tile_buffers(
    family: str,
) -> None:
    fam = get_family(family)
    offered = 0
    for config in _valid_sample(family):
        p = dict(config.params)
        derived = fam.derive(p)
        warps = fam.threads(p) // 32
        region_floats = warps * p["WM"] * (p["WN"] + 1)
        fits = region_floats * 4 <= fam.footprint(p).smem_bytes
        assert derived["STAGED_C"] == int(fits), config.name
        offered += fits
    # Most configs have room (tile buffers of a few k tiles outweigh one C tile), some do not.
    assert 0 < offered < 300


def _staged_expressions(code: str) -> tuple[str, int, int, int]:
    """The rendered staged store's write index, its region size per warp, its loop bound and
    the row length of a region."""
    write = re.search(r"staged\[(.+?)\] = \(float\)", code)
    region = re.search(r"\(tid / 32\) \* (\d+);", code)
    loop = re.search(r"for \(int e = lane; e < (\d+); e \+= 32\)", code)
    read = re.search(r"staged\[r \* (\d+) \+ e % (\d+)\]", code)
    assert write and region and loop and read
    return write.group(1), int(region.group(1)), int(loop.group(1)), int(read.group(1))


def _as_python(expression: str) -> CodeType:
    """A C index expression of ints (``/`` rounding toward zero on non-negative operands),
    compiled as Python."""
    return compile(expression.replace(" / ", " // "), "<staged index>", "eval")


@pytest.mark.parametrize("family", FAMILIES)
def test_rendered_staged_store_writes_each_cell_once_and_reads_each_back(family: str) -> None:
    fam = get_family(family)
    checked = set()
    for config in _valid_sample(family, 400):
        p = dict(config.params)
        d = fam.derive(p)
        key = (p["WM"], p["WN"])
        if not d["STAGED_C"] or key in checked:
            continue
        checked.add(key)
        code = render(config).code
        write, region, loop, row_len = _staged_expressions(code)
        wm, wn = p["WM"], p["WN"]
        assert region == wm * row_len and row_len > wn and loop == wm * wn
        # Every lane's sums (i, j, r) of the warp tile land in distinct cells of the region,
        # and those cells are exactly the WM x WN ones the read-back loop visits.
        index = _as_python(write)
        written = {}
        for lane in range(32):
            g, t = lane // 4, lane % 4
            for i in range(d["MT"]):
                for j in range(d["NT"]):
                    for r in range(4):
                        cell = eval(index, {}, dict(i=i, j=j, r=r, g=g, t=t))
                        assert 0 <= cell < region
                        assert cell not in written, (config.name, lane, i, j, r)
                        written[cell] = (lane, i, j, r)
        read = {(e // wn) * row_len + e % wn for e in range(loop)}
        assert set(written) == read, config.name
        # The cell of row R, column Cn is the sum the lane owning that row holds: rows g and
        # g + 8 of each m16 tile.
        for cell, (lane, i, _j, r) in written.items():
            assert cell // row_len == i * 16 + lane // 4 + 8 * (r // 2)
    assert {wn for _wm, wn in checked} == {16, 32, 64}, checked


@pytest.mark.parametrize("family", FAMILIES)
def test_kernels_take_the_staged_store_only_when_they_have_room(family: str) -> None:
    fam = get_family(family)
    seen = set()
    for config in _valid_sample(family, 60):
        staged = fam.derive(dict(config.params))["STAGED_C"]
        code = render(config).code
        assert ("float* const staged" in code) == bool(staged), config.name
        if staged:
            # Only for C rows that are not float4s, and never for a first slice reading C.
            assert "(!c_vec && (beta == 0.0f || !first))" in code or (
                "(!rows_are_float4(C, ldc) && (beta == 0.0f || !first))" in code
            )
        seen.add(staged)
    assert seen == {0, 1}


def test_the_gpu_tests_configs_take_the_staged_store() -> None:
    widths = set()
    for name in CONFIGS:
        config = parse_config(name)
        assert get_family(config.family).derive(dict(config.params))["STAGED_C"] == 1, name
        widths.add((config.family, dict(config.params)["WN"]))
    assert {wn for _family, wn in widths} == {16, 32, 64}
