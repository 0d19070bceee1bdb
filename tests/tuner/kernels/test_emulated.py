"""FP32 emulated on BF16 (``tuner.kernels.families.emulated``, ``tuner.gpu.split_launch``) without a
GPU: the split's buffers, modelled element by element as templates/split_bf16x3.cu writes them, give
the three products when the half kernel reads them as the split shape in every layout; the families'
spaces, costs and defaults; and the floor that keeps them out of strict answers."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tuner.core.test_accuracy import round_float32
from tuner.answers.answer import DeviceInfo
from tuner.answers.best import Tuned, Tuning
from tuner.answers.default_rule import default_config
from tuner.core.accuracy import BF16X3
from tuner.core.errors import InputError
from tuner.core.shape import SUPPORTED_LAYOUTS, Shape
from tuner.kernels.compile import CompileError, NvccCompiler, compile_many
from tuner.kernels.families import (
    FAMILIES,
    HMMA,
    TMA_WS,
    WGMMA_BF16X3,
    accuracy_of,
    get_family,
    parse_config,
)
from tuner.kernels.families.emulated import PARTS, split_depth, split_shape
from tuner.kernels.operand_split import SplitOperand, split_operands
from tuner.kernels.render import render
from tuner.kernels.resources import table_device
from tuner.kernels.space import Space
from tuner.model.cost_model import estimate
from tuner.run.request import check_families
from tuner.run.runner import (
    DEFAULT_EMULATED_FAMILIES,
    VENDOR_FAMILIES,
    check_families_compute,
    families_for,
)

H100 = table_device("sm_90")
EMULATED = [name for name, family in FAMILIES.items() if family.accuracy == BF16X3.name]


def _write_split(src: np.ndarray, part: SplitOperand) -> np.ndarray:
    """The buffer the split kernel leaves: zeros, then for each element its hi in two parts and
    its lo in ``part.lo_part``, ``part.part_stride`` elements apart (flat, row pitch
    ``part.buffer[1]``)."""
    flat = np.zeros(part.buffer[0] * part.buffer[1], dtype=np.float32)
    hi = round_float32(src, 8)
    lo = round_float32(src - hi, 8)
    rows, cols = np.indices(src.shape)
    base = rows * part.buffer[1] + cols
    for p in range(PARTS):
        flat[base + p * part.part_stride] = lo if p == part.lo_part else hi
    return flat.reshape(part.buffer)


def _read_as_stored(buffer: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """What a kernel given (rows, cols) and the buffer's pitch reads."""
    return buffer[:rows, :cols].astype(np.float64)


@pytest.mark.parametrize("layout", SUPPORTED_LAYOUTS)
@pytest.mark.parametrize("mnk", [(5, 7, 1), (9, 3, 13), (16, 24, 8), (3, 17, 30)])
def test_the_split_shape_multiplies_the_three_products(
    layout: str, mnk: tuple[int, int, int]
) -> None:
    shape = Shape(*mnk, "float32", layout)
    run = split_shape(shape)
    assert (run.m, run.n, run.k, run.dtype, run.layout) == (
        shape.m, shape.n, PARTS * split_depth(shape.k), "bfloat16", layout
    )  # fmt: skip
    rng = np.random.default_rng(sum(mnk))
    a = rng.standard_normal((shape.m, shape.k)).astype(np.float32)
    b = rng.standard_normal((shape.k, shape.n)).astype(np.float32)
    a_stored = a.T.copy() if shape.a_transposed else a
    b_stored = b.T.copy() if shape.b_transposed else b
    a_part, b_part = split_operands(shape)
    a_buf, b_buf = _write_split(a_stored, a_part), _write_split(b_stored, b_part)
    for buf in (a_buf, b_buf):  # rows on 16 bytes: whole vectors of 8 BF16 values
        assert buf.shape[1] % 8 == 0
    # The kernel reads A' as M x 3Kp (or 3Kp x M) and B' as 3Kp x N (or N x 3Kp).
    a_run = _read_as_stored(a_buf, *((run.k, run.m) if run.a_transposed else (run.m, run.k)))
    b_run = _read_as_stored(b_buf, *((run.n, run.k) if run.b_transposed else (run.k, run.n)))
    product = (a_run.T if run.a_transposed else a_run) @ (b_run.T if run.b_transposed else b_run)
    hi_a, hi_b = round_float32(a, 8), round_float32(b, 8)
    lo_a, lo_b = round_float32(a - hi_a, 8), round_float32(b - hi_b, 8)
    f = np.float64
    expected = (
        lo_a.astype(f) @ hi_b.astype(f)
        + hi_a.astype(f) @ lo_b.astype(f)
        + hi_a.astype(f) @ hi_b.astype(f)
    )
    np.testing.assert_allclose(product, expected, rtol=1e-12, atol=1e-12)


def test_the_emulated_families_are_the_half_ones_on_float32() -> None:
    assert sorted(EMULATED) == sorted(DEFAULT_EMULATED_FAMILIES)
    for name in EMULATED:
        family, inner = get_family(name), get_family(name.removesuffix("_bf16x3"))
        assert family.template == inner.template and family.params == inner.params
        assert family.dtypes == ("float32",) and family.layouts == SUPPORTED_LAYOUTS
        assert accuracy_of(name) == "bf16x3" and accuracy_of(inner.name) == "exact"
        pinned = family.pinned(Shape(64, 64, 64, "float32", "TN"))
        # BF16 parts in, the caller's float32 C out.
        assert pinned == HMMA.pinned(Shape(64, 64, 64, "bfloat16", "TN", "float32"))
        assert pinned["OUT"] == 0 and family.out_dtypes == ("float32",)
    assert accuracy_of("no_such_family") == "exact"


@pytest.mark.parametrize("layout", SUPPORTED_LAYOUTS)
def test_spaces_exist_for_float32_only(layout: str) -> None:
    for dtype in ("float32", "bfloat16"):
        shape = Shape(2048, 2048, 1024, dtype, layout)
        candidates = Space("wgmma_bf16x3", shape, H100).candidates()
        assert bool(candidates) == (dtype == "float32")
        assert all(c["DTYPE"] == 1 for c in candidates)  # the split's BF16


def test_the_cost_counts_the_kernel_on_the_split_shape_and_the_split_pass() -> None:
    shape = Shape(4096, 4096, 4096)
    config = parse_config("wgmma_bf16x3_bm128_bn256_bk64_wgm2_s4_sw8_dt1_ly0")
    inner = parse_config("wgmma_bm128_bn256_bk64_wgm2_s4_sw8_dt1_ly0")
    emulated = estimate(config, shape, H100)
    kernel = estimate(inner, split_shape(shape), H100)
    assert emulated.ms > kernel.ms and emulated.cycles > kernel.cycles
    # The split reads 8 bytes and writes 12 per element of A and B: well under the kernel.
    assert emulated.ms - kernel.ms < kernel.ms / 4


def test_the_floor_decides_the_default_families() -> None:
    nn = Shape(1024, 1024, 1024)
    assert not set(families_for(nn)) & set(EMULATED)
    assert set(EMULATED) <= set(families_for(nn, "bf16x3"))
    assert families_for(Shape(64, 64, 64, "float32", "NT")) == ()
    nt = set(families_for(Shape(64, 64, 64, "float32", "NT"), "bf16x3"))
    assert nt == {*EMULATED, *VENDOR_FAMILIES}  # the vendor rides beside the emulated kernels
    assert not set(families_for(Shape(64, 64, 64, "bfloat16", "NT"), "bf16x3")) & set(EMULATED)


def test_an_emulated_family_named_below_the_floor_is_refused() -> None:
    with pytest.raises(InputError, match=r"accuracy class bf16x3.*ask for accuracy bf16x3"):
        check_families(["warptile", "wgmma_bf16x3"])
    assert check_families(["wgmma_bf16x3"], "bf16x3") == ("wgmma_bf16x3",)
    with pytest.raises(InputError, match=r"wgmma_bf16x3 \(accuracy bf16x3\)"):
        check_families_compute(Shape(64, 64, 64, "float32", "TT"), ())


H100_INFO = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132)


def _tuned(name: str, ms: float, layout: str = "NN") -> Tuned:
    config = parse_config(name)
    return Tuned(
        best_id=int(ms * 100),
        device=H100_INFO,
        m=4096, n=4096, k=4096, dtype="float32", layout=layout,
        family=config.family, config_name=name, params=config.as_dict(), ms=ms,
        tflops=None, cublas_tflops=None, ratio=None, provenance={},
        accuracy=accuracy_of(config.family),
    )  # fmt: skip


def test_a_strict_answer_never_comes_from_an_emulated_best() -> None:
    strict = "dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1"
    fast = "wgmma_bf16x3_bm128_bn256_bk64_wgm2_s4_sw8_dt1_ly0"
    tuning = Tuning([_tuned(strict, 2.4), _tuned(fast, 0.8)], [H100_INFO], {})
    spec = None
    exact = tuning.answer(4096, 4096, 4096, device=spec)
    assert (exact.name, exact.accuracy, exact.source) == (strict, "exact", "exact")
    loose = tuning.answer(4096, 4096, 4096, device=spec, accuracy="bf16x3")
    assert (loose.name, loose.accuracy) == (fast, "bf16x3")
    # The nearest shape of an accepted class only.
    near = tuning.answer(4000, 4096, 4096, accuracy="exact")
    assert (near.name, near.source) == (strict, "nearest")
    with pytest.raises(InputError, match="`accuracy`"):
        tuning.answer(4096, 4096, 4096, accuracy="tf32")


def test_the_default_rule_emulates_only_where_asked_and_useful() -> None:
    assert get_family(default_config(8192, 8192).family).accuracy == "exact"
    large = default_config(8192, 8192, "float32", "NN", "bf16x3")
    assert large.family == "hmma_bf16x3" and large["DTYPE"] == 1
    assert default_config(64, 64, "float32", "NN", "bf16x3").family != "hmma_bf16x3"
    small_nt = default_config(64, 64, "float32", "NT", "bf16x3")
    assert small_nt.family == "hmma_bf16x3" and small_nt["LAYOUT"] == 1
    assert WGMMA_BF16X3.name in FAMILIES


def test_verifying_a_config_pinned_to_another_layout_is_refused_before_any_launch() -> None:
    from tuner.gpu.measure import verify
    from tuner.kernels.render import render

    source = render(parse_config("hmma_splitk_bf16x3_bm64_bn64_bk32_wpm2_wpn2_s3_sw1_sk4_dt1_ly1"))
    with pytest.raises(ValueError, match="272x275x167 needs LAYOUT=0"):
        verify(None, source, Shape(272, 275, 167))


TMA_WS_SPLIT = "tma_ws_bf16x3_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep1_cm1_cn1_dt1_ly0"


def test_tma_ws_carries_the_split_on_sm_90_in_every_layout_whatever_the_rows() -> None:
    # A ragged shape: the caller's rows are off 16 bytes, the split's buffers' are not, so the
    # check that sends plain tma_ws to its padded config must not drop the emulated one.
    half = Shape(1001, 999, 1003, "bfloat16", "NN")
    assert TMA_WS.waste(TMA_WS.pinned(half), half)
    for layout in SUPPORTED_LAYOUTS:
        shape = Shape(1001, 999, 1003, "float32", layout)
        candidates = Space("tma_ws_bf16x3", shape, H100).candidates()
        assert candidates, layout
        pinned = {(c["DTYPE"], c["LAYOUT"], c["OUT"]) for c in candidates}
        assert pinned == {(1, SUPPORTED_LAYOUTS.index(layout), 0)}  # BF16 parts, float32 C
    assert not Space("tma_ws_bf16x3", Shape(4096, 4096, 4096), table_device("sm_80")).candidates()
    assert not Space("tma_ws_bf16x3", Shape(64, 64, 64, "bfloat16"), H100).candidates()


def test_tma_ws_split_renders_tma_ws_kernel_under_its_own_name() -> None:
    split = render(parse_config(TMA_WS_SPLIT))
    plain = render(parse_config(TMA_WS_SPLIT.replace("_bf16x3", "")))
    assert split.tensor_maps and split.persistent
    assert f"{TMA_WS_SPLIT}(int M" in split.code and "float* __restrict__ C" in split.code
    # Nothing but the names differs: the kernel is tma_ws's, reading the split's BF16 parts.
    assert split.code.replace(TMA_WS_SPLIT, "NAME") == plain.code.replace(plain.config.name, "NAME")


def test_tma_ws_split_compiles_for_sm_90a_without_spills() -> None:
    source = render(parse_config(TMA_WS_SPLIT))
    compiler = NvccCompiler("sm_90")
    assert compiler.target(source) == "sm_90a"
    (result,) = compile_many(compiler, [source])
    assert not isinstance(result, CompileError), getattr(result, "log", "")
    assert not result.usage.spills
    assert 0 < result.usage.registers <= 65536 // result.source.threads
