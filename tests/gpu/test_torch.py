"""tuner.torch on the GPU against torch.matmul: every dtype, layout and output dtype, bias,
batches, torch streams, CUDA graphs, autograd and torch.compile."""

from __future__ import annotations

from typing import Any

import pytest

import storage
from api.preload import preload
from tuner.core.errors import InputError
from tuner.core.shape import UNIT_ROUNDOFF, Shape

torch = pytest.importorskip("torch")

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('torch') / 'gpu.db'}"
    engine = storage.make_engine(url)
    storage.upgrade(engine)
    preload(storage.make_session_factory(engine))
    engine.dispose()
    return url


@pytest.fixture(autouse=True)
def strict_fp32() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False


def relative_error(out: Any, ref: Any) -> float:
    diff = (out.double() - ref.double()).norm()
    return float(diff / ref.double().norm())


def allowed(k: int, dtype: str, out_dtype: str) -> float:
    """FP32 sums of the same rounded inputs, and C rounded to a half output dtype."""
    from tuner.gpu.measure import tolerance

    return tolerance(k, dtype) + (2 * UNIT_ROUNDOFF[out_dtype] if out_dtype != "float32" else 0)


def operand(rows: int, cols: int, dtype: Any, transposed: bool, seed: int) -> Any:
    """A (rows, cols) operand: row-major, or the transposed view of a (cols, rows) matrix."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    shape = (cols, rows) if transposed else (rows, cols)
    x = torch.randn(shape, device="cuda", generator=gen).to(dtype)
    return x.T if transposed else x


@pytest.mark.gpu
@pytest.mark.parametrize("out_dtype", [None, "float32"])
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_every_dtype_layout_and_out_dtype_matches_torch(
    db: str, dtype: str, layout: str, out_dtype: str | None
) -> None:
    import tuner.torch

    m, n, k = 257, 129, 1031
    a = operand(m, k, DTYPES[dtype], layout[0] == "T", 1)
    b = operand(k, n, DTYPES[dtype], layout[1] == "T", 2)
    out = tuner.torch.matmul(
        a, b, out_dtype=None if out_dtype is None else DTYPES[out_dtype], db=db
    )
    wanted = out_dtype or dtype
    assert out.dtype == DTYPES[wanted] and out.shape == (m, n) and out.is_contiguous()
    same_dtype = torch.matmul(a, b)  # torch in the inputs' dtype (FP32 sums, TF32 off)
    fp32 = torch.matmul(a.float(), b.float())  # the same rounded inputs, in float32
    assert relative_error(out, fp32) <= allowed(k, dtype, wanted)
    assert relative_error(out, same_dtype) <= allowed(k, dtype, wanted) + allowed(k, dtype, dtype)


@pytest.mark.gpu
def test_transposed_half_views_are_read_in_place(db: str) -> None:
    """A w.T operand runs as layout T: the config asked for is the T layout's."""
    import tuner.client as client
    import tuner.torch

    w = torch.randn(96, 200, device="cuda", dtype=torch.float16)
    x = torch.randn(33, 200, device="cuda", dtype=torch.float16)
    tuner.torch.matmul(x, w.T, db=db)
    # tuner.torch asks for C in the result's type, the kernel writing it (tuner.torch.ops).
    assert Shape(33, 96, 200, "float16", "NT", "float16") in {key[0] for key in client._configs}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_bias_and_out(db: str, dtype: str) -> None:
    import tuner.torch

    m, n, k = 100, 72, 300
    a, b = operand(m, k, DTYPES[dtype], False, 3), operand(k, n, DTYPES[dtype], True, 4)
    bias = torch.randn(n, device="cuda", dtype=DTYPES[dtype])
    ref = torch.matmul(a.float(), b.float()) + bias.float()
    got = tuner.torch.matmul(a, b, bias=bias, db=db)
    assert relative_error(got, ref) <= allowed(k, dtype, dtype)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=DTYPES[dtype])
    assert tuner.torch.matmul(a, b, bias=bias, out=out, db=db) is out
    assert relative_error(out, ref) <= allowed(k, dtype, dtype)


@pytest.mark.gpu
def test_batched_operands(db: str) -> None:
    import tuner.torch

    batch, m, n, k = 3, 40, 56, 130
    a3 = torch.randn(batch, m, k, device="cuda", dtype=torch.bfloat16)
    b3 = torch.randn(batch, k, n, device="cuda", dtype=torch.bfloat16)
    b2 = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    a2 = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    pairs = [(a3, b2), (a3, b3), (a2, b3), (a3.transpose(1, 2).contiguous().transpose(1, 2), b2)]
    for a, b in pairs:  # fold, loop, loop with a shared A, loop over transposed A views
        got = tuner.torch.matmul(a, b, out_dtype=torch.float32, db=db)
        ref = torch.matmul(a.float(), b.float())
        assert got.shape == ref.shape
        assert relative_error(got, ref) <= allowed(k, "bfloat16", "float32")


@pytest.mark.gpu
def test_linear_module_and_replace_linears(db: str) -> None:
    import tuner.torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 96), torch.nn.ReLU(), torch.nn.Sequential(torch.nn.Linear(96, 40))
    ).to("cuda", torch.float16)
    x = torch.randn(2, 7, 64, device="cuda", dtype=torch.float16)
    with torch.no_grad():
        ref = model(x).float()
        weight = model[0].weight
        tuner.torch.replace_linears(model, db=db)
        assert isinstance(model[0], tuner.torch.Linear) and isinstance(
            model[2][0], tuner.torch.Linear
        )
        assert model[0].weight is weight  # the same parameter, not a copy
        got = model(x)
    assert got.dtype == torch.float16 and got.shape == (2, 7, 40)
    assert relative_error(got, ref) <= 3 * allowed(96, "float16", "float16")


@pytest.mark.gpu
def test_runs_on_torchs_current_stream(db: str) -> None:
    """A's new values are written on a side stream behind a long sleep: a product read on
    any other stream would see the old values."""
    import tuner.torch

    m = n = k = 512
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(k, n, device="cuda")
    new_a = torch.randn(m, k, device="cuda")
    tuner.torch.matmul(a, b, db=db)  # prepared on the default stream
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # tens of milliseconds
        a.copy_(new_a)
        got = tuner.torch.matmul(a, b, db=db)
    torch.cuda.synchronize()
    assert relative_error(got, torch.matmul(new_a, b)) <= allowed(k, "float32", "float32")


@pytest.mark.gpu
@pytest.mark.parametrize(("size", "dtype"), [(512, "float32"), (384, "float16")])
def test_torch_cuda_graph_replays_the_product(db: str, size: int, dtype: str) -> None:
    import tuner.torch

    a = torch.randn(size, size, device="cuda", dtype=DTYPES[dtype])
    b = torch.randn(size, size, device="cuda", dtype=DTYPES[dtype])
    bias = torch.randn(size, device="cuda", dtype=DTYPES[dtype])
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on the capture stream (split-K modules per stream)
        tuner.torch.matmul(a, b, bias=bias, db=db)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        captured = tuner.torch.matmul(a, b, bias=bias, db=db)
    a.copy_(torch.randn_like(a))
    graph.replay()
    torch.cuda.synchronize()
    ref = torch.matmul(a.float(), b.float()) + bias.float()
    assert relative_error(captured, ref) <= allowed(size, dtype, dtype)


@pytest.mark.gpu
def test_cupy_graph_replays_tuner_matmul(db: str) -> None:
    import cupy

    import tuner
    from tuner.gpu.measure import relative_error as cupy_error
    from tuner.gpu.measure import tolerance

    for m, n, k in [(512, 512, 512), (64, 64, 64)]:
        rng = cupy.random.default_rng(m)
        a = rng.standard_normal((m, k), dtype=cupy.float32)
        b = rng.standard_normal((k, n), dtype=cupy.float32)
        c = cupy.empty((m, n), dtype=cupy.float32)
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            tuner.matmul(a, b, c=c, db=db)  # the first call of the kind, outside the graph
            stream.begin_capture()
            tuner.matmul(a, b, c=c, db=db)
            graph = stream.end_capture()
            a[...] = rng.standard_normal((m, k), dtype=cupy.float32)
            c.fill(cupy.nan)
            graph.launch()
            stream.synchronize()
        assert cupy_error(c, cupy.matmul(a, b)) <= tolerance(k)


@pytest.mark.gpu
def test_a_first_call_during_capture_is_refused(db: str) -> None:
    import cupy

    import tuner

    a = cupy.ones((77, 91), dtype=cupy.float32)
    b = cupy.ones((91, 77), dtype=cupy.float32)
    c = cupy.empty((77, 77), dtype=cupy.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        with pytest.raises(InputError, match="call it once before capturing"):
            tuner.matmul(a, b, c=c, db=db)
        stream.end_capture()


@pytest.mark.gpu
def test_autograd_gradients_match_torch(db: str) -> None:
    import tuner.torch

    a = torch.randn(64, 80, device="cuda", requires_grad=True)
    b = torch.randn(80, 48, device="cuda", requires_grad=True)
    bias = torch.randn(48, device="cuda", requires_grad=True)
    tuner.torch.matmul(a, b, bias=bias, db=db).square().sum().backward()
    grads = [t.grad.clone() for t in (a, b, bias)]
    for t in (a, b, bias):
        t.grad = None
    (torch.matmul(a, b) + bias).square().sum().backward()
    for ours, theirs in zip(grads, (a.grad, b.grad, bias.grad), strict=True):
        assert relative_error(ours, theirs) <= 1e-4


@pytest.mark.gpu
def test_torch_compile_fullgraph_mlp_matches_eager(db: str) -> None:
    import tuner.torch

    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(128, 256), torch.nn.GELU(), torch.nn.Linear(256, 64)
    ).to("cuda", torch.float16)
    x = torch.randn(32, 128, device="cuda", dtype=torch.float16)
    with torch.no_grad():
        ref = model(x).float()
        tuner.torch.replace_linears(model, db=db)
        explained = torch._dynamo.explain(model)(x)
        assert explained.graph_break_count == 0
        compiled = torch.compile(model, fullgraph=True)
        got = compiled(x)
    assert got.dtype == torch.float16
    assert relative_error(got, ref) <= 3 * allowed(256, "float16", "float16")


@pytest.mark.gpu
def test_clear_errors_on_the_gpu(db: str) -> None:
    import tuner.torch

    a = torch.randn(8, 16, device="cuda")
    with pytest.raises(InputError, match=r"`a` is torch.float32 and `b` is torch.float16"):
        tuner.torch.matmul(a, torch.randn(16, 4, device="cuda", dtype=torch.float16), db=db)
    with pytest.raises(InputError, match="`b` has shape"):
        tuner.torch.matmul(a, torch.randn(16, 8, device="cuda")[:, ::2], db=db)
    with pytest.raises(InputError, match="`a` must have 2 or 3 dimensions"):
        tuner.torch.matmul(a.reshape(2, 2, 2, 16), a.T, db=db)
    with pytest.raises(InputError, match="`bias` must have shape \\(4,\\)"):
        tuner.torch.matmul(a, torch.randn(16, 4, device="cuda"), bias=a[0], db=db)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_views_of_wider_rows(db: str, dtype: str) -> None:
    """x[:, :k] of a wider matrix: read in place by the families that take leading dimensions,
    packed per call by the others; right either way."""
    import tuner.torch

    m, n, k = 120, 88, 200
    wide = torch.randn(m, k + 24, device="cuda", dtype=DTYPES[dtype])
    w = torch.randn(n, k + 8, device="cuda", dtype=DTYPES[dtype])
    a, b = wide[:, :k], w[:, :k].T  # A in rows of k + 24, B transposed in rows of k + 8
    got = tuner.torch.matmul(a, b, out_dtype=torch.float32, db=db)
    ref = torch.matmul(a.float(), b.float())
    assert relative_error(got, ref) <= allowed(k, dtype, "float32")


@pytest.mark.gpu
def test_a_repeated_call_skips_the_checks_and_the_lookup(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the first call of a kind, tuner.matmul neither checks nor asks again: both would
    fail here, and the calls still compute the product."""
    import cupy

    import tuner
    import tuner.client
    import tuner.gpu.matmul
    from tuner.gpu.measure import relative_error as cupy_error
    from tuner.gpu.measure import tolerance

    rng = cupy.random.default_rng(5)
    # 512^3 float32: a config that runs its kernel alone (no padding) on the H100 and H200.
    a = rng.standard_normal((512, 512), dtype=cupy.float32)
    b = rng.standard_normal((512, 512), dtype=cupy.float32)
    tuner.matmul(a, b, db=db)

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("checked or looked up again")

    monkeypatch.setattr(tuner.gpu.matmul, "prepare_call", fail)
    monkeypatch.setattr(tuner.client, "_chosen", fail)
    prepared = tuner.gpu.matmul._prepared
    kinds = [p for p in prepared.values() if p.c_shape == (512, 512)]
    assert kinds and all(p.direct is not None for p in kinds)  # one direct launch each
    for _ in range(3):
        out = tuner.matmul(a, b, db=db)
    assert cupy_error(out, cupy.matmul(a, b)) <= tolerance(512)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["NN", "NT"])
def test_emulated_configs_run_through_views(db: str, layout: str) -> None:
    """float32 at accuracy bf16x3: an emulated config (the BF16 split, then the half kernel),
    which sees the tensors as zero-copy CuPy views rather than one direct launch."""
    import tuner.torch
    from tuner.core.accuracy import allowance
    from tuner.gpu.measure import tolerance

    m, n, k = 257, 129, 1031
    a = operand(m, k, torch.float32, False, 6)
    b = operand(k, n, torch.float32, layout[1] == "T", 7)
    got = tuner.torch.matmul(a, b, db=db, accuracy="bf16x3")
    again = tuner.torch.matmul(a, b, db=db, accuracy="bf16x3")  # the prepared call
    ref = torch.matmul(a, b)
    for out in (got, again):
        assert relative_error(out, ref) <= tolerance(k) + allowance("bf16x3")
