"""Which GPUs a tune uses: ``--gpus all|N|LIST`` read against the devices this process sees.

Indices are those of the CUDA runtime, which numbers only the devices ``CUDA_VISIBLE_DEVICES``
leaves visible (``CUDA_VISIBLE_DEVICES=2,3`` makes physical GPUs 2 and 3 devices 0 and 1): the
runtime's own count is the range, so its rules (UUIDs, MIG instances) hold as they are.

A bare number is a count (``--gpus 2``: devices 0 and 1), as Docker's ``--gpus`` reads it; a
list names devices (``--gpus 0,2``), and one device alone is written with its comma
(``--gpus 1,``). A replay has no GPUs: it stands for a host of ``REPLAY_GPUS`` GPUs of its
table's device, so that several replay workers run the way several GPUs would.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from typing import Any

from tuner.core.errors import InputError

DEFAULT_GPUS = (0,)  # without --gpus: one GPU, the first visible
REPLAY_GPUS = 8


def cuda_device_count(purpose: str) -> int:
    """The CUDA devices visible to this process; an :class:`InputError` saying in one line why
    there is none (``purpose`` names what needed one).

    Asked of the driver library (``cuInit``, ``cuDeviceGetCount``; it applies
    ``CUDA_VISIBLE_DEVICES`` as the runtime does), not through CuPy: this runs in the command's
    own process before its GPU workers start, and importing CuPy there took 3.4 s of a first
    command on a lent H200 host, all before the first worker was started (a profile, in
    ``benchmarks/notebook.md``), while the workers import it anyway."""
    need = f"{purpose} needs a CUDA GPU with CuPy"
    if importlib.util.find_spec("cupy") is None:
        raise InputError(f"{need}: CuPy is not installed (pip install 'gemmtune[gpu]')")
    try:
        count = _driver_device_count()
    except OSError as exc:
        raise InputError(f"{need}: no NVIDIA driver ({exc}){_visible_note()}") from None
    except RuntimeError as exc:
        raise InputError(f"{need}: {exc}{_visible_note()}") from None
    if count < 1:
        raise InputError(f"{need}: no CUDA device found{_visible_note()}")
    return count


CUDA_SUCCESS, CUDA_ERROR_NO_DEVICE = 0, 100  # CUresult (cuda.h)


def driver_library() -> ctypes.CDLL:
    """The CUDA driver library (raises OSError where there is none); ``tuner.gpu.tensor_maps``
    declares the calls it makes of it."""
    return ctypes.CDLL("libcuda.so.1")


def _driver_device_count() -> int:
    lib = driver_library()
    status = int(lib.cuInit(0))
    if status == CUDA_ERROR_NO_DEVICE:
        return 0
    if status != CUDA_SUCCESS:
        raise RuntimeError(f"the driver did not start: {_error_name(lib, status)}")
    count = ctypes.c_int(0)
    status = int(lib.cuDeviceGetCount(ctypes.byref(count)))
    if status != CUDA_SUCCESS:
        raise RuntimeError(f"the driver did not count its devices: {_error_name(lib, status)}")
    return count.value


def _error_name(lib: Any, status: int) -> str:
    name = ctypes.c_char_p()
    if int(lib.cuGetErrorName(status, ctypes.byref(name))) == CUDA_SUCCESS and name.value:
        return f"{name.value.decode()} ({status})"
    return f"CUresult {status}"


def _visible_note() -> str:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return "" if visible is None else f" (CUDA_VISIBLE_DEVICES={visible})"


def choose_gpus(value: str | None, evaluator: str) -> tuple[int, ...]:
    """The device indices ``--gpus value`` names for ``evaluator`` (``gpu``: the CUDA devices
    visible; ``replay``: ``REPLAY_GPUS`` stand-ins). None: :data:`DEFAULT_GPUS`, without
    looking for devices."""
    if value is None:
        return DEFAULT_GPUS
    if evaluator == "replay":
        return parse_gpus(value, REPLAY_GPUS, "")
    return parse_gpus(value, cuda_device_count("--gpus"), _visible_note())


def parse_gpus(value: str, count: int, note: str = "") -> tuple[int, ...]:
    """``value`` (all, a count, or a comma-separated list of indices) against ``count``
    devices; ``note`` says where the count comes from, for the error."""
    text = value.strip().lower()
    if text == "all":
        return tuple(range(count))
    if "," not in text:
        number = _integer(text)
        if number is not None and 1 <= number <= count:
            return tuple(range(number))
        raise _bad(value, count, note)
    items = [item.strip() for item in text.split(",")]
    if items[-1] == "":
        items.pop()  # "1," names device 1 alone
    indices = [_integer(item) for item in items]
    chosen = [i for i in indices if i is not None and 0 <= i < count]
    if not items or len(chosen) != len(items) or len(set(chosen)) != len(chosen):
        raise _bad(value, count, note)
    return tuple(chosen)


def _integer(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() else None


def _bad(value: str, count: int, note: str) -> InputError:
    message = (
        f"`--gpus` must be all, a count in 1..{count}, or distinct device indices in "
        f"0..{count - 1} separated by commas{note}, got {value!r}"
    )
    index = _integer(value.strip())
    if index is not None and index < count:  # meant as a device, perhaps
        message += f" (device {index} alone is `--gpus {index},`)"
    return InputError(message)
