"""cuBLASLt's arguments for row-major operands (``tuner.gpu.lt_layouts``), checked by doing what
the library would do with them in NumPy: read each buffer column-major as its layout says,
multiply as the ops say, and write C column-major; and an algorithm's words as text."""

from __future__ import annotations

import numpy as np
import pytest

from tuner.core.errors import InputError
from tuner.core.shape import SUPPORTED_LAYOUTS, Shape
from tuner.gpu.lt_layouts import (
    CUDA_TYPES,
    MAX_ALIGNMENT,
    OP_N,
    OP_T,
    MatrixLayout,
    algo_text,
    algo_words,
    alignment,
    lt_problem,
)


def _column_major(flat: np.ndarray, layout: MatrixLayout) -> np.ndarray:
    """The rows x cols matrix a column-major layout reads from ``flat``."""
    item = flat.itemsize
    return np.lib.stride_tricks.as_strided(
        flat, shape=(layout.rows, layout.cols), strides=(item, layout.ld * item), writeable=False
    )


def _op(matrix: np.ndarray, op: int) -> np.ndarray:
    return matrix.T if op == OP_T else matrix


def _stored(rng: np.random.Generator, rows: int, cols: int, pitch: int) -> np.ndarray:
    """A rows x cols row-major matrix with ``pitch`` elements between row starts, as the
    flat buffer it lies in (the pad holds values that must never be read: NaN)."""
    buffer = np.full((rows, pitch), np.nan)
    buffer[:, :cols] = rng.standard_normal((rows, cols))
    return buffer


@pytest.mark.parametrize("layout", SUPPORTED_LAYOUTS)
@pytest.mark.parametrize("pads", [(0, 0, 0), (3, 5, 2)])
def test_the_library_s_column_major_product_is_the_row_major_one(
    layout: str, pads: tuple[int, int, int]
) -> None:
    m, n, k = 5, 7, 3
    shape = Shape(m, n, k, "float32", layout)
    rng = np.random.default_rng(1)
    a_rows, a_cols = (k, m) if shape.a_transposed else (m, k)
    b_rows, b_cols = (n, k) if shape.b_transposed else (k, n)
    a = _stored(rng, a_rows, a_cols, a_cols + pads[0])
    b = _stored(rng, b_rows, b_cols, b_cols + pads[1])
    c_pitch = n + pads[2]
    problem = lt_problem(shape, a.shape[1], b.shape[1], c_pitch)

    first = _op(_column_major(b.ravel(), problem.first), problem.op_first)
    second = _op(_column_major(a.ravel(), problem.second), problem.op_second)
    product = first @ second  # column-major C: n x m
    assert product.shape == (problem.c.rows, problem.c.cols)
    c = np.zeros(m * c_pitch)
    for column in range(problem.c.cols):  # written column-major with ldc
        start = column * problem.c.ld
        c[start : start + problem.c.rows] = product[:, column]

    a_op = a[:, :a_cols].T if shape.a_transposed else a[:, :a_cols]
    b_op = b[:, :b_cols].T if shape.b_transposed else b[:, :b_cols]
    expected = a_op @ b_op
    np.testing.assert_allclose(c.reshape(m, c_pitch)[:, :n], expected, rtol=1e-12)
    assert problem.mnk == (n, m, k)


def test_ops_follow_the_layout_letters() -> None:
    ops = {
        layout: (p.op_first, p.op_second)
        for layout in SUPPORTED_LAYOUTS
        for p in [lt_problem(Shape(8, 8, 8, "bfloat16", layout), 8, 8, 8)]
    }
    # The library's first operand is the caller's B: transposed exactly when B's letter is T.
    assert ops == {"NN": (OP_N, OP_N), "NT": (OP_T, OP_N), "TN": (OP_N, OP_T), "TT": (OP_T, OP_T)}


def test_types_and_output_type() -> None:
    problem = lt_problem(Shape(4, 4, 4, "float16"), 4, 4, 4)
    assert problem.first.data_type == CUDA_TYPES["float16"] == problem.second.data_type
    assert problem.c.data_type == CUDA_TYPES["float32"]  # C is float32 unless asked otherwise
    bf16_out = lt_problem(Shape(4, 4, 4, "float16"), 4, 4, 4, out_dtype="bfloat16")
    assert bf16_out.c.data_type == CUDA_TYPES["bfloat16"] != problem.c.data_type
    with pytest.raises(InputError, match="not 'float64'"):
        lt_problem(Shape(4, 4, 4), 4, 4, 4, out_dtype="float64")


def test_a_pitch_shorter_than_the_row_is_refused() -> None:
    with pytest.raises(InputError, match="B's row pitch 6 is shorter than its rows of 7"):
        lt_problem(Shape(5, 7, 3), 3, 6, 7)


def test_alignments_are_told_per_base_in_the_library_s_order() -> None:
    assert alignment(0) == MAX_ALIGNMENT and alignment(4096) == MAX_ALIGNMENT
    assert alignment(4 + 1024) == 4 and alignment(48) == 16
    problem = lt_problem(Shape(4, 4, 4), 4, 4, 4, bases=(8, 2, 512))
    assert problem.alignments == (2, 8, MAX_ALIGNMENT)  # B's base first, then A's, then C's
    with pytest.raises(ValueError, match="not negative"):
        alignment(-16)


def test_algorithm_words_survive_text() -> None:
    words = (0, 1, 2**64 - 1, 0xDEADBEEF, 7, 2**40, 3, 12345678901234)
    text = algo_text(words)
    assert all(len(word) == 16 for word in text) and text[2] == "f" * 16
    assert algo_words(text) == words
    with pytest.raises(InputError, match="8 words, got 7"):
        algo_words(text[:7])
    with pytest.raises(InputError, match="16 hex digits"):
        algo_words([*text[:7], "xyz"])
    with pytest.raises(InputError, match="16 hex digits"):
        algo_words([*text[:7], "g" * 16])
    with pytest.raises(InputError, match="list of 8 hex words"):
        algo_words("00")  # type: ignore[arg-type]
