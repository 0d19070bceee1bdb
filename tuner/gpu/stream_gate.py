"""Holding the current stream while the host enqueues a batch of timed launches, so that what
CUDA events measure is the GPU's time, not the host's.

A timed repeat is a few launches from Python (the L2 flush, the kernel, a padded launch's
copies) between two events. When the host enqueues them more slowly than the GPU runs them, the
GPU waits between them and the events count the wait: on the H100 a study of 1009x1013x1019
screened a config at 4.7 TFLOP/s that its finalists' re-measurement put at 27.3, while its
compile processes kept the cores busy.
:func:`held_stream` launches a one-thread kernel (``templates/stream_gate.cu``) that waits until
the host has enqueued the batch, then lets it run back to back.

The gate reads a counter in pinned, mapped host memory (one per device): each gate waits for its
own ticket, and opening one writes the highest ticket opened, so a late gate never waits for a
value already overwritten. A gate opens by itself after :data:`GATE_TIMEOUT_NS`, so a host that
never opens it (an exception between the launches) costs a second, not a hang. Callers keep a
batch well under what a stream queues before the host blocks (:data:`GATED_LAUNCHES`).
``GEMMTUNE_STREAM_GATE=0`` in the environment turns the gate off (the launches are then timed
as the host enqueues them), to compare the two or where mapped host memory is not available.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tuner.gpu.plain_kernels import plain_kernel

GATE_ENV_VAR = "GEMMTUNE_STREAM_GATE"
GATE_TIMEOUT_NS = 1_000_000_000
# Launches (kernels and event records) enqueued behind one gate at most: a CUDA stream takes
# about a thousand before the host blocks, which would leave the gate to its timeout.
GATED_LAUNCHES = 200


@dataclass
class _Gate:
    """One device's counter: its host address (also its device address, by unified
    addressing) and the last ticket handed out."""

    address: int
    issued: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def opened(self) -> ctypes.c_uint64:
        return ctypes.c_uint64.from_address(self.address)


@functools.cache
def _gate(device: int) -> _Gate:
    import cupy

    runtime = cupy.cuda.runtime
    address = int(runtime.hostAlloc(8, runtime.hostAllocMapped | runtime.hostAllocPortable))
    gate = _Gate(address)
    gate.opened.value = 0
    return gate


@contextmanager
def held_stream() -> Iterator[None]:
    """Hold the current stream from here until the block ends (see the module); nothing when
    ``GEMMTUNE_STREAM_GATE`` is ``0``."""
    if os.environ.get(GATE_ENV_VAR, "1").strip() == "0":
        yield
        return
    import cupy
    import numpy as np

    gate = _gate(cupy.cuda.Device().id)
    with gate.lock:
        gate.issued += 1
        ticket = gate.issued
    kernel: Any = plain_kernel("stream_gate.cu", "wait_for_host")
    kernel(
        (1,),
        (1,),
        (np.uint64(gate.address), np.uint64(ticket), np.uint64(GATE_TIMEOUT_NS)),
    )
    try:
        yield
    finally:
        with gate.lock:
            gate.opened.value = max(gate.opened.value, ticket)
