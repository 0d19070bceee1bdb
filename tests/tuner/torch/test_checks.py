"""tuner.torch's argument checks on small stand-ins for tensors (no torch needed): each error
names the argument, and in-place operands are read with the right layout and pitch; without
torch, the import error names the extra to install."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest

import tuner.torch.checks as checks
from tuner.core.errors import InputError


@dataclass(frozen=True)
class Device:
    type: str
    index: int | None = 0

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


@dataclass(frozen=True)
class FakeTensor:
    """The attributes the checks read, as a torch tensor has them."""

    shape: tuple[int, ...]
    dtype: str = "torch.float16"
    device: Device = Device("cuda")
    strides: tuple[int, ...] | None = None

    def stride(self) -> tuple[int, ...]:
        if self.strides is not None:
            return self.strides
        steps, step = [], 1
        for size in reversed(self.shape):
            steps.append(step)
            step *= size
        return tuple(reversed(steps))

    def is_contiguous(self) -> bool:
        return self.strides is None


def test_a_cpu_tensor_is_named_with_the_move_that_fixes_it() -> None:
    with pytest.raises(InputError, match=r"`x` is on cpu: .*`x.cuda\(\)`"):
        checks.check_tensor("x", FakeTensor((2, 3), device=Device("cpu", None)), (2,))


@pytest.mark.parametrize("dtype", ["torch.float64", "torch.int8", "torch.float8_e4m3fn"])
def test_an_unsupported_dtype_is_named_with_the_allowed_ones(dtype: str) -> None:
    with pytest.raises(InputError, match=f"`a` is {dtype}; allowed: torch.float32, "):
        checks.check_tensor("a", FakeTensor((2, 3), dtype=dtype), (2, 3))


def test_a_wrong_number_of_dimensions_is_named() -> None:
    with pytest.raises(InputError, match=r"`b` must have 2 or 3 dimensions, got shape \(4,\)"):
        checks.check_tensor("b", FakeTensor((4,)), (2, 3))


def test_something_that_is_no_tensor_is_named() -> None:
    with pytest.raises(InputError, match="`a` must be a torch tensor, got a list"):
        checks.check_tensor("a", [[1.0]], (2,))


def test_mixed_dtypes_and_devices_are_named() -> None:
    half, single = FakeTensor((2, 3)), FakeTensor((3, 2), dtype="torch.float32")
    with pytest.raises(InputError, match=r"`a` is torch.float16 and `b` is torch.float32"):
        checks.check_same("a", half, "b", single)
    other_gpu = FakeTensor((3, 2), device=Device("cuda", 1))
    with pytest.raises(InputError, match="`a` is on cuda:0 and `b` on cuda:1"):
        checks.check_same("a", half, "b", other_gpu)


@pytest.mark.parametrize(
    ("shape", "strides", "expected"),
    [
        ((4, 6), (6, 1), checks.Stored(False, 6)),  # row-major
        ((4, 6), (10, 1), checks.Stored(False, 10)),  # a slice of wider rows
        ((4, 6), (1, 4), checks.Stored(True, 4)),  # w.T of a (6, 4) matrix
        ((4, 6), (1, 9), checks.Stored(True, 9)),  # the transposed view of wider rows
        ((1, 6), (99, 3), checks.Stored(False, 6)),  # one row: read as it is stored
        ((4, 1), (5, 7), checks.Stored(False, 5)),  # one column: rows 5 apart
    ],
)
def test_operands_are_read_where_they_lie(
    shape: tuple[int, int], strides: tuple[int, int], expected: checks.Stored
) -> None:
    assert checks.stored("a", shape, strides) == expected


@pytest.mark.parametrize("strides", [(12, 2), (1, 3), (3, 3)])
def test_strides_with_no_contiguous_rows_or_columns_are_refused(strides: tuple[int, int]) -> None:
    with pytest.raises(InputError, match=r"`w` has shape \(4, 6\) and strides .*w.contiguous"):
        checks.stored("w", (4, 6), strides)


def test_inner_dimensions_and_batches_must_agree() -> None:
    with pytest.raises(InputError, match="a's last dimension must equal b's second last"):
        checks.check_inner("a", (3, 4), "b", (5, 6))
    assert checks.batch_of((2, 3, 4), (4, 5)) == 2
    assert checks.batch_of((3, 4), (7, 4, 5)) == 7
    assert checks.batch_of((3, 4), (4, 5)) is None
    with pytest.raises(InputError, match="batched operands must have one batch size"):
        checks.batch_of((2, 3, 4), (3, 4, 5))


def test_bias_out_and_out_dtype() -> None:
    like = FakeTensor((3, 4))
    with pytest.raises(InputError, match=r"`bias` must have shape \(5,\)"):
        checks.check_bias(FakeTensor((4,)), 5, like)
    with pytest.raises(InputError, match="`bias` is on cuda:1"):
        checks.check_bias(FakeTensor((5,), device=Device("cuda", 1)), 5, like)
    with pytest.raises(InputError, match=r"`out` must have shape \(3, 5\)"):
        checks.check_out(FakeTensor((5, 3)), (3, 5), "torch.float16", like)
    with pytest.raises(InputError, match=r"`out` must be torch.float32"):
        checks.check_out(FakeTensor((3, 5)), (3, 5), "torch.float32", like)
    with pytest.raises(InputError, match="`out` must be contiguous"):
        checks.check_out(FakeTensor((3, 5), strides=(1, 3)), (3, 5), "torch.float16", like)
    checks.check_out(FakeTensor((3, 5)), (3, 5), "torch.float16", like)  # fits: no error
    with pytest.raises(InputError, match=r"`out_dtype` must be torch.float32, torch.float16"):
        checks.check_out_dtype("torch.int32")


def test_the_names_torch_gives_dtypes_are_read() -> None:
    dtype: Any = "torch.bfloat16"
    assert checks.dtype_name(dtype) == "bfloat16"
    assert checks.dtype_name(FakeTensor((1, 1), dtype="torch.float32")) == "float32"


def _run_without(module: str, code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter where ``module`` cannot be imported."""
    blocked = f"import sys; sys.modules[{module!r}] = None\n"
    return subprocess.run(
        [sys.executable, "-c", blocked + code], capture_output=True, text=True, timeout=120
    )


def test_without_torch_the_import_error_names_the_extra() -> None:
    done = _run_without("torch", "import tuner, tuner.torch\ntuner.torch.matmul")
    assert done.returncode != 0
    assert "ImportError: tuner.torch needs PyTorch" in done.stderr
    assert "pip install 'gemmtune[torch]'" in done.stderr


def test_the_kernel_writes_the_output_dtype_unless_a_bias_or_a_cast_needs_float32() -> None:
    torch = pytest.importorskip("torch")
    from tuner.torch.ops import kernel_out_dtype

    bf16, fp16, fp32 = torch.bfloat16, torch.float16, torch.float32
    # A half C straight from the kernel: no float32 C, no cast after.
    assert kernel_out_dtype(bf16, bf16, with_bias=False) is bf16
    assert kernel_out_dtype(fp16, fp16, with_bias=False) is fp16
    assert kernel_out_dtype(fp16, fp32, with_bias=False) is fp32
    # A bias is added to the FP32 sums, then rounded once by the cast.
    assert kernel_out_dtype(bf16, bf16, with_bias=True) is fp32
    # No kernel writes another type than its inputs' half type: float32, then the cast.
    assert kernel_out_dtype(fp32, bf16, with_bias=False) is fp32
    assert kernel_out_dtype(fp16, bf16, with_bias=False) is fp32
