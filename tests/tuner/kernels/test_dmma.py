"""``dmma`` on the CPU: FP32 GEMM on the FP64 tensor cores.

Rules, footprint, rendering of each mma depth, nvcc's report and the search space. Correctness
against cuBLAS (edge shapes, split-K shapes) is in tests/gpu/test_correctness.py.
"""

from __future__ import annotations

import re

import pytest

from tests.tuner.dmma_checks import (
    assert_compiles_without_spills_within_the_blocks_per_sm,
    assert_cost_model_rates_candidates,
)
from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.kernels.families import get_family, parse_config
from tuner.kernels.render import render
from tuner.kernels.representative import REPRESENTATIVE
from tuner.kernels.resources import DEVICE_TABLE, static_check
from tuner.kernels.space import Space

H100 = DEVICE_TABLE["sm_90"]
DMMA = get_family("dmma")
# The best config of the H100 sweep at 4096^3 and 8192x8192x256 (h100-sweep-dmma.jsonl).
TILE = dict(BM=64, BN=128, BK=16, WM=32, WN=32, MK=4, SPLITK=1, MINBLOCKS=2, WIDEN=0)


def config(**changes: int) -> Config:
    return DMMA.config({**TILE, **changes})


def test_name_reads_back() -> None:
    c = config()
    assert c.name == "dmma_bm64_bn128_bk16_wm32_wn32_mk4_sk1_mb2_wd0"
    assert parse_config(c.name) == c


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"BK": 8, "MK": 16}, "whole mma steps"),
        ({"BM": 32, "BN": 32, "WM": 16, "WN": 16, "BK": 8}, "whole float4 passes"),
        ({"BM": 64, "WM": 128}, "whole grid of warp tiles"),
    ],
)
def test_rules_name_what_is_broken(changes: dict[str, int], words: str) -> None:
    reasons = DMMA.broken_rules(config(**changes))
    assert any(words in r for r in reasons), reasons


def test_representative_configs_are_valid_and_fit() -> None:
    for name in REPRESENTATIVE["dmma"]:
        c = parse_config(name)
        assert DMMA.broken_rules(c) == [], name
        assert static_check(c, H100).fits, name


@pytest.mark.parametrize(("widen", "element"), [(0, "double"), (1, "float")])
def test_tiles_are_doubles_or_floats_in_dynamic_shared_memory(widen: int, element: str) -> None:
    """WIDEN=1 keeps the tiles as floats (the extent the kernel addresses of them, against the
    footprint: test_smem_layout.py)."""
    fp = DMMA.footprint(config(WIDEN=widen).as_dict())
    assert fp.dynamic_smem and fp.threads == 256
    assert f"extern __shared__ {element} smem[];" in render(config(WIDEN=widen)).code
    # Four FP64 sums (eight registers) per m16n8 tile: a 32x32 warp tile has 2 x 4 of them.
    assert fp.accumulators == 8 * 2 * 4


def test_widen_decides_where_floats_become_doubles() -> None:
    before = render(config(WIDEN=0)).code
    after = render(config(WIDEN=1)).code
    assert "make_double2(a_stage[i].x, a_stage[i].y)" in before
    assert "*reinterpret_cast<float4*>(a) = a_stage[i];" in after
    assert "make_double2" not in after
    assert "widen(As[" in after and "const float* As" in after


@pytest.mark.parametrize("mk", [4, 8, 16])
def test_each_mma_depth_renders_its_instruction_and_operands(mk: int) -> None:
    code = render(config(MK=mk)).code
    line = re.search(r'"mma\.sync\.aligned\.m16n8k(\d+)\.row\.col\.f64\.f64\.f64\.f64 (.*)"', code)
    assert line and int(line.group(1)) == mk, code
    groups = re.findall(r"\{([^}]*)\}", line.group(2) + code[line.end() : line.end() + 80])
    d, a, b = (len(g.split(",")) for g in groups[:3])
    assert (d, a, b) == (4, mk // 2, mk // 4)
    assert f"const double (&a)[{mk // 2}]" in code and f"const double (&b)[{mk // 4}]" in code


def test_launch_bounds_carry_the_blocks_per_sm() -> None:
    assert "__launch_bounds__(256, 2)" in render(config()).code
    assert "__launch_bounds__(256, 1)" in render(config(MINBLOCKS=1)).code


def test_split_k_counters_only_when_split() -> None:
    assert "splitk_arrivals" not in render(config()).code
    split = render(config(SPLITK=8))
    assert "splitk_arrivals" in split.code and "__syncthreads_or" in split.code
    assert split.launch(Shape(256, 256, 65536)).grid == (2, 4, 8)
    assert DMMA.module_counters


def test_c_gets_one_rounding_from_fp64() -> None:
    code = render(config()).code
    # alpha and beta are applied in double and the sum is rounded to float once.
    assert "(float)fma(alpha, v0, beta * (double)c[0])" in code
    assert "double acc[2][4][4];" in code


@pytest.mark.parametrize("name", REPRESENTATIVE["dmma"] + [config().name])
def test_nvcc_compiles_without_spills_within_the_blocks_per_sm(name: str) -> None:
    assert_compiles_without_spills_within_the_blocks_per_sm(name)


def test_space_splits_k_only_where_the_grid_is_small() -> None:
    square = list(Space("dmma", Shape(4096, 4096, 4096), H100).candidates())
    assert square and {c["SPLITK"] for c in square} == {1}
    large_k = list(Space("dmma", Shape(256, 256, 65536), H100).candidates())
    assert max(c["SPLITK"] for c in large_k) >= 16
    assert config(SPLITK=32) in large_k


def test_cost_model_rates_every_candidate() -> None:
    assert_cost_model_rates_candidates("dmma", Shape(8192, 8192, 256))
