"""``tuner.torch.matmul`` and ``linear``: gemmtune's answered kernel on torch CUDA tensors, and the
custom op ``gemmtune::matmul`` that ``torch.compile`` and autograd see.

An eager call without gradients runs :func:`_eager`: the first call of a kind (shapes, strides,
dtypes and devices of every tensor, output dtype, where the answer is asked) checks everything
(``tuner.torch.checks``) and prepares the launches (:class:`_Prepared`); later calls of that
kind look it up and launch. Under ``torch.compile``, or when a gradient is wanted, the call goes
through the custom op instead: its fake implementation gives the output's shape and dtype
without running anything, so compiled graphs hold the op without a break, and its backward
computes the gradients with torch's own matmul.

The kernel writes C in the output dtype (by default the inputs', as torch.matmul gives) where
it can: float32, or the half input type, rounded once from the FP32 sums. With a bias, or float32
inputs asked for a half result, the kernel writes float32 C and one elementwise op adds the bias
and casts (:func:`_to_out_dtype`): the bias is added to the FP32 sums, and the result rounded
once, not in the kernel's epilogue.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import torch
from torch import Tensor

import tuner.torch.checks as checks
from tuner.client import Chosen, chosen
from tuner.core.accuracy import DEFAULT_ACCURACY
from tuner.core.errors import InputError
from tuner.core.shape import OUT_DTYPES, Shape
from tuner.gpu.torch_launch import TorchGemm, prepare_gemm

OP_NAME = "gemmtune::matmul"
KEPT_CALLS = 512  # kinds of calls kept; past this many, the oldest go


def matmul(
    a: Tensor,
    b: Tensor,
    *,
    out_dtype: torch.dtype | None = None,
    bias: Tensor | None = None,
    out: Tensor | None = None,
    url: str | None = None,
    db: str | None = None,
    accuracy: str = DEFAULT_ACCURACY,
) -> Tensor:
    """``a @ b (+ bias)`` with gemmtune's answered kernel, on torch's current stream.

    Args:
        a, b: CUDA tensors of one dtype (float32, float16 or bfloat16) on one GPU: 2-D (M, K)
            and (K, N), or batched: (B, M, K) with (K, N) or (B, K, N), and (M, K) with
            (B, K, N). Each 2-D matrix is read where it lies when its rows or its columns are
            contiguous: a transposed view (``w.T``) is a transposed operand, not a copy.
        out_dtype: the result's dtype; default the inputs' (as ``torch.matmul``). The sums are
            float32 either way.
        bias: (N,) added to every row of the product (after it, with the cast).
        out: a contiguous tensor of the result's shape and dtype to write into.
        url, db, accuracy: where and how the config is asked (:func:`tuner.client.best`).

    Raises:
        InputError: naming the argument: not a CUDA tensor, a dtype or a number of dimensions
            it cannot take, mixed dtypes or devices, shapes that do not fit, strides with
            neither rows nor columns contiguous.
        ImportError: CuPy is not installed (the message names the extra).
    """
    if torch.compiler.is_compiling() or _wants_grad(a, b, bias):
        if out is not None:
            raise InputError("`out` cannot be given under torch.compile or with autograd")
        result: Tensor = torch.ops.gemmtune.matmul(a, b, bias, out_dtype, url, db, accuracy)
        return result
    return _eager(a, b, bias, out_dtype, out, (url, db, accuracy), ("a", "b"))


def linear(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    *,
    url: str | None = None,
    db: str | None = None,
    accuracy: str = DEFAULT_ACCURACY,
) -> Tensor:
    """``x @ weight.T + bias`` as ``torch.nn.functional.linear`` computes it: ``x`` (..., K),
    ``weight`` (N, K) read in place (layout NT for a row-major weight), the result (..., N)
    in ``x``'s dtype."""
    if not isinstance(x, torch.Tensor) or x.dim() < 1:
        raise InputError(f"`x` must be a tensor of at least 1 dimension, got {checks.describe(x)}")
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        raise InputError(f"`weight` must be a 2-D tensor (N, K), got {checks.describe(weight)}")
    rows = x.reshape(-1, x.shape[-1])
    w_t = weight.T
    y: Tensor
    if torch.compiler.is_compiling() or _wants_grad(rows, w_t, bias):
        y = torch.ops.gemmtune.matmul(rows, w_t, bias, None, url, db, accuracy)
    else:
        y = _eager(rows, w_t, bias, None, None, (url, db, accuracy), ("x", "weight.T"))
    return y.reshape(*x.shape[:-1], weight.shape[0])


def _wants_grad(a: Any, b: Any, bias: Any) -> bool:
    if not bool(torch.is_grad_enabled()):
        return False
    return any(getattr(t, "requires_grad", False) for t in (a, b, bias))


# The prepared calls by kind (see the module's docstring). Plain dict operations: atomic under
# the GIL; two threads preparing one kind at once store equal values.
_prepared: dict[Hashable, _Prepared] = {}


def _eager(
    a: Any,
    b: Any,
    bias: Any,
    out_dtype: Any,
    out: Any,
    asked: tuple[str | None, str | None, str],
    names: tuple[str, str],
) -> Tensor:
    try:
        key: Hashable = (
            a.shape,
            a.stride(),
            a.dtype,
            a.device,
            b.shape,
            b.stride(),
            b.dtype,
            b.device,
            None if bias is None else (bias.shape, bias.dtype, bias.device),
            None if out is None else (out.shape, out.stride(), out.dtype, out.device),
            out_dtype,
            asked,
        )
    except (AttributeError, TypeError):  # not tensors: the checks name them
        key = None
    prepared = _prepared.get(key)
    if prepared is None:
        prepared = _prepare(a, b, bias, out_dtype, out, asked, names)
        if key is not None:
            if len(_prepared) >= KEPT_CALLS:
                _prepared.pop(next(iter(_prepared)))
            _prepared[key] = prepared
    return prepared.run(a, b, bias, out)


class _Prepared:
    """One kind of call, checked, with its 2-D launch: ``single`` (2-D x 2-D), ``fold`` (a
    batched A whose rows follow one another, times a 2-D B: one product of B*M rows) or
    ``loop`` (one launch per batch entry)."""

    __slots__ = (
        "a_batched",
        "b_batched",
        "batch",
        "c_dtype",
        "c_shape",
        "gemm",
        "mode",
        "out_dtype",
        "rows",
    )

    def __init__(
        self,
        gemm: TorchGemm,
        mode: str,
        c_shape: tuple[int, ...],
        out_dtype: torch.dtype,
        c_dtype: torch.dtype,
        batch: int,
        a_batched: bool,
        b_batched: bool,
    ) -> None:
        self.gemm = gemm
        self.mode = mode
        self.c_shape = c_shape
        self.out_dtype = out_dtype
        self.c_dtype = c_dtype  # what the kernel writes: out_dtype, or float32 to add or cast
        self.batch = batch
        self.a_batched = a_batched
        self.b_batched = b_batched
        self.rows = (batch * c_shape[-2], -1)

    def run(self, a: Tensor, b: Tensor, bias: Tensor | None, out: Tensor | None) -> Tensor:
        if out is not None and self.c_dtype is self.out_dtype:
            c = out  # checked: contiguous, of the result's shape and dtype
        else:
            c = torch.empty(self.c_shape, dtype=self.c_dtype, device=a.device)
        gemm = self.gemm
        if self.mode == "single":
            gemm.run(a, b, c)
        elif self.mode == "fold":
            gemm.run(a.reshape(self.rows), b, c.view(self.rows))
        else:
            for i in range(self.batch):
                gemm.run(a[i] if self.a_batched else a, b[i] if self.b_batched else b, c[i])
        return _to_out_dtype(c, bias, self.out_dtype, out)


def _to_out_dtype(
    c: Tensor, bias: Tensor | None, out_dtype: torch.dtype, out: Tensor | None
) -> Tensor:
    """The product ``c`` as the caller's result: itself when the kernel wrote ``out_dtype``
    (``bias`` added in place: only float32 C takes a bias there), else ``bias`` added and the
    cast to ``out_dtype`` done by one elementwise op (into ``out`` when given)."""
    if c.dtype is out_dtype:
        if bias is not None:
            c.add_(bias)
        return c
    result = out if out is not None else torch.empty(c.shape, dtype=out_dtype, device=c.device)
    if bias is None:
        result.copy_(c)
    else:
        torch.add(c, bias, out=result)
    return result


def _prepare(
    a: Any,
    b: Any,
    bias: Any,
    out_dtype: Any,
    out: Any,
    asked: tuple[str | None, str | None, str],
    names: tuple[str, str],
) -> _Prepared:
    """Check a kind of call (naming the argument at fault) and prepare its launches."""
    a_name, b_name = names
    checks.check_tensor(a_name, a, (2, 3))
    checks.check_tensor(b_name, b, (2, 3))
    checks.check_same(a_name, a, b_name, b)
    checks.check_inner(a_name, a.shape, b_name, b.shape)
    checks.check_out_dtype(out_dtype)
    batch = checks.batch_of(a.shape, b.shape)
    m, n = int(a.shape[-2]), int(b.shape[-1])
    result_shape = (m, n) if batch is None else (batch, m, n)
    dtype = out_dtype if out_dtype is not None else a.dtype
    if bias is not None:
        checks.check_bias(bias, n, a)
    if out is not None:
        checks.check_out(out, result_shape, dtype, a)
    a_batched, b_batched = a.dim() == 3, b.dim() == 3
    if batch is None:
        mode, a2, b2 = "single", a, b
    elif a_batched and not b_batched and _rows_follow(a):
        mode, a2, b2 = "fold", a.reshape(batch * m, -1), b
    else:
        mode, a2, b2 = "loop", a[0] if a_batched else a, b[0] if b_batched else b
    a_stored = checks.stored(a_name, tuple(a2.shape), tuple(a2.stride()))
    b_stored = checks.stored(b_name, tuple(b2.shape), tuple(b2.stride()))
    url, db, accuracy = asked

    def answer(shape: Shape) -> Chosen:
        return chosen(shape, url=url, db=db, accuracy=accuracy)

    c_dtype = kernel_out_dtype(a.dtype, dtype, bias is not None)
    gemm = prepare_gemm(
        a2,
        b2,
        a_stored.transposed,
        b_stored.transposed,
        (a_stored.pitch, b_stored.pitch),
        accuracy,
        answer,
        checks.dtype_name(c_dtype),
    )
    return _Prepared(gemm, mode, result_shape, dtype, c_dtype, batch or 1, a_batched, b_batched)


def kernel_out_dtype(input_dtype: Any, out_dtype: Any, with_bias: bool) -> Any:
    """The type the kernel writes C in for a result of ``out_dtype``: that type itself where a
    kernel can write it for ``input_dtype`` (``tuner.core.shape.OUT_DTYPES``: float32, or the
    half input type) and no bias is to be added, else float32, added to and cast after. A
    bias is added to the FP32 sums so that the result is rounded once, as cuBLAS's epilogue
    does."""
    allowed = OUT_DTYPES[checks.dtype_name(input_dtype)]
    if with_bias or checks.dtype_name(out_dtype) not in allowed:
        return torch.float32
    return out_dtype


def _rows_follow(a: Tensor) -> bool:
    """Whether a (B, M, K) tensor is one (B*M, K) matrix of contiguous rows, evenly spaced."""
    _, m, k = (int(x) for x in a.shape)
    step, row, col = (int(x) for x in a.stride())
    return (col == 1 or k == 1) and row >= k and step == m * row


# The custom op: what torch.compile and autograd see.


@torch.library.custom_op(OP_NAME, mutates_args=())
def _matmul_op(
    a: Tensor,
    b: Tensor,
    bias: Tensor | None,
    out_dtype: torch.dtype | None,
    url: str | None,
    db: str | None,
    accuracy: str,
) -> Tensor:
    return _eager(a, b, bias, out_dtype, None, (url, db, accuracy), ("a", "b"))


@_matmul_op.register_fake
def _matmul_fake(
    a: Tensor,
    b: Tensor,
    bias: Tensor | None,
    out_dtype: torch.dtype | None,
    url: str | None,
    db: str | None,
    accuracy: str,
) -> Tensor:
    checks.check_tensor("a", a, (2, 3))
    checks.check_tensor("b", b, (2, 3))
    checks.check_same("a", a, "b", b)
    checks.check_inner("a", a.shape, "b", b.shape)
    batch = checks.batch_of(a.shape, b.shape)
    shape = (a.shape[-2], b.shape[-1]) if batch is None else (batch, a.shape[-2], b.shape[-1])
    return a.new_empty(shape, dtype=out_dtype if out_dtype is not None else a.dtype)


def _setup_backward(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    a, b, bias = inputs[:3]
    ctx.save_for_backward(a, b)
    ctx.bias_dtype = None if bias is None else bias.dtype


def _backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
    """Gradients by torch's own matmul, in the inputs' dtype; a broadcast operand's summed over
    the batch."""
    a, b = ctx.saved_tensors
    g = grad.to(a.dtype)
    grad_a = grad_b = grad_bias = None
    if ctx.needs_input_grad[0]:
        grad_a = torch.matmul(g, b.transpose(-1, -2))
        if a.dim() == 2 and grad_a.dim() == 3:
            grad_a = grad_a.sum(0)
    if ctx.needs_input_grad[1]:
        grad_b = torch.matmul(a.transpose(-1, -2), g)
        if b.dim() == 2 and grad_b.dim() == 3:
            grad_b = grad_b.sum(0)
    if ctx.bias_dtype is not None and ctx.needs_input_grad[2]:
        grad_bias = grad.reshape(-1, grad.shape[-1]).sum(0).to(ctx.bias_dtype)
    return grad_a, grad_b, grad_bias, None, None, None, None


_matmul_op.register_autograd(_backward, setup_context=_setup_backward)
