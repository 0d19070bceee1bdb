"""tuner.gpu.call_plan without a GPU: which configs launch directly, with which arguments, and
where the split-K families take a module per launch site (the compiled kernels are stand-ins
that record their launches)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tuner.gpu.call_plan as call_plan
from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.kernels.families import parse_config
from tuner.kernels.render import render

WARPTILE = "warptile_bm64_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t128"  # packed rows
HMMA = "hmma_bm64_bn64_bk32_wpm2_wpn2_s3_sw1_dt0_ly0"  # leading dimensions, FP16 NN
STREAMK = "streamk_bm128_bn128_bk16_wm32_wn64_wni2_tm8_tn4_t256_smb2_stg0"  # counters, persistent


class Recorder:
    """A CUDA function that records its launches."""

    def __init__(self, site: Any) -> None:
        self.site = site
        self.launches: list[tuple[Any, ...]] = []

    def __call__(self, grid: Any, block: Any, args: Any, shared_mem: int, stream: Any) -> None:
        self.launches.append((grid, block, args, shared_mem, stream))


class FakeKernel:
    def __init__(self, site: Any) -> None:
        self.kernel = Recorder(site)


@pytest.fixture
def loaded(monkeypatch: pytest.MonkeyPatch) -> dict[tuple[str, Any], FakeKernel]:
    """``compiled`` replaced by real sources and recording kernels, one per (name, site)."""
    kernels: dict[tuple[str, Any], FakeKernel] = {}

    def compiled(name: str, site: Any = 0) -> tuple[FakeKernel, Any]:
        kernel = kernels.setdefault((name, site), FakeKernel(site))
        return kernel, render(parse_config(name))

    monkeypatch.setattr(call_plan, "compiled", compiled)
    monkeypatch.setattr(call_plan, "sm_count", lambda: 132)
    monkeypatch.setattr(call_plan, "is_capturing", lambda ptr: False)
    return kernels


def test_a_packed_rows_kernel_gets_the_shape_and_its_arrays(loaded: dict[Any, Any]) -> None:
    shape = Shape(100, 70, 50)
    direct = call_plan.direct_launch(WARPTILE, shape, (50, 70, 70), (50, 70, 70))
    assert direct is not None and direct.pitches is None
    direct.launch("A", "B", 1.5, 0.0, "C", None)
    ((grid, block, args, shared_mem, stream),) = loaded[(WARPTILE, 0)].kernel.launches
    assert (grid, block, stream) == ((2, 2, 1), (128, 1, 1), None)
    assert [type(x) for x in args[:4]] == [np.int32, np.int32, np.int32, np.float32]
    assert tuple(args) == (100, 70, 50, 1.5, "A", "B", 0.0, "C")
    geometry = render(parse_config(WARPTILE)).launch(shape)
    assert shared_mem == geometry.dynamic_smem_bytes


def test_wider_rows_launch_directly_only_where_the_kernel_takes_pitches(
    loaded: dict[Any, Any],
) -> None:
    shape = Shape(100, 70, 50, "float16", "NN")
    assert call_plan.direct_launch(WARPTILE, Shape(100, 70, 50), (64, 70, 70), (50, 70, 70)) is None
    direct = call_plan.direct_launch(HMMA, shape, (64, 72, 70), (50, 70, 70))
    assert direct is not None
    direct.launch(1, 2, 1.0, 0.0, 3, None)
    args = loaded[(HMMA, 0)].kernel.launches[0][2]
    assert tuple(args) == (100, 70, 50, 1.0, 1, 64, 2, 72, 0.0, 3, 70)


def test_padded_configs_keep_the_general_path(loaded: dict[Any, Any]) -> None:
    padded = f"{WARPTILE}_pad4"
    assert parse_config(padded).pad
    assert not call_plan.kernel_alone(padded)
    assert call_plan.direct_launch(padded, Shape(99, 70, 50), (50, 70, 70), (50, 70, 70)) is None


def test_the_vendor_library_and_tensor_map_kernels_keep_the_general_path() -> None:
    """cuBLASLt runs through the library and tma_ws's tensor maps through the driver's launch:
    neither is a CuPy launch of pointers, so neither may be launched directly (and neither is
    compiled to find that out)."""
    from tuner.kernels.representative import REPRESENTATIVE

    for name in ("cublaslt_rk0", REPRESENTATIVE["tma_ws"][0]):
        assert not call_plan.kernel_alone(name)
        shape = Shape(128, 128, 128, "bfloat16", "NN", "float32")
        assert call_plan.direct_launch(name, shape, (128, 128, 128), (128, 128, 128)) is None


def test_counter_families_take_a_module_per_stream_and_thread(loaded: dict[Any, Any]) -> None:
    class Stream:
        def __init__(self, ptr: int) -> None:
            self.ptr = ptr

    direct = call_plan.direct_launch(STREAMK, Shape(1000, 1000, 1000), (1000,) * 3, (1000,) * 3)
    assert direct is not None
    for ptr in (7, 8, 7):
        direct.launch("A", "B", 1.0, 0.0, "C", Stream(ptr))
    sites = sorted(site for name, site in loaded if name == STREAMK and site != 0)
    assert [ptr for ptr, _thread in sites] == [7, 8]
    assert direct.grid == (264, 1, 1)  # SMBLOCKS 2 per SM of 132


def test_a_new_launch_site_is_refused_while_its_stream_is_captured(
    loaded: dict[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Stream:
        ptr = 9

    direct = call_plan.direct_launch(STREAMK, Shape(1000, 1000, 1000), (1000,) * 3, (1000,) * 3)
    assert direct is not None
    monkeypatch.setattr(call_plan, "is_capturing", lambda ptr: ptr == 9)
    with pytest.raises(InputError, match="on the capturing stream before capturing"):
        direct.launch("A", "B", 1.0, 0.0, "C", Stream())
