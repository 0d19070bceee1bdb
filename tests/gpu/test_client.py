"""``tuner.matmul`` against cuBLAS (strict FP32) on the GPU, for tuned, nearest and odd shapes."""

from __future__ import annotations

from pathlib import Path

import pytest

import storage
from api.preload import preload
from tuner.core.shape import Shape

SHAPES = [
    (1000, 1000, 1000),
    (128, 4096, 4096),
    (1, 1, 1),
    (17, 33, 65),
    (257, 129, 1031),
    (3000, 5, 2049),
    (4096, 4096, 4096),
]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The committed H100 results, so the shapes above get exact, nearest and default answers."""
    url = f"sqlite:///{tmp_path_factory.mktemp('client') / 'gpu.db'}"
    engine = storage.make_engine(url)
    storage.upgrade(engine)
    preload(storage.make_session_factory(engine))
    engine.dispose()
    return url


@pytest.mark.gpu
@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
def test_matmul_matches_cupy(db: str, m: int, n: int, k: int) -> None:
    import cupy

    import tuner
    from tuner.gpu.measure import relative_error, tolerance

    rng = cupy.random.default_rng(m * 7 + n * 13 + k)
    a = rng.standard_normal((m, k), dtype=cupy.float32)
    b = rng.standard_normal((k, n), dtype=cupy.float32)
    c = rng.standard_normal((m, n), dtype=cupy.float32)
    ref = 1.5 * cupy.matmul(a, b) - 0.5 * c
    out = tuner.matmul(a, b, alpha=1.5, beta=-0.5, c=c.copy(), db=db)
    assert relative_error(out, ref) <= tolerance(k)
    fresh = tuner.matmul(a, b, db=db)  # allocates C, beta = 0
    assert relative_error(fresh, cupy.matmul(a, b)) <= tolerance(k)


@pytest.mark.gpu
def test_matmul_compiles_each_config_once(db: str, tmp_path: Path) -> None:
    import cupy

    import tuner
    import tuner.gpu.loaded as loaded

    a = cupy.ones((64, 64), dtype=cupy.float32)
    tuner.matmul(a, a, db=db)
    before = dict(loaded._kernels)
    tuner.matmul(a, a, db=db)
    assert loaded._kernels == before


@pytest.mark.gpu
def test_matmul_rejects_wrong_inputs(db: str) -> None:
    import cupy

    import tuner
    from tuner.core.errors import InputError

    a = cupy.ones((4, 5), dtype=cupy.float32)
    with pytest.raises(InputError, match="inner dimensions"):
        tuner.matmul(a, a, db=db)
    with pytest.raises(InputError, match="`a` must be a 2-D cupy array of float32, float16"):
        tuner.matmul(a.astype(cupy.float64), a.T, db=db)
    with pytest.raises(InputError, match="`b` must be a 2-D cupy array"):
        tuner.matmul(a, cupy.ones((5, 4, 1), dtype=cupy.float32), db=db)
    with pytest.raises(InputError, match="`b` is float16 and `a` is float32"):
        tuner.matmul(a, a.T.astype(cupy.float16), db=db)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize(("m", "n", "k"), [(1, 1, 1), (257, 129, 1031), (1000, 1000, 1000)])
def test_matmul_takes_half_inputs_and_transposed_views_in_place(
    db: str, m: int, n: int, k: int, layout: str
) -> None:
    """float16 A and B, either one a transposed view (``w.T``), against FP32 on the same
    rounded values; the transposed views are read where they are (layout ``T``). C is float16
    by default, as torch.matmul gives, and float32 when asked."""
    import cupy

    import tuner
    import tuner.client as impl
    from tuner.gpu.measure import reference_tolerance, relative_error

    rng = cupy.random.default_rng(m + 3 * n + 5 * k)
    a32 = rng.standard_normal((k, m) if layout[0] == "T" else (m, k), dtype=cupy.float32)
    b32 = rng.standard_normal((n, k) if layout[1] == "T" else (k, n), dtype=cupy.float32)
    a16, b16 = a32.astype(cupy.float16), b32.astype(cupy.float16)
    a = a16.T if layout[0] == "T" else a16
    b = b16.T if layout[1] == "T" else b16
    ref = cupy.matmul(a.astype(cupy.float32), b.astype(cupy.float32))
    out = tuner.matmul(a, b, db=db)
    assert out.dtype == cupy.float16 and out.shape == (m, n)
    assert relative_error(out.astype(cupy.float32), ref) <= reference_tolerance(
        k, "float16", "float16"
    )
    wide = tuner.matmul(a, b, db=db, out_dtype="float32")
    assert wide.dtype == cupy.float32
    assert relative_error(wide, ref) <= reference_tolerance(k, "float16")
    # The view is read as stored: layout T for a transposed view, except where the array is
    # C-contiguous either way round (one row or column: its transpose is the same memory).
    read_as = "".join("N" if x.flags.c_contiguous else "T" for x in (a, b))
    assert read_as == layout or m * n * k == 1
    assert Shape(m, n, k, "float16", read_as) in {key[0] for key in impl._configs}


@pytest.mark.gpu
@pytest.mark.parametrize("accuracy", ["exact", "bf16x3"])
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize(("m", "n", "k"), [(257, 129, 1031), (2048, 2048, 512)])
def test_float32_transposed_views_at_either_accuracy(
    db: str, m: int, n: int, k: int, layout: str, accuracy: str
) -> None:
    """float32 with either operand a transposed view: at ``exact`` (no family computes float32
    in T layouts) the views are copied to NN; at ``bf16x3`` they are read in place by an
    emulated config. Both within their class's tolerance of strict FP32 cuBLAS."""
    import cupy

    import tuner
    import tuner.client as impl
    from tuner.core.accuracy import allowance
    from tuner.gpu.measure import relative_error, tolerance

    rng = cupy.random.default_rng(m + 7 * n + 11 * k)
    a32 = rng.standard_normal((k, m) if layout[0] == "T" else (m, k), dtype=cupy.float32)
    b32 = rng.standard_normal((n, k) if layout[1] == "T" else (k, n), dtype=cupy.float32)
    a = a32.T if layout[0] == "T" else a32
    b = b32.T if layout[1] == "T" else b32
    out = tuner.matmul(a, b, db=db, accuracy=accuracy)
    ref = cupy.matmul(cupy.ascontiguousarray(a), cupy.ascontiguousarray(b))
    assert relative_error(out, ref) <= tolerance(k) + allowance(accuracy)
    read_as = layout if accuracy == "bf16x3" else "NN"
    assert (Shape(m, n, k, "float32", read_as), accuracy) in {
        (key[0], key[-1]) for key in impl._configs
    }


@pytest.mark.gpu
def test_split_kernels_on_two_streams_at_once_stay_correct() -> None:
    # Every tile of 1000^3 is a stream-K tile, cut into pieces that meet in C through the
    # module's ticket counters. Launches alternate between two streams with no wait between
    # them; a module shared by both would mix their tickets.
    import threading

    import cupy

    from tests.lab_scripts import lab_script
    from tuner.gpu.loaded import compiled
    from tuner.gpu.measure import tolerance

    lab = lab_script("two_streams")
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(2)]
    kernels = [compiled(lab.CONFIG, (s.ptr, threading.get_ident())) for s in streams]
    assert kernels[0][0] is not kernels[1][0]
    assert max(lab.relative_errors(kernels, streams, launches=20)) <= tolerance(lab.SHAPE.k)
