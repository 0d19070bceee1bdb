"""The default cuBLAS call's prepared launch without a GPU: which answers get one, and what it
hands the library (the library call itself is recorded instead of made)."""

from __future__ import annotations

from typing import Any

import pytest

import tuner.gpu.default_call as default_call
from tuner.core.shape import Shape
from tuner.gpu.call_plan import direct_launch
from tuner.gpu.default_call import GEMM_EX, SGEMM, DefaultCallLaunch, call_name

SHAPE = Shape(300, 200, 100, "bfloat16", "NT", "bfloat16")


def test_only_the_unpadded_default_call_is_prepared() -> None:
    prepared = direct_launch("cublas", SHAPE, (104, 104, 200), (100, 100, 200))
    assert isinstance(prepared, DefaultCallLaunch)
    # cuBLAS takes leading dimensions: wider rows than packed ones are read in place.
    assert prepared.pitches == (104, 104, 200) and prepared.shape == SHAPE
    assert default_call.default_call_launch("cublas_pad8", SHAPE, (100, 100, 200)) is None
    assert default_call.default_call_launch("cublaslt_rk0", SHAPE, (100, 100, 200)) is None


def test_the_function_is_sgemm_for_float32_nn_only() -> None:
    assert call_name(Shape(64, 64, 64)) == SGEMM
    assert call_name(Shape(64, 64, 64, "float32", "NT")) == GEMM_EX
    assert call_name(Shape(64, 64, 64, "float16")) == GEMM_EX


class _Array:
    def __init__(self, ptr: int) -> None:
        self.data = type("Pointer", (), {"ptr": ptr})()


def test_a_launch_hands_pointers_pitches_and_scalars_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(default_call, "default_gemm", lambda *args: calls.append(args))
    prepared = DefaultCallLaunch("cublas", SHAPE, (104, 100, 200))
    prepared.launch(4096, _Array(8192), 0.5, 2.0, 12288, None)  # ints: torch's data_ptr()
    assert calls == [(SHAPE, (104, 100, 200), 0.5, 4096, 8192, 2.0, 12288)]
