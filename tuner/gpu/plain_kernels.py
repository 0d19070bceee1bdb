"""The plain CUDA files of ``templates/`` (not kernel families, never rendered): the padded
launch's row copy (``pad_copy.cu``), the emulated families' split (``split_bf16x3.cu``) and the
timing's stream gate (``stream_gate.cu``), each compiled by NVRTC once per process and device,
its kernels looked up once."""

from __future__ import annotations

import functools
import threading
from typing import Any

from tuner.kernels.render import templates_dir

_lock = threading.Lock()


@functools.cache
def _module(device: int, file: str) -> Any:
    import cupy

    code = (templates_dir() / file).read_text()
    return cupy.RawModule(code=code, options=("--std=c++17",))


@functools.cache
def _function(device: int, file: str, name: str) -> Any:
    with _lock:
        return _module(device, file).get_function(name)


def plain_kernel(file: str, name: str) -> Any:
    """Kernel ``name`` of ``templates/<file>`` on the current device."""
    import cupy

    return _function(cupy.cuda.Device().id, file, name)
