"""Checks shared by the tests of the FP64 tensor-core families (``dmma``, ``dmma_pipelined``)."""

from __future__ import annotations

import math

from tuner.core.shape import Shape
from tuner.kernels.compile import NvccCompiler
from tuner.kernels.families import get_family, parse_config
from tuner.kernels.render import render
from tuner.kernels.resources import DEVICE_TABLE
from tuner.kernels.space import Space
from tuner.model.cost_model import estimate

H100 = DEVICE_TABLE["sm_90"]


def assert_compiles_without_spills_within_the_blocks_per_sm(name: str) -> None:
    """nvcc sm_90 builds ``name`` without spills, all shared memory dynamic, in registers that
    hold at least its FP64 sums; and MINBLOCKS blocks of it fit an H100's SM with the registers
    nvcc chose and the footprint's shared memory (``__launch_bounds__`` bounds the registers
    alone)."""
    config = parse_config(name)
    family = get_family(config.family)
    kernel = NvccCompiler("sm_90").compile(render(config))
    usage = kernel.usage
    assert not usage.spills, usage
    assert usage.smem_static_bytes == 0  # everything is dynamic
    params = config.as_dict()
    assert kernel.occupancy(H100).blocks_per_sm >= params["MINBLOCKS"]
    # The FP64 sums alone take eight registers per m16n8 tile.
    assert usage.registers >= family.footprint(params).accumulators


def assert_cost_model_rates_candidates(family: str, shape: Shape, count: int = 40) -> None:
    """The ranked sampler's model gives a finite, positive cost to the first candidates."""
    for config in list(Space(family, shape, H100).candidates())[:count]:
        cycles = estimate(config, shape, H100).cycles
        assert math.isfinite(cycles) and cycles > 0, config.name
