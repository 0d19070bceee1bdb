"""A GPU evaluator without CUDA, for tests: its worker process replaced by a fake that answers,
hangs or dies (the request's shape says which), its compiler by one that writes fake cubins."""

from __future__ import annotations

import os
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import ClassVar

from tuner.core.shape import Shape
from tuner.gpu.requests import Compare, Measure, Probe
from tuner.kernels.compile import CompiledKernel, CompileError, ResourceUsage
from tuner.kernels.families import parse_config
from tuner.kernels.render import KernelSource
from tuner.kernels.resources import table_device
from tuner.model.rates import DeviceRates

ANSWER, HANG, DIE = Shape(8, 8, 8), Shape(1, 8, 8), Shape(2, 8, 8)
CONFIG = parse_config("warptile_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128")
OTHER = parse_config("warptile_bm64_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t128")
RATES = DeviceRates(60.0, 60.0, 3.0, 2.5, "fake probe")


def fake_worker(conn: Connection, device_index: int, budget_ms: float) -> None:
    """Stands in for ``_worker_main`` in the child: the request's shape says what to do."""
    conn.send(("ready", table_device("sm_90"), {"device": "fake", "worker_pid": os.getpid()}))
    while True:
        request = conn.recv()
        if request is None:
            return
        if isinstance(request, Probe):
            conn.send(RATES)
            continue
        if request.shape == HANG:
            time.sleep(3600)
        if request.shape == DIE:
            os._exit(7)  # as after an illegal address
        if isinstance(request, Compare):  # one time per round and kernel, as the real one
            rounds = range(request.rounds)
            conn.send(
                [
                    {
                        "status": "ok",
                        "rel_error": 0.0,
                        "ms_rounds": [1.0 + i + k for i in rounds],
                        "cublas_ms_rounds": [2.0 + i for i in rounds],
                    }
                    for k in range(len(request.kernels))
                ]
            )
            continue
        assert isinstance(request, Measure)
        conn.send({"status": "ok", "ms": 1.0, "cublas_ms": 2.0, "rel_error": 0.0})


def dead_worker(conn: Connection, device_index: int, budget_ms: float) -> None:
    """A child that dies before it is ready (no device, a broken driver)."""
    os._exit(5)


class FakeCompiler:
    """Writes a fake cubin per config; configs named in ``failing`` fail, those in ``spilling``
    report spills. Records what it compiled."""

    failing: ClassVar[set[str]] = set()
    spilling: ClassVar[set[str]] = set()
    compiled: ClassVar[list[str]] = []
    in_process = False  # compiles in the pool's threads, as a test needs no processes

    def __init__(self, arch: str) -> None:
        self.arch = arch
        self.version = "fake 1.0"

    def compile(self, source: KernelSource) -> CompiledKernel:
        name = source.config.name
        FakeCompiler.compiled.append(name)
        if name in self.failing:
            raise CompileError(f"fake: {name} does not compile")
        spill = 64 if name in self.spilling else 0
        usage = ResourceUsage(96, 0, spill, spill, spill)
        return CompiledKernel(source, self.arch, self.version, Path("/nonexistent"), usage, False)
