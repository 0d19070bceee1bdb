"""Vendor answers and the default cuBLAS call run where a program runs them, on the GPU.

The default call (``cublas``) verified in every input type, layout and type of C and padded on a
ragged shape; then answers stored in a database and run by ``tuner.matmul``: the default call
(prepared once, then one library call), a cuBLASLt algorithm replayed and a padded one writing a
half C (the general path), and a ``tma_ws`` kernel (its tensor maps go by the general path too);
and ``tuner.torch`` writing a half C itself, with and without a bias, and running the default call
on torch tensors, all against torch.matmul.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import storage
from tuner.core.shape import OUT_DTYPES, SUPPORTED_DTYPES, SUPPORTED_LAYOUTS, Shape

pytestmark = pytest.mark.gpu

KINDS = [
    (dtype, layout, out)
    for dtype in SUPPORTED_DTYPES
    for layout in SUPPORTED_LAYOUTS
    for out in OUT_DTYPES[dtype]
]


def _default_call(pad: int = 0) -> tuple[Any, Any]:
    from tuner.gpu.vendor_launch import make_vendor_kernel, vendor_source
    from tuner.kernels.families import CUBLAS

    config = CUBLAS.config({})
    config = config.padded(pad) if pad else config
    return make_vendor_kernel(config), vendor_source(config)


@pytest.mark.parametrize(("dtype", "layout", "out"), KINDS)
def test_the_default_call_matches_the_reference(dtype: str, layout: str, out: str) -> None:
    from tuner.gpu.default_call import call_name
    from tuner.gpu.measure import Operands, verify

    shape = Shape(257, 136, 200, dtype, layout, out)
    kernel, source = _default_call()
    result = verify(kernel, source, shape, operands=Operands.make(shape, seed=3))
    assert result.ok, f"{shape.label()}: {result.reason}"
    identity = kernel.identity()
    assert identity["library"] == "cublas" and identity["call"] == call_name(shape)
    assert identity["version"] > 0


RAGGED = [("bfloat16", "NT", "bfloat16", 8), ("float16", "TN", "float32", 8), ("float32", "NN", "float32", 4)]  # fmt: skip  # noqa: E501


@pytest.mark.parametrize(("dtype", "layout", "out", "pad"), RAGGED)
def test_pad_then_cublas_on_a_ragged_shape(dtype: str, layout: str, out: str, pad: int) -> None:
    from tuner.gpu.measure import Operands, verify

    shape = Shape(1001, 999, 1003, dtype, layout, out)
    kernel, source = _default_call(pad)
    result = verify(kernel, source, shape, operands=Operands.make(shape, seed=5))
    assert result.ok, result.reason


# Only C's rows ragged (N = 999, K aligned): the padded launch runs on N rounded up (B gains zero
# rows where stored N x K) and copies C back. Every layout, both vendor launches, each type of C.
C_RAGGED = [
    (dtype, layout, out)
    for dtype in ("bfloat16", "float16")
    for layout in SUPPORTED_LAYOUTS
    for out in (dtype, "float32")
]


@pytest.mark.parametrize(("dtype", "layout", "out"), C_RAGGED)
def test_padded_vendor_launches_with_only_rows_of_c_ragged(
    dtype: str, layout: str, out: str
) -> None:
    from tuner.gpu.measure import Operands, verify
    from tuner.gpu.vendor_launch import VendorKernel, vendor_source
    from tuner.kernels.families import CUBLASLT

    # M and K multiples of 8 so that only the layouts whose B rows are N long pad more than C.
    shape = Shape(1000, 999, 1024, dtype, layout, out)
    operands = Operands.make(shape, seed=7)
    lt = CUBLASLT.config({"RANK": 0}).padded(8)
    for kernel, source in (_default_call(8), (VendorKernel(lt), vendor_source(lt))):
        result = verify(kernel, source, shape, operands=operands)
        assert result.ok, f"{source.config.name} on {shape.label()}: {result.reason}"


def _database(tmp_path: Path, shape: Shape, name: str, provenance: dict[str, Any]) -> str:
    """A database whose one best, for the live GPU and ``shape``, is config ``name``."""
    from tuner.gpu.device import live_device
    from tuner.kernels.families import parse_config

    live = live_device()
    url = f"sqlite:///{tmp_path / 'answers.db'}"
    engine = storage.make_engine(url)
    storage.upgrade(engine)
    config = parse_config(name)
    row = storage.MeasurementIn(
        family=config.family,
        config_name=name,
        params=config.as_dict(),
        ms=0.1,
        cublas_ms=0.1,
        provenance={"device": live.name, **provenance},
    )
    key = storage.ShapeIn(shape.m, shape.n, shape.k, shape.dtype, shape.layout, shape.out)
    with storage.make_session_factory(engine).begin() as session:
        storage.record_measurement(session, storage.DeviceIn(live.name, live.arch, live.sm_count),
                                   key, row)  # fmt: skip
    engine.dispose()
    return url


def _cupy_operands(shape: Shape, seed: int) -> tuple[Any, Any]:
    """A and B as tuner.matmul takes them: row-major, or the transposed view (layout T)."""
    import cupy as cp

    rng = cp.random.default_rng(seed)
    a_dims = (shape.k, shape.m) if shape.a_transposed else (shape.m, shape.k)
    b_dims = (shape.n, shape.k) if shape.b_transposed else (shape.k, shape.n)
    a = rng.standard_normal(a_dims, dtype=cp.float32).astype(shape.dtype)
    b = rng.standard_normal(b_dims, dtype=cp.float32).astype(shape.dtype)
    return (a.T if shape.a_transposed else a), (b.T if shape.b_transposed else b)


def _error_to_fp32(c: Any, a: Any, b: Any) -> float:
    import cupy as cp

    ref = a.astype(cp.float32) @ b.astype(cp.float32)
    return float(cp.linalg.norm(c.astype(cp.float32) - ref) / cp.linalg.norm(ref))


def _allowed(shape: Shape) -> float:
    from tuner.core.shape import UNIT_ROUNDOFF
    from tuner.gpu.measure import tolerance

    half_c = 2 * UNIT_ROUNDOFF[shape.out] if shape.out != "float32" else 0.0
    return tolerance(shape.k, shape.dtype) + half_c


def _prepared_launches(a: Any, b: Any) -> list[Any]:
    """The direct launches tuner.matmul kept for calls on these operands' shapes."""
    import tuner.gpu.matmul as gpu_matmul

    return [
        p.direct
        for key, p in gpu_matmul._prepared.items()
        if key is not None and key[1] == a.shape and key[5] == b.shape
    ]


@pytest.mark.parametrize("layout", ["NN", "NT"])
def test_tuner_matmul_runs_a_default_call_answer(tmp_path: Path, layout: str) -> None:
    import cupy as cp

    import tuner
    from tuner.gpu.default_call import DefaultCallLaunch

    shape = Shape(512, 384, 256, "float16", layout, "float16")
    db = _database(tmp_path, shape, "cublas", {"vendor": {"library": "cublas"}})
    a, b = _cupy_operands(shape, seed=11)
    first = tuner.matmul(a, b, db=db)
    again = tuner.matmul(a, b, db=db)  # the prepared call: one library call
    assert first.dtype == cp.float16 and again.dtype == cp.float16
    assert any(isinstance(d, DefaultCallLaunch) for d in _prepared_launches(a, b))
    for c in (first, again):
        assert _error_to_fp32(c, a, b) < _allowed(shape)


def test_tuner_matmul_replays_a_cublaslt_answer(tmp_path: Path) -> None:
    import tuner
    from tuner.gpu.measure import Operands, verify
    from tuner.gpu.vendor_launch import VendorKernel, vendor_source
    from tuner.kernels.families import CUBLASLT

    shape = Shape(640, 512, 384, "float16", "NT", "float16")
    config = CUBLASLT.config({"RANK": 1})
    measured = VendorKernel(config)
    assert verify(measured, vendor_source(config), shape, operands=Operands.make(shape, 2)).ok
    identity = measured.identity()
    db = _database(tmp_path, shape, config.name, {"vendor": identity})
    a, b = _cupy_operands(shape, seed=13)
    for _ in range(2):  # the first call and a repeated one (the general path: no direct launch)
        c = tuner.matmul(a, b, db=db)
        assert _error_to_fp32(c, a, b) < _allowed(shape)
    assert _prepared_launches(a, b) == [None]
    from tuner.gpu.matmul import vendor_kernel

    replayed, _ = vendor_kernel(config.name, tuple(identity["algo"]))
    assert replayed.identity()["replayed"] is True  # the stored words ran, not the rank's


def test_tuner_matmul_runs_a_padded_vendor_answer_writing_a_half_c(tmp_path: Path) -> None:
    import tuner

    shape = Shape(1001, 999, 1003, "float16", "NN", "float16")
    db = _database(tmp_path, shape, "cublaslt_rk0_pad8", {})
    a, b = _cupy_operands(shape, seed=17)
    for _ in range(2):
        c = tuner.matmul(a, b, db=db)
        assert c.dtype == a.dtype and _error_to_fp32(c, a, b) < _allowed(shape)


@pytest.mark.parametrize("layout", ["NN", "NT"])
def test_tuner_matmul_runs_a_tma_ws_answer(tmp_path: Path, layout: str) -> None:
    import tuner
    from tuner.client import config_name
    from tuner.gpu.device import live_device
    from tuner.kernels.families import get_family, parse_config, repinned
    from tuner.kernels.representative import REPRESENTATIVE
    from tuner.kernels.resources import arch_number

    if get_family("tma_ws").arch_problem(arch_number(live_device().arch)) is not None:
        pytest.skip("tma_ws runs on sm_90 only")
    shape = Shape(1024, 768, 512, "float16", layout, "float16")
    config = repinned(parse_config(REPRESENTATIVE["tma_ws"][0]), shape)
    assert config is not None
    db = _database(tmp_path, shape, config.name, {})
    a, b = _cupy_operands(shape, seed=19)
    for _ in range(2):
        c = tuner.matmul(a, b, db=db)
        assert _error_to_fp32(c, a, b) < _allowed(shape)
    assert config_name(shape, db=db) == config.name


# tuner.torch writing a half C


torch = pytest.importorskip("torch")
HALVES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


@pytest.fixture(scope="module")
def preloaded(tmp_path_factory: pytest.TempPathFactory) -> str:
    from api.preload import preload

    url = f"sqlite:///{tmp_path_factory.mktemp('half-c') / 'gpu.db'}"
    engine = storage.make_engine(url)
    storage.upgrade(engine)
    preload(storage.make_session_factory(engine))
    engine.dispose()
    return url


def _torch_error(out: Any, ref: Any) -> float:
    return float((out.double() - ref.double()).norm() / ref.double().norm())


def _kernel_c_dtypes() -> set[Any]:
    import tuner.torch.ops as ops

    return {p.c_dtype for p in ops._prepared.values()}


@pytest.mark.parametrize("dtype", list(HALVES))
@pytest.mark.parametrize("size", [(1024, 1024, 1024), (4096, 1024, 768)])
def test_the_torch_op_writes_a_half_c_itself(preloaded: str, dtype: str, size: tuple) -> None:
    import tuner.torch
    import tuner.torch.ops as ops

    m, n, k = size
    half = HALVES[dtype]
    gen = torch.Generator(device="cuda").manual_seed(m + n)
    x = torch.randn((m, k), device="cuda", generator=gen).to(half)
    w = torch.randn((n, k), device="cuda", generator=gen).to(half)
    ops._prepared.clear()
    y = tuner.torch.matmul(x, w.T, db=preloaded)
    assert y.dtype is half and _kernel_c_dtypes() == {half}  # no float32 C, no cast after
    allowed = _allowed(Shape(m, n, k, dtype, "NT", dtype))
    assert _torch_error(y, torch.matmul(x, w.T)) < 2 * allowed
    # With a bias: float32 C, the bias added to the sums and rounded once by the cast.
    bias = torch.randn((n,), device="cuda", generator=gen).to(half)
    ops._prepared.clear()
    z = tuner.torch.matmul(x, w.T, bias=bias, db=preloaded)
    assert z.dtype is half and _kernel_c_dtypes() == {torch.float32}
    ref = torch.addmm(bias.float(), x.float(), w.float().T)
    assert _torch_error(z, ref) < 2 * allowed
    # out= of the half type is written by the kernel itself.
    out = torch.empty((m, n), device="cuda", dtype=half)
    assert tuner.torch.matmul(x, w.T, out=out, db=preloaded) is out
    assert _torch_error(out, y) < allowed


@pytest.mark.parametrize("dtype", list(HALVES))
def test_the_torch_op_runs_a_default_call_answer(tmp_path: Path, dtype: str) -> None:
    import tuner.torch
    from tuner.gpu.default_call import DefaultCallLaunch
    from tuner.torch import ops

    half = HALVES[dtype]
    shape = Shape(768, 512, 320, dtype, "NT", dtype)
    db = _database(tmp_path, shape, "cublas", {"vendor": {"library": "cublas"}})
    gen = torch.Generator(device="cuda").manual_seed(23)
    x = torch.randn((768, 320), device="cuda", generator=gen).to(half)
    w = torch.randn((512, 320), device="cuda", generator=gen).to(half)
    ops._prepared.clear()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # on torch's current stream, a side one
        y = tuner.torch.matmul(x, w.T, db=db)
        again = tuner.torch.matmul(x, w.T, db=db)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    kept = [p.gemm.direct for p in ops._prepared.values()]
    assert kept and all(isinstance(d, DefaultCallLaunch) for d in kept)
    ref = torch.matmul(x, w.T)
    assert y.dtype is half and torch.equal(y, again)
    assert _torch_error(y, ref) < 2 * _allowed(shape)
