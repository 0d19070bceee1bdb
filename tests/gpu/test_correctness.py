"""Every family against cuBLAS (strict FP32) on edge and large shapes, on a real GPU."""

from __future__ import annotations

import zlib
from typing import Any

import pytest

from tuner.core.accuracy import DEFAULT_ACCURACY
from tuner.core.shape import Shape
from tuner.kernels.families import FAMILIES
from tuner.kernels.representative import REPRESENTATIVE

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


# The FP32 families; hmma (half inputs, its dtype and layout pinned in each config) has its own
# tests in test_hmma.py.
# Strict FP32 only: the emulated families (class bf16x3, whose representatives pin other
# layouts too) have their residues, offsets and pitches in test_emulated.py.
FP32_FAMILIES = [
    f
    for f in REPRESENTATIVE
    if "float32" in FAMILIES[f].dtypes and FAMILIES[f].accuracy == DEFAULT_ACCURACY
]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("family", FP32_FAMILIES)
def test_family_matches_cublas(
    family: str, shape: Shape, kernels: dict[str, tuple[Any, Any]], record_property: Any
) -> None:
    from tuner.gpu.measure import verify

    for name in REPRESENTATIVE[family]:
        kernel, source = kernels[name]
        # A seed of the config and shape alone (hash() of a str changes with each process), so
        # a failure reproduces: one element of 1x1x1 can cancel (alpha*a*b close to -beta*c),
        # and its relative error then depends on the draw.
        seed = zlib.crc32(f"{name} {shape}".encode()) & 0xFFFF
        result = verify(kernel, source, shape, seed=seed)
        record_property(f"rel_error[{name}]", result.rel_error)
        print(
            f"RESULT {family} {shape} {name} rel_error={result.rel_error:.3e} "
            f"tol={result.tolerance:.1e}"
        )
        assert result.ok, (
            f"{name} on {shape}: relative error {result.rel_error:.3e} > {result.tolerance:.1e}"
        )


# The FP32 families whose blocks meet in C through the split-K counters (docs/kernels.md);
# hmma_splitk's splits and counters are tested on half inputs in test_hmma.py.
SPLIT_FAMILIES = [name for name in FP32_FAMILIES if FAMILIES[name].module_counters]


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

    from tuner.gpu.measure import verify

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
