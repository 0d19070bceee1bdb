"""The arguments of ``tuner.torch`` checked, each error naming the argument and what is allowed.

Everything here reads tensors only through their attributes (``device.type``, ``dtype``,
``shape``, ``stride()``), never imports torch, and runs once per kind of call (the later calls of
a kind are looked up by those attributes, ``tuner.torch.ops``), so the checks can be thorough.

A 2-D operand is read where it lies when one of its dimensions is contiguous: rows of unit stride
(stored as it is, layout ``N``, rows ``pitch`` elements apart) or columns of unit stride (the
transposed view of a row-major matrix, as ``weight.T`` is: stored transposed, layout ``T``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tuner.core.errors import InputError

DTYPES = ("float32", "float16", "bfloat16")  # torch.float32, torch.float16, torch.bfloat16


def dtype_name(tensor_or_dtype: Any) -> str:
    """``float16`` for a tensor of ``torch.float16`` (or that dtype itself)."""
    dtype = getattr(tensor_or_dtype, "dtype", tensor_or_dtype)
    return str(dtype).removeprefix("torch.")


def describe(value: Any) -> str:
    """What an argument is, for messages: a tensor's shape, dtype and device, else its type."""
    if all(hasattr(value, name) for name in ("shape", "dtype", "device")):
        return f"a tensor of shape {tuple(value.shape)}, {value.dtype} on {value.device}"
    return f"a {type(value).__name__}"


def check_tensor(name: str, value: Any, dims: tuple[int, ...]) -> None:
    """A CUDA tensor of a supported dtype with one of ``dims`` dimensions, or an InputError
    naming ``name``."""
    if not all(hasattr(value, attr) for attr in ("shape", "dtype", "device", "stride")):
        raise InputError(f"`{name}` must be a torch tensor, got {describe(value)}")
    if value.device.type != "cuda":
        raise InputError(
            f"`{name}` is on {value.device}: tuner.torch runs on CUDA tensors "
            f"(move it with `{name}.cuda()`)"
        )
    if dtype_name(value) not in DTYPES:
        raise InputError(
            f"`{name}` is {value.dtype}; allowed: torch.float32, torch.float16, torch.bfloat16"
        )
    if len(value.shape) not in dims:
        allowed = " or ".join(str(d) for d in dims)
        raise InputError(f"`{name}` must have {allowed} dimensions, got shape {tuple(value.shape)}")


def check_same(first: str, a: Any, second: str, b: Any) -> None:
    """One dtype and one device for two tensors."""
    if a.dtype != b.dtype:
        raise InputError(
            f"`{first}` is {a.dtype} and `{second}` is {b.dtype}: they must have one dtype"
        )
    if a.device != b.device:
        raise InputError(
            f"`{first}` is on {a.device} and `{second}` on {b.device}: they must be on one GPU"
        )


def check_out_dtype(out_dtype: Any) -> None:
    if out_dtype is not None and dtype_name(out_dtype) not in DTYPES:
        raise InputError(
            f"`out_dtype` must be torch.float32, torch.float16 or torch.bfloat16 (or None: "
            f"the inputs' dtype), got {out_dtype!r}"
        )


@dataclass(frozen=True)
class Stored:
    """How a 2-D operand lies in memory: ``transposed`` (columns of unit stride: the array a
    kernel reads is its transpose, row-major), and elements from one stored row to the next."""

    transposed: bool
    pitch: int


def stored(name: str, shape: tuple[int, int], strides: tuple[int, int]) -> Stored:
    """How the 2-D operand ``name`` of ``shape`` and ``strides`` (in elements) is read in place;
    a single row or column is read as stored (row-major), as CuPy's own flags say it is.

    Raises:
        InputError: neither its rows nor its columns are contiguous, or its rows overlap.
    """
    rows, cols = shape
    row_step, col_step = strides
    if rows == 1:
        return Stored(False, cols)
    if (cols == 1 or col_step == 1) and row_step >= cols:
        return Stored(False, row_step)
    if row_step == 1 and col_step >= rows:
        return Stored(True, col_step)
    raise InputError(
        f"`{name}` has shape {tuple(shape)} and strides {tuple(strides)}: tuner.torch reads an "
        "operand whose rows or whose columns are contiguous and do not overlap (a transposed "
        f"view such as `w.T` is read in place); pass `{name}.contiguous()`"
    )


def check_inner(a_name: str, a_shape: Any, b_name: str, b_shape: Any) -> None:
    """The last dimension of A is the second last of B."""
    if a_shape[-1] != b_shape[-2]:
        raise InputError(
            f"`{a_name}` is {tuple(a_shape)} and `{b_name}` is {tuple(b_shape)}: "
            f"{a_name}'s last dimension must equal {b_name}'s second last"
        )


def batch_of(a_shape: Any, b_shape: Any) -> int | None:
    """The batch of a (3-D) x (3-D), (3-D) x (2-D) or (2-D) x (3-D) product (None for 2-D x 2-D).

    Raises:
        InputError: two batched operands of different batch sizes.
    """
    a_batch = a_shape[0] if len(a_shape) == 3 else None
    b_batch = b_shape[0] if len(b_shape) == 3 else None
    if a_batch is not None and b_batch is not None and a_batch != b_batch:
        raise InputError(
            f"`a` is {tuple(a_shape)} and `b` is {tuple(b_shape)}: batched operands must "
            "have one batch size"
        )
    return a_batch if a_batch is not None else b_batch


def check_bias(bias: Any, n: int, like: Any) -> None:
    """A 1-D tensor of N values on the operands' GPU."""
    check_tensor("bias", bias, (1,))
    if tuple(bias.shape) != (n,):
        raise InputError(
            f"`bias` must have shape ({n},) (one value per output column), got {tuple(bias.shape)}"
        )
    if bias.device != like.device:
        raise InputError(f"`bias` is on {bias.device} and the operands on {like.device}")


def check_out(out: Any, shape: tuple[int, ...], out_dtype: Any, like: Any) -> None:
    """A contiguous tensor of the result's shape and dtype on the operands' GPU."""
    check_tensor("out", out, (len(shape),))
    if tuple(out.shape) != shape:
        raise InputError(f"`out` must have shape {shape}, got {tuple(out.shape)}")
    if dtype_name(out) != dtype_name(out_dtype):
        raise InputError(f"`out` must be {out_dtype} (the output dtype), got {out.dtype}")
    if out.device != like.device:
        raise InputError(f"`out` is on {out.device} and the operands on {like.device}")
    if not out.is_contiguous():
        raise InputError(f"`out` must be contiguous, got strides {tuple(out.stride())}")
