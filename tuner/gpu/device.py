"""The limits of the GPU this process sees, read through CuPy.

The table of ``tuner.kernels.resources`` describes a compute capability; a live device adds its
own name, SM count and limits, which is what a study on it must plan for.
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from functools import lru_cache

from tuner.answers.device_kind import DeviceSpec
from tuner.kernels.resources import DEVICE_TABLE, DeviceLimits, table_device


def live_device(index: int = 0) -> DeviceLimits:
    """Limits read from a CUDA device through CuPy (needs a GPU)."""
    import cupy

    dev = cupy.cuda.Device(index)
    attrs = dev.attributes
    props = cupy.cuda.runtime.getDeviceProperties(index)
    major, minor = dev.compute_capability[:-1], dev.compute_capability[-1]
    arch = f"sm_{major}{minor}"
    base = DEVICE_TABLE.get(arch, DEVICE_TABLE["sm_90"])
    name = props["name"]
    return replace(
        base,
        name=name.decode() if isinstance(name, bytes) else str(name),
        arch=arch,
        sm_count=attrs["MultiProcessorCount"],
        max_threads_per_block=attrs["MaxThreadsPerBlock"],
        max_threads_per_sm=attrs["MaxThreadsPerMultiProcessor"],
        max_blocks_per_sm=attrs.get("MaxBlocksPerMultiprocessor", base.max_blocks_per_sm),
        regs_per_sm=attrs["MaxRegistersPerMultiprocessor"],
        smem_per_sm=attrs["MaxSharedMemoryPerMultiprocessor"],
        smem_per_block_optin=attrs["MaxSharedMemoryPerBlockOptin"],
    )


def resolve_device(arch: str | None = None) -> DeviceLimits:
    """The table entry for ``arch`` if given, else the live GPU, else the sm_90 table entry."""
    if arch:
        return table_device(arch)
    try:
        return live_device()
    except Exception:  # no CuPy, no driver or no device: fall back to the H100 entry
        return DEVICE_TABLE["sm_90"]


def current_device() -> DeviceSpec | None:
    """The current CuPy device, or None when CuPy is not installed or sees no GPU."""
    if importlib.util.find_spec("cupy") is None:
        return None
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        index = int(cupy.cuda.Device().id)
    except Exception:  # no driver, a broken install: no device to describe
        return None
    return _described(index)


@lru_cache(maxsize=16)
def _described(index: int) -> DeviceSpec:
    limits = live_device(index)
    return DeviceSpec(limits.name, limits.arch, limits.sm_count)


def current_arch() -> str:
    """The architecture of the current CuPy device (needs a GPU)."""
    import cupy

    arch = _described(int(cupy.cuda.Device().id)).arch
    assert arch is not None  # read from the device
    return arch
