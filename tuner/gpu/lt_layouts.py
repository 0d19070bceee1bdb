"""The arguments of one cuBLASLt matmul for row-major operands, and an algorithm's identity as
text: pure arithmetic, tested without a GPU (``tuner.gpu.cublaslt`` makes the calls).

cuBLASLt reads matrices column-major. A row-major array of R rows and pitch P (elements between
row starts) is, read column-major, its transpose: a matrix of R columns, each P apart. So the
row-major product C = op(A) @ op(B) (M x N) is asked as the column-major product
C^T = op(B)^T @ op(A)^T (N x M): the library's first operand is the caller's B, its second the
caller's A, and nothing is copied. A stored operand already holds the transpose the library
needs when it is *not* transposed in the shape's layout (B stored K x N reads as B^T, N x K),
so the library's op is ``N`` there and ``T`` for a transposed one.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuner.core.errors import InputError
from tuner.core.shape import Shape

# cudaDataType_t of each input (and output) type.
CUDA_TYPES = {"float32": 0, "float16": 2, "bfloat16": 14}
OP_N, OP_T = 0, 1
# The heuristic assumes bases on this many bytes unless told less (its preference's minimum
# alignments); an algorithm chosen for aligned bases may not run on others.
MAX_ALIGNMENT = 256
# An algorithm (cublasLtMatmulAlgo_t) is eight opaque 64-bit words.
ALGO_WORDS = 8
_HEX_DIGITS = 16


@dataclass(frozen=True)
class MatrixLayout:
    """One ``cublasLtMatrixLayoutCreate``'s arguments: a column-major matrix of ``rows`` x
    ``cols`` elements of ``data_type``, columns ``ld`` elements apart."""

    data_type: int
    rows: int
    cols: int
    ld: int


@dataclass(frozen=True)
class LtProblem:
    """Everything one ``cublasLtMatmul`` of a row-major shape is described by: the library's
    ops on its first and second operand (the caller's B and A), their layouts, and C's (written
    in place: D is C). Hashable: descriptors and the heuristic's answers are kept per problem."""

    op_first: int
    op_second: int
    first: MatrixLayout  # the caller's B
    second: MatrixLayout  # the caller's A
    c: MatrixLayout
    # Bytes each base (first, second, C) is aligned on, up to MAX_ALIGNMENT: the heuristic is
    # told, so it offers only algorithms that run on them.
    alignments: tuple[int, int, int] = (MAX_ALIGNMENT, MAX_ALIGNMENT, MAX_ALIGNMENT)

    @property
    def mnk(self) -> tuple[int, int, int]:
        """The column-major product's m, n, k: the caller's N, M, K."""
        k = self.first.cols if self.op_first == OP_N else self.first.rows
        return self.c.rows, self.c.cols, k


def cuda_type(dtype: str) -> int:
    """The ``cudaDataType_t`` of ``dtype``; another name raises listing the allowed ones."""
    try:
        return CUDA_TYPES[dtype]
    except KeyError:
        raise InputError(
            f"cuBLASLt takes {', '.join(CUDA_TYPES)} matrices here, not {dtype!r}"
        ) from None


def alignment(address: int) -> int:
    """The largest power of two up to :data:`MAX_ALIGNMENT` that divides ``address``."""
    if address < 0:
        raise ValueError(f"an address is not negative, got {address}")
    if address == 0:
        return MAX_ALIGNMENT
    return min(address & -address, MAX_ALIGNMENT)


def lt_problem(
    shape: Shape,
    a_pitch: int,
    b_pitch: int,
    c_pitch: int,
    out_dtype: str = "float32",
    bases: tuple[int, int, int] = (0, 0, 0),
) -> LtProblem:
    """The matmul of ``shape`` on row-major A and B stored as its layout says (``a_pitch``,
    ``b_pitch``: elements between their row starts) into row-major C of ``out_dtype`` (C's
    CUDA data type; float32 by default) with pitch ``c_pitch``; ``bases``: the addresses of A,
    B and C, whose alignments the heuristic is told (0: fully aligned).

    Raises:
        InputError: a pitch shorter than its array's rows, or a type cuBLASLt is not given here.
    """
    a_rows, a_cols = (shape.k, shape.m) if shape.a_transposed else (shape.m, shape.k)
    b_rows, b_cols = (shape.n, shape.k) if shape.b_transposed else (shape.k, shape.n)
    for name, pitch, cols in (
        ("A", a_pitch, a_cols),
        ("B", b_pitch, b_cols),
        ("C", c_pitch, shape.n),
    ):
        if pitch < cols:
            raise InputError(
                f"{name}'s row pitch {pitch} is shorter than its rows of {cols} elements"
            )
    inputs = cuda_type(shape.dtype)
    return LtProblem(
        op_first=OP_T if shape.b_transposed else OP_N,
        op_second=OP_T if shape.a_transposed else OP_N,
        first=MatrixLayout(inputs, b_cols, b_rows, b_pitch),
        second=MatrixLayout(inputs, a_cols, a_rows, a_pitch),
        c=MatrixLayout(cuda_type(out_dtype), shape.n, shape.m, c_pitch),
        alignments=(alignment(bases[1]), alignment(bases[0]), alignment(bases[2])),
    )


def algo_text(words: tuple[int, ...]) -> list[str]:
    """An algorithm's eight words as sixteen hex digits each (JSON keeps them exactly)."""
    _check_count(len(words))
    return [format(word, f"0{_HEX_DIGITS}x") for word in words]


def algo_words(text: list[str] | tuple[str, ...]) -> tuple[int, ...]:
    """:func:`algo_text`'s form read back; anything else raises naming what is wrong."""
    if not isinstance(text, list | tuple):
        raise InputError(f"an algorithm is a list of {ALGO_WORDS} hex words, got {text!r}")
    _check_count(len(text))
    words = []
    for word in text:
        if not isinstance(word, str) or len(word) != _HEX_DIGITS:
            raise InputError(f"an algorithm word is {_HEX_DIGITS} hex digits, got {word!r}")
        try:
            words.append(int(word, 16))
        except ValueError:
            raise InputError(
                f"an algorithm word is {_HEX_DIGITS} hex digits, got {word!r}"
            ) from None
    return tuple(words)


def _check_count(count: int) -> None:
    if count != ALGO_WORDS:
        raise InputError(f"a cuBLASLt algorithm is {ALGO_WORDS} words, got {count}")
