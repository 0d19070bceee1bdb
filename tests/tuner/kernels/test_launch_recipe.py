"""The launch recipe (``tuner.kernels.launch_recipe``): for one config of every family, the
signature and argument order are those of the rendered source's ``extern "C"`` line, the values
are what a row-major packed layout needs, and the GPU launch passes its arguments in the same
order (checked here with a stand-in kernel that records them)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.gpu.measure import launch_kernel
from tuner.kernels.families import KERNEL_FAMILIES, get_family, parse_config
from tuner.kernels.launch_recipe import LaunchRecipe, kernel_parameters, launch_recipe
from tuner.kernels.render import KernelSource, render
from tuner.kernels.representative import REPRESENTATIVE

RAGGED = (101, 203, 301)


def shape_for(name: str, dims: tuple[int, int, int] = RAGGED) -> Shape:
    """A shape the config computes: the first of its family's dtypes and layouts whose pinned
    parameters are the config's."""
    config = parse_config(name)
    family = get_family(config.family)
    for dtype in family.dtypes:
        for layout in family.layouts:
            for out in family.out_dtypes:
                if out not in (dtype, "float32"):
                    continue  # C is float32 or the input type
                shape = Shape(*dims, dtype, layout, out)
                if all(config[p] == v for p, v in family.pinned(shape).items()):
                    return shape
    raise AssertionError(f"no shape for {name}")


def declared_parameters(code: str, entry: str) -> list[tuple[str, str]]:
    """(type, name) of each parameter on the source's ``extern "C" __global__`` declaration,
    ``__restrict__`` dropped, whitespace collapsed."""
    declaration = r'extern "C" __global__ void\b.*?\b' + re.escape(entry) + r"\s*\(([^)]*)\)"
    match = re.search(declaration, code, re.DOTALL)
    assert match is not None, f'no extern "C" __global__ {entry} in the source'
    out = []
    for declared in match.group(1).split(","):
        words = declared.replace("__restrict__", " ").replace("*", "* ").split()
        ctype = " ".join(words[:-1]).replace(" *", "*")
        out.append((ctype, words[-1]))
    return out


@pytest.mark.parametrize("family", sorted(KERNEL_FAMILIES))
def test_the_recipe_of_every_family_is_the_signature_of_its_source(family: str) -> None:
    name = REPRESENTATIVE[family][0]
    source = render(parse_config(name))
    recipe = launch_recipe(source, shape_for(name), "sm_90", 132)
    declared = declared_parameters(source.code, source.entry)
    assert [(a.parameter.ctype, a.parameter.name) for a in recipe.arguments] == declared
    assert recipe.entry == source.entry
    # The signature is the declaration as written (whitespace aside).
    line = re.search(r'extern "C" __global__ void[^{]*\)', source.code)
    assert line is not None
    written = re.sub(r"__launch_bounds__\([^)]*\)|__maxnreg__\([^)]*\)", "", line.group(0))
    assert " ".join(written.split()) == " ".join(recipe.signature.split())
    takes_ld = any(a.parameter.name.startswith("ld") for a in recipe.arguments)
    assert takes_ld == (get_family(family).leading_dims or get_family(family).tensor_maps)


def values(recipe: LaunchRecipe) -> dict[str, int | None]:
    return {a.parameter.name: a.value for a in recipe.arguments}


@pytest.mark.parametrize(
    ("layout", "lda", "ldb"),
    [("NN", 301, 203), ("NT", 301, 301), ("TN", 101, 203), ("TT", 101, 301)],
)
def test_leading_dimensions_are_the_row_lengths_of_packed_arrays(
    layout: str, lda: int, ldb: int
) -> None:
    # A stored M x K (N) or K x M (T); B stored K x N (N) or N x K (T); C M x N: 101, 203, 301.
    family = "hmma"
    params = parse_config(REPRESENTATIVE[family][0]).as_dict()
    params["LAYOUT"] = get_family(family).pinned(Shape(1, 1, 1, "float16", layout))["LAYOUT"]
    params["DTYPE"] = get_family(family).pinned(Shape(1, 1, 1, "float16", layout))["DTYPE"]
    config = get_family(family).config(params)
    recipe = launch_recipe(render(config), Shape(*RAGGED, "float16", layout), "sm_90", 132)
    assert values(recipe) == {
        "M": 101,
        "N": 203,
        "K": 301,
        "alpha": None,
        "A": None,
        "lda": lda,
        "B": None,
        "ldb": ldb,
        "beta": None,
        "C": None,
        "ldc": 203,
    }
    assert recipe.buffers == () and recipe.after == ()
    assert recipe.types  # half_bits is explained


def test_a_padded_config_without_leading_dimensions_runs_on_padded_buffers() -> None:
    name = REPRESENTATIVE["pipelined"][0] + "_pad4"
    recipe = launch_recipe(render(parse_config(name)), Shape(*RAGGED), "sm_90", 132)
    # Rows of whole float4s: K of A (301 -> 304), N of B and C (203 -> 204); M is no row length.
    assert recipe.kernel_shape == (101, 204, 304)
    assert values(recipe)["N"] == 204 and values(recipe)["K"] == 304
    buffers = {b.operand: (b.array, b.buffer, b.copy_back) for b in recipe.buffers}
    assert buffers == {
        "A": ((101, 301), (101, 304), False),
        "B": ((301, 203), (304, 204), False),
        "C": ((101, 203), (101, 204), True),
    }
    assert any("beta != 0" in step for step in recipe.before)
    assert len(recipe.after) == 1 and "back into C" in recipe.after[0]
    assert "padded" in recipe.grid_rule
    assert recipe.grid == (math.ceil(204 / 128), math.ceil(101 / 128), 1)


def test_a_padded_config_with_leading_dimensions_widens_rows_and_writes_c_in_place() -> None:
    name = REPRESENTATIVE["dmma_pipelined"][0] + "_pad4"
    recipe = launch_recipe(render(parse_config(name)), Shape(*RAGGED), "sm_90", 132)
    assert recipe.kernel_shape == RAGGED
    # Copied float32 rows are 128 bytes apart: 301 -> 320, 203 -> 224; C is the caller's.
    assert (values(recipe)["lda"], values(recipe)["ldb"], values(recipe)["ldc"]) == (320, 224, 203)
    assert {b.operand for b in recipe.buffers} == {"A", "B"} and recipe.after == ()


def test_an_emulated_config_passes_the_split_product_and_buffers() -> None:
    name = REPRESENTATIVE["hmma_bf16x3"][0]
    shape = shape_for(name)
    recipe = launch_recipe(render(parse_config(name)), shape, "sm_90", 132)
    kp = 304  # K = 301 rounded up to 8 BF16 values
    assert recipe.kernel_shape == (101, 203, 3 * kp)
    a, b = recipe.buffers
    assert (a.operand, a.split_parts, b.split_parts) == (
        "A",
        ("lo", "hi", "hi"),
        ("hi", "lo", "hi"),
    )
    if shape.layout == "NN":
        # A: K along its rows, parts side by side; B stored K x N: parts stacked, rows of 208.
        assert (a.buffer, a.part_offset) == ((101, 3 * kp), (0, kp))
        assert (b.buffer, b.part_offset) == ((3 * kp, 208), (kp, 0))
        assert (values(recipe)["lda"], values(recipe)["ldb"]) == (3 * kp, 208)
    assert values(recipe)["ldc"] == 203
    assert any(step.startswith("split A") for step in recipe.before)


def test_a_persistent_grid_needs_the_sm_count_and_says_so() -> None:
    name = REPRESENTATIVE["streamk"][0]
    smb = parse_config(name)["SMBLOCKS"]
    source = render(parse_config(name))
    without = launch_recipe(source, Shape(*RAGGED), "sm_90", None)
    assert without.grid is None and "SM count" in without.grid_rule
    assert launch_recipe(source, Shape(*RAGGED), "sm_90", 132).grid == (132 * smb, 1, 1)
    assert any("one module per" in step for step in without.before)


@pytest.mark.parametrize("dims", [(1, 1, 1), (1000, 3000, 64), (4097, 17, 5)])
def test_a_grid_follows_its_rule(dims: tuple[int, int, int]) -> None:
    name = REPRESENTATIVE["splitk"][1]
    config = parse_config(name)
    recipe = launch_recipe(render(config), Shape(*dims), "sm_90", 132)
    m, n, _ = dims
    grid = (math.ceil(n / config["BN"]), math.ceil(m / config["BM"]), config["SPLITK"])
    assert recipe.grid == grid
    assert f"ceil(N / {config['BN']})" in recipe.grid_rule
    assert f"ceil(M / {config['BM']})" in recipe.grid_rule


def test_compile_options_name_the_target_and_the_dialect() -> None:
    wgmma = REPRESENTATIVE["wgmma"][0]
    recipe = launch_recipe(render(parse_config(wgmma)), shape_for(wgmma), "sm_90", 132)
    assert recipe.compile.arch == "sm_90a"  # wgmma needs the architecture-specific target
    assert recipe.compile.options == ("-arch=sm_90a", "-std=c++17")
    assert recipe.compile.defines == {}
    plain = REPRESENTATIVE["warptile"][0]
    unnamed = launch_recipe(render(parse_config(plain)), Shape(*RAGGED), None, None)
    assert unnamed.compile.arch == "sm_80" and "your GPU" in unnamed.compile.note


def test_a_shape_the_family_does_not_compute_is_refused() -> None:
    name = REPRESENTATIVE["warptile"][0]
    with pytest.raises(InputError, match="bfloat16"):
        launch_recipe(render(parse_config(name)), Shape(*RAGGED, "bfloat16", "NN"), "sm_90", 132)
    with pytest.raises(InputError, match="float64"):
        kernel_parameters(get_family("warptile"), "float64")


class Recorder:
    """A stand-in for a loaded kernel: keeps what it was launched with."""

    def __call__(self, grid: object, block: object, args: tuple[object, ...], **kw: object) -> None:
        self.grid, self.block, self.args = grid, block, args


@pytest.mark.parametrize("family", ["warptile", "dmma_pipelined", "hmma", "splitk"])
def test_the_gpu_launch_passes_the_recipes_arguments_in_its_order(family: str) -> None:
    name = REPRESENTATIVE[family][0]
    source: KernelSource = render(parse_config(name))
    shape = shape_for(name, (96, 64, 48))
    recipe = launch_recipe(source, shape, "sm_90", 132)
    element = np.float32 if shape.dtype == "float32" else np.uint16
    a_rows, a_cols = (shape.k, shape.m) if shape.a_transposed else (shape.m, shape.k)
    b_rows, b_cols = (shape.n, shape.k) if shape.b_transposed else (shape.k, shape.n)
    a, b = np.ones((a_rows, a_cols), element), np.ones((b_rows, b_cols), element)
    c = np.ones((shape.m, shape.n), np.float32)
    kernel = Recorder()
    launch_kernel(kernel, source, shape, 0.5, a, b, 3.0, c)
    arrays = {"A": a, "B": b, "C": c}
    scalars = {"alpha": 0.5, "beta": 3.0}
    assert len(kernel.args) == len(recipe.arguments)
    for passed, wanted in zip(kernel.args, recipe.arguments, strict=True):
        label = wanted.parameter.name
        if label in arrays:
            assert passed is arrays[label], label
        elif label in scalars:
            assert float(passed) == scalars[label], label  # type: ignore[arg-type]
        else:
            assert int(passed) == wanted.value, label  # type: ignore[call-overload]
    assert tuple(kernel.grid) == recipe.grid and tuple(kernel.block) == recipe.block


def test_the_tma_ws_grid_rule_follows_its_schedule() -> None:
    """Whole tiles, the stream-K tail and pieces of K size the persistent grid differently, and
    the rule a client reads says which; the grid it gives for a known SM count agrees."""
    base = "tma_ws_bm64_bn128_bk64_cw1_s6_gr1_ra0_ep1_cm1_cn1"
    shape = Shape(256, 256, 65536, "bfloat16", "NT", "float32")  # the tail takes float32 C
    rules = {
        name: launch_recipe(render(parse_config(f"{base}_{name}dt1_ly1")), shape, "sm_90", 132)
        for name in ("", "tl1_", "sp16_")
    }
    assert "whole tiles" in rules[""].grid_rule and rules[""].grid == (8, 1, 1)
    assert "stream-K" in rules["tl1_"].grid_rule and rules["tl1_"].grid == (132, 1, 1)
    assert "16 x the number" in rules["sp16_"].grid_rule and rules["sp16_"].grid == (128, 1, 1)
