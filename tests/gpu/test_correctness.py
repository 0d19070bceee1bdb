"""Every family against cuBLAS (strict FP32) on edge and large shapes, on a real GPU."""

from __future__ import annotations

from typing import Any

import pytest

from tests.representative import REPRESENTATIVE
from tuner.families import FAMILIES, parse_config
from tuner.shape import Shape

pytestmark = pytest.mark.gpu

SHAPES = [
    Shape(1, 1, 1),
    Shape(17, 33, 9),
    Shape(1000, 1000, 1000),
    Shape(4097, 4097, 4097),
    Shape(128, 4096, 4096),
    Shape(4096, 4096, 4096),
]
# Shapes split-K is for (skinny M, huge K) and odd ones: ragged tiles and a K whose BK tiles do
# not divide evenly among the slices; 19x1000x1004 has rows and columns of float4s (skinny's
# unchecked path) with a ragged M, lanes past N and a K that leaves a partial chunk of 8.
SPLITK_SHAPES = [
    Shape(16, 4096, 4096),
    Shape(256, 256, 65536),
    Shape(33, 100, 5000),
    Shape(19, 1000, 1004),
]


@pytest.fixture(scope="module")
def kernels() -> dict[str, tuple[Any, Any]]:
    from tuner.compile import NvrtcCompiler, compile_many, load_kernel
    from tuner.render import render
    from tuner.resources import live_device

    dev = live_device()
    names = [n for names in REPRESENTATIVE.values() for n in names]
    sources = [render(parse_config(n)) for n in names]
    results = compile_many(NvrtcCompiler(dev.arch), sources)
    loaded = {}
    for name, source, result in zip(names, sources, results, strict=True):
        assert not isinstance(result, Exception), f"{name}: {result}"
        loaded[name] = (load_kernel(result), source)
    return loaded


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("family", list(REPRESENTATIVE))
def test_family_matches_cublas(
    family: str, shape: Shape, kernels: dict[str, tuple[Any, Any]], record_property: Any
) -> None:
    from tuner.measure import verify

    for name in REPRESENTATIVE[family]:
        kernel, source = kernels[name]
        result = verify(kernel, source, shape, seed=hash((name, str(shape))) & 0xFFFF)
        record_property(f"rel_error[{name}]", result.rel_error)
        print(
            f"RESULT {family} {shape} {name} rel_error={result.rel_error:.3e} "
            f"tol={result.tolerance:.1e}"
        )
        assert result.ok, (
            f"{name} on {shape}: relative error {result.rel_error:.3e} > {result.tolerance:.1e}"
        )


# The families whose blocks meet in C through the split-K counters (templates/README.md).
SPLIT_FAMILIES = [name for name, family in FAMILIES.items() if family.module_counters]


@pytest.mark.parametrize("shape", SPLITK_SHAPES, ids=str)
@pytest.mark.parametrize("family", SPLIT_FAMILIES)
def test_split_families_match_cublas_on_split_shapes(
    family: str, shape: Shape, kernels: dict[str, tuple[Any, Any]], record_property: Any
) -> None:
    test_family_matches_cublas(family, shape, kernels, record_property)


@pytest.mark.parametrize("family", SPLIT_FAMILIES)
def test_split_counters_reset_between_launches(
    family: str, kernels: dict[str, tuple[Any, Any]]
) -> None:
    """The same loaded kernel, launched again and again (other shapes in between, and a grid
    too large to split), must be right every time: the last slice of each tile resets its
    ticket counters."""
    import cupy as cp

    from tuner.measure import verify

    shapes = [
        Shape(16, 4096, 4096),
        Shape(33, 100, 5000),
        # 257*128 tiles of 16x64 (splitk), 129*128 of 32x64 (warptile_splitk) and 4097*256 of
        # 1x32 (skinny) exceed the 16384 counters: slice 0 does all of K
        Shape(4097, 8192, 256),
        Shape(16, 4096, 4096),
        Shape(16, 4096, 4096),
    ]
    for name in REPRESENTATIVE[family]:
        kernel, source = kernels[name]
        for i, shape in enumerate(shapes):
            result = verify(kernel, source, shape, seed=i)
            assert result.ok, (
                f"{name} on {shape} (launch {i + 1} of this kernel): relative error "
                f"{result.rel_error:.3e} > {result.tolerance:.1e}"
            )
        cp.cuda.get_current_stream().synchronize()


@pytest.mark.parametrize("family", list(REPRESENTATIVE))
def test_unaligned_operands_take_the_scalar_path(
    family: str, kernels: dict[str, tuple[Any, Any]]
) -> None:
    """Views that start 4 bytes past a 16-byte boundary must still give the right answer."""
    import cupy as cp

    from tuner.measure import cublas_gemm, launch, relative_error, tolerance

    shape = Shape(64, 72, 40)  # every row length a multiple of 4: only the pointers are unaligned
    rng = cp.random.default_rng(7)

    def offset(rows: int, cols: int) -> Any:
        flat = rng.standard_normal(rows * cols + 1, dtype=cp.float32)
        return flat[1:].reshape(rows, cols)

    a, b, c0 = offset(shape.m, shape.k), offset(shape.k, shape.n), offset(shape.m, shape.n)
    for name in REPRESENTATIVE[family]:
        kernel, source = kernels[name]
        ref, c = c0.copy(), offset(shape.m, shape.n)
        c[...] = c0
        cublas_gemm(0.5, a, b, 3.0, ref)
        launch(kernel, source, shape, 0.5, a, b, 3.0, c)
        err = relative_error(c, ref)
        assert err <= tolerance(shape.k), (
            f"{name}: relative error {err:.3e} with unaligned pointers"
        )
