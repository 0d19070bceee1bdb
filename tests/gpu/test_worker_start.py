"""What a measuring process runs before its first candidate, built without CuPy's compiled
array operations (each a second or more on an empty CuPy cache): the NaN-filled C, the device
copy, the plain kernels' cubins and the probes' rates."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("kind", ["float32", "float16", "bfloat16"])
def test_the_nan_filled_c_is_nan_everywhere(kind: str) -> None:
    from tuner.gpu.half_arrays import nan_filled, to_float32

    c = nan_filled(33, 17, kind)
    assert c.shape == (33, 17)
    assert np.isnan(to_float32(c, kind).get()).all()


def test_the_device_copy_is_a_copy() -> None:
    import cupy as cp

    from tuner.gpu.half_arrays import device_copy

    a = cp.arange(1000, dtype=cp.float32).reshape(10, 100)
    b = device_copy(a)
    a[0, 0] = -1.0
    assert b.shape == a.shape and b.dtype == a.dtype
    assert float(b[0, 0]) == 0.0 and bool((b[1:] == a[1:]).all())


def test_the_probes_measure_positive_finite_rates() -> None:
    from tuner.gpu.probes import probe_rates

    rates = probe_rates()
    for value in (rates.ffma_tflops, rates.dram_tb_s, rates.launch_us):
        assert math.isfinite(value) and value > 0
    assert math.isfinite(rates.fp64_tensor_tflops) and rates.fp64_tensor_tflops >= 0


def test_a_plain_cubin_is_compiled_once_and_then_read_from_the_cache(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tuner.gpu.device import current_arch
    from tuner.gpu.nvrtc import plain_cubin

    monkeypatch.setenv("GEMMTUNE_CACHE_DIR", str(tmp_path))
    code = 'extern "C" __global__ void plain_once(float* x) { x[threadIdx.x] += 1.0f; }\n'
    first = plain_cubin(code, current_arch())
    written = first.stat().st_mtime_ns
    again = plain_cubin(code, current_arch())
    assert again == first and again.stat().st_mtime_ns == written
    assert first.read_bytes()[:4] == b"\x7fELF"  # a cubin, not PTX


def _special_floats() -> np.ndarray:
    """Random float32 values of every magnitude, and the cases rounding must get right: ties to
    even at both half types' precisions, subnormals, the largest finite values, infinities,
    NaNs with large and small payloads."""
    rng = np.random.default_rng(5)
    wide = (rng.standard_normal(5000) * np.exp2(rng.integers(-30, 30, 5000))).astype(np.float32)
    ties = np.float32(1.0) + np.array([2.0**-8, 3 * 2.0**-8, 2.0**-11, 3 * 2.0**-11], np.float32)
    specials = np.array(
        [0.0, -0.0, 1e-40, -1e-40, 6e-8, 65504.0, 65520.0, 3.3e38, np.inf, -np.inf], np.float32
    )
    nans = np.array([0x7FC00000, 0x7F800001, 0xFF800001], np.uint32).view(np.float32)
    return np.concatenate([wide, ties, -ties, specials, nans])


def _bf16_nearest_even(values: np.ndarray) -> np.ndarray:
    bits = values.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(values)
    rounded[nan] = ((values[nan].view(np.uint32) >> 16) | 0x40).astype(np.uint16)
    return rounded


def test_the_half_conversions_round_to_nearest_even_and_widen_exactly() -> None:
    import cupy as cp

    from tuner.gpu.half_arrays import from_float32, to_float32

    values = _special_floats()
    on_gpu = cp.asarray(values)
    f16 = from_float32(on_gpu, "float16").get()
    assert f16.dtype == np.float16
    with np.errstate(over="ignore", invalid="ignore"):  # past FP16's range: infinity, as wanted
        expected16 = values.astype(np.float16)
    np.testing.assert_array_equal(
        f16.view(np.uint16)[~np.isnan(values)], expected16.view(np.uint16)[~np.isnan(values)]
    )
    assert np.isnan(f16[np.isnan(values)]).all()
    bf16 = from_float32(on_gpu, "bfloat16").get()
    np.testing.assert_array_equal(bf16, _bf16_nearest_even(values))
    assert np.isnan((bf16.astype(np.uint32) << 16).view(np.float32)[np.isnan(values)]).all()
    wide16 = to_float32(cp.asarray(f16), "float16").get()
    np.testing.assert_array_equal(wide16, f16.astype(np.float32))
    wide_bf = to_float32(cp.asarray(bf16), "bfloat16").get()
    np.testing.assert_array_equal(wide_bf.view(np.uint32), bf16.astype(np.uint32) << 16)
    copy = to_float32(on_gpu, "float32")
    assert copy.data.ptr != on_gpu.data.ptr
    np.testing.assert_array_equal(copy.get().view(np.uint32), values.view(np.uint32))


def test_views_are_converted_as_before() -> None:
    import cupy as cp

    from tuner.gpu.half_arrays import from_float32, to_float32

    values = cp.asarray(_special_floats()[:4096].reshape(64, 64))
    contiguous = from_float32(cp.ascontiguousarray(values.T), "float16")
    np.testing.assert_array_equal(from_float32(values.T, "float16").get(), contiguous.get())
    wide = to_float32(contiguous.T, "float16")
    np.testing.assert_array_equal(wide.get(), contiguous.get().T.astype(np.float32))
