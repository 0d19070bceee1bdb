"""The relative error's sums (``tuner.gpu.error_norm``, ``templates/squared_sums.cu``) and the
NaN-filled C (``tuner.gpu.half_arrays.nan_filled``) without a GPU: what the kernel is given,
how its launch covers an array, and that the byte the C is filled with is a NaN in every type
C may have. The kernel's arithmetic is checked on the GPU (``tests/gpu/test_error_norm.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from tuner.gpu.error_norm import ELEMENTS, MAX_BLOCKS, THREADS, blocks_for, squared_sums, summable
from tuner.gpu.half_arrays import NAN_BYTE
from tuner.kernels.render import templates_dir


@dataclass
class Flags:
    c_contiguous: bool = True


@dataclass
class FakeArray:
    """What :func:`summable` reads of a CuPy array."""

    dtype: str
    size: int
    shape: tuple[int, ...] = ()
    flags: Flags = field(default_factory=Flags)


@pytest.mark.parametrize("size", [1, 2, 255, 256, 257, 4096, 131071, 256 * 512, 10**8])
def test_the_launch_has_no_idle_block_and_at_most_the_cap(size: int) -> None:
    blocks = blocks_for(size)
    assert 1 <= blocks <= MAX_BLOCKS
    assert (blocks - 1) * THREADS < size  # every block has an element to start on
    assert blocks == MAX_BLOCKS or blocks * THREADS >= size  # one pass where the cap allows


def test_the_kernel_file_names_the_block_size_the_launch_uses() -> None:
    code = (templates_dir() / "squared_sums.cu").read_text()
    assert f"constexpr int SUM_THREADS = {THREADS};" in code


@pytest.mark.parametrize("out", sorted(ELEMENTS))
@pytest.mark.parametrize("ref", sorted(ELEMENTS))
def test_every_pair_of_known_types_is_summed_as_stored(out: str, ref: str) -> None:
    assert summable(FakeArray(out, 12), FakeArray(ref, 12))


@pytest.mark.parametrize(
    ("out", "ref"),
    [
        (FakeArray("float32", 12), FakeArray("float32", 13)),  # sizes differ: broadcasting
        (FakeArray("float32", 12, flags=Flags(False)), FakeArray("float32", 12)),  # a view
        (FakeArray("float32", 12), FakeArray("float32", 12, flags=Flags(False))),
        (FakeArray("int32", 12), FakeArray("float32", 12)),  # a type the kernel does not read
        (FakeArray("float32", 12), FakeArray("complex64", 12)),
    ],
)
def test_what_the_kernel_cannot_read_is_left_to_cupy(out: FakeArray, ref: FakeArray) -> None:
    assert not summable(out, ref)
    with pytest.raises(ValueError, match="C-contiguous with as many elements"):
        squared_sums(out, ref)


def test_a_byte_of_all_ones_is_a_nan_in_every_type_of_c() -> None:
    word32 = np.frombuffer(bytes([NAN_BYTE] * 4), dtype=np.uint32)
    assert np.isnan(word32.view(np.float32)).all()
    word16 = np.frombuffer(bytes([NAN_BYTE] * 2), dtype=np.uint16)
    assert np.isnan(word16.view(np.float16)).all()
    # BF16 is the upper half of a float32: its bits shifted up 16 are that float32.
    assert np.isnan((word16.astype(np.uint32) << 16).view(np.float32)).all()
