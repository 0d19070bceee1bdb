"""The plain CUDA files of ``templates/`` (not kernel families, never rendered): the padded
launch's row copy (``pad_copy.cu``), the emulated families' split (``split_bf16x3.cu``), the
timing's stream gate (``stream_gate.cu``), the relative error's sums (``squared_sums.cu``) and
the half types' conversions (``half_convert.cu``), and the probes' kernels (their code inline,
``tuner.gpu.probes``): each compiled by NVRTC to a cubin kept in the kernel cache
(``tuner.gpu.nvrtc.plain_cubin``), loaded once per process and device, its kernels looked up
once."""

from __future__ import annotations

import functools
import threading
from typing import Any

from tuner.kernels.render import templates_dir

_lock = threading.Lock()


@functools.cache
def _module(device: int, code: str) -> Any:
    import cupy

    from tuner.gpu.device import current_arch
    from tuner.gpu.nvrtc import plain_cubin

    return cupy.RawModule(path=str(plain_cubin(code, current_arch())))


@functools.cache
def _function(device: int, code: str, name: str) -> Any:
    with _lock:
        return _module(device, code).get_function(name)


@functools.cache
def _file_code(file: str) -> str:
    return (templates_dir() / file).read_text()


def plain_kernel(file: str, name: str) -> Any:
    """Kernel ``name`` of ``templates/<file>`` on the current device."""
    return code_kernel(_file_code(file), name)


def code_kernel(code: str, name: str) -> Any:
    """Kernel ``name`` of the CUDA source ``code`` on the current device."""
    import cupy

    return _function(cupy.cuda.Device().id, code, name)


def grid_stride_blocks(size: int, threads: int, most: int) -> int:
    """Blocks of ``threads`` for a grid-stride loop over ``size`` elements: one element at least
    for each block to start on, at most ``most`` blocks (they loop over the rest)."""
    return max(1, min(most, -(-size // threads)))
