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

    from tuner.gpu.measure import device_copy

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
