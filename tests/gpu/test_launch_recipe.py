"""The launch recipe the API serves (``tuner.kernels.launch_recipe``), followed by hand: for one
config of every family the GPU runs (and a padded config of each padding kind), the source is
compiled by NVRTC with exactly the recipe's options, loaded as a CuPy ``RawModule``, its buffers
made and filled as the recipe says (no tuner launch helper), launched with exactly the recipe's
arguments, grid, block and dynamic shared memory, and compared with cuBLAS in the same dtype
(strict FP32 sums): once with C read (alpha 0.5, beta 3), once with C poisoned by NaN (beta 0)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.tuner.kernels.test_launch_recipe import shape_for
from tuner.core.accuracy import allowance
from tuner.kernels.families import KERNEL_FAMILIES, get_family, parse_config
from tuner.kernels.launch_recipe import LaunchRecipe, OperandBuffer, launch_recipe
from tuner.kernels.render import render
from tuner.kernels.representative import REPRESENTATIVE

pytestmark = pytest.mark.gpu

RAGGED = (101, 203, 301)
# One config of every family launched through CuPy, and a padded one without leading dimensions
# (float32, C copied back), with them (float32 dmma) and of half inputs. Not here: the vendor
# library's (no kernel source) and tma_ws, whose tensor maps are structs passed by value that
# CuPy cannot pass (its launch is the driver's; tests/gpu/test_tma_ws.py).
BY_CUPY = [f for f in KERNEL_FAMILIES if not get_family(f).tensor_maps]
NAMES = [REPRESENTATIVE[family][0] for family in BY_CUPY] + [
    REPRESENTATIVE["pipelined"][0] + "_pad4",
    REPRESENTATIVE["dmma_pipelined"][0] + "_pad4",
    REPRESENTATIVE["hmma"][0] + "_pad8",
]
# c_elem: C of the half templates, float for the OUT 0 configs run here (float32 C).
ELEMENT_BYTES = {"float": 4, "half_bits": 2, "c_elem": 4}


def _compile(code: str, recipe: LaunchRecipe, folder: Path) -> Any:
    """NVRTC with the recipe's options, the cubin loaded as a RawModule: the recipe's kernel."""
    import cupy
    from cupy.cuda import nvrtc

    prog = nvrtc.createProgram(code, f"{recipe.entry}.cu", (), ())
    try:
        nvrtc.compileProgram(prog, tuple(recipe.compile.options))
        cubin = bytes(nvrtc.getCUBIN(prog))
    finally:
        nvrtc.destroyProgram(prog)
    path = folder / f"{recipe.entry}.cubin"
    path.write_bytes(cubin)
    return cupy.RawModule(path=str(path)).get_function(recipe.entry)


def _filled(buffer: OperandBuffer, array: Any, beta: float) -> Any:
    """The buffer the recipe describes, made zeroed and filled from the caller's array."""
    import cupy as cp

    from tuner.gpu.half_arrays import from_float32, to_float32

    assert tuple(array.shape) == buffer.array, buffer
    rows, cols = buffer.array
    if buffer.split_parts:
        made = cp.zeros(buffer.buffer, dtype=cp.uint16)
        hi = from_float32(array, "bfloat16")
        lo = from_float32(array - to_float32(hi, "bfloat16"), "bfloat16")
        step_r, step_c = buffer.part_offset
        for p, part in enumerate(buffer.split_parts):
            made[p * step_r : p * step_r + rows, p * step_c : p * step_c + cols] = (
                hi if part == "hi" else lo
            )
        return made
    made = cp.zeros(buffer.buffer, dtype=array.dtype)
    if buffer.operand != "C" or beta != 0.0:  # C is copied in only when beta reads it
        made[:rows, :cols] = array
    return made


def _run(
    kernel: Any, recipe: LaunchRecipe, a: Any, b: Any, c: Any, alpha: float, beta: float
) -> None:
    caller = {"A": a, "B": b, "C": c}
    arrays = dict(caller)
    for buffer in recipe.buffers:
        arrays[buffer.operand] = _filled(buffer, caller[buffer.operand], beta)
    scalars = {"alpha": np.float32(alpha), "beta": np.float32(beta)}
    args: list[Any] = []
    for argument in recipe.arguments:
        p = argument.parameter
        if p.pointer:
            array = arrays[p.name]
            element = p.ctype.removeprefix("const ").removesuffix("*")
            assert array.itemsize == ELEMENT_BYTES[element], (p, array.dtype)
            assert array.flags.c_contiguous
            args.append(array)
        elif p.name in scalars:
            args.append(scalars[p.name])
        else:
            assert p.ctype == "int" and argument.value is not None, argument
            args.append(np.int32(argument.value))
    assert recipe.grid is not None
    kernel(recipe.grid, recipe.block, tuple(args), shared_mem=recipe.dynamic_smem_bytes)
    for buffer in recipe.buffers:
        if buffer.copy_back:
            rows, cols = buffer.array
            caller[buffer.operand][...] = arrays[buffer.operand][:rows, :cols]


@pytest.mark.parametrize("name", NAMES)
def test_the_served_recipe_run_by_hand_matches_cublas(name: str, tmp_path: Path) -> None:
    import cupy as cp

    from tuner.gpu.device import live_device
    from tuner.gpu.half_arrays import from_float32
    from tuner.gpu.measure import relative_error, shape_gemm, tolerance
    from tuner.kernels.resources import arch_number

    config = parse_config(name)
    family = get_family(config.family)
    device = live_device()
    if family.arch_problem(arch_number(device.arch)) is not None:
        pytest.skip(str(family.arch_problem(arch_number(device.arch))))
    shape = shape_for(name, RAGGED)
    source = render(config)
    recipe = launch_recipe(source, shape, device.arch, device.sm_count)
    kernel = _compile(source.code, recipe, tmp_path)
    if recipe.dynamic_smem_bytes:  # the recipe's first step before a launch
        kernel.max_dynamic_shared_size_bytes = recipe.dynamic_smem_bytes
    rng = cp.random.default_rng(7)
    a_dims = (shape.k, shape.m) if shape.a_transposed else (shape.m, shape.k)
    b_dims = (shape.n, shape.k) if shape.b_transposed else (shape.k, shape.n)
    a = from_float32(rng.standard_normal(a_dims, dtype=cp.float32), shape.dtype)
    b = from_float32(rng.standard_normal(b_dims, dtype=cp.float32), shape.dtype)
    c0 = rng.standard_normal((shape.m, shape.n), dtype=cp.float32)
    allowed = tolerance(shape.k, shape.dtype) + allowance(family.accuracy)
    for alpha, beta in ((0.5, 3.0), (1.0, 0.0)):
        ref = c0.copy()
        shape_gemm(shape, alpha, a, b, beta, ref)
        c = c0.copy() if beta else cp.full_like(c0, cp.nan)
        _run(kernel, recipe, a, b, c, alpha, beta)
        cp.cuda.get_current_stream().synchronize()
        error = relative_error(c, ref)
        print(f"{name:70s} {shape.label():28s} beta={beta:g} err={error:.2e} tol={allowed:.1e}")
        assert error <= allowed, (name, alpha, beta, error)
