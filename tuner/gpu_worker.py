"""GPU evaluation in an isolated worker process.

An illegal memory access ruins the CUDA context of the process that made it, and a kernel can
hang. So kernels run in a child process that owns the GPU: the parent compiles (NVRTC needs no
context), sends the cubin, and waits with a deadline. If the child dies or misses the deadline it
is killed and restarted, the candidate is recorded as ``launch_failed`` or ``timeout``, and the
study goes on.

Two kinds of request: ``(compiled, shape)`` measures one candidate during a study (cuBLAS timed
once per shape); :class:`Compare` re-measures one kernel side by side with cuBLAS in alternating
rounds, for ``gemmtune bench``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import multiprocessing as mp
import os
import platform
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from multiprocessing.connection import Connection
from typing import Any

from tuner import __version__
from tuner.compile import CompiledKernel, CompileError, NvrtcCompiler
from tuner.config import Config
from tuner.evaluate import Result
from tuner.render import render
from tuner.resources import DeviceLimits, static_check
from tuner.shape import Shape

READY_TIMEOUT_S = 120.0
# Deadline allowance per timed block of a Compare request, on top of ``run_timeout_s``.
COMPARE_BLOCK_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Compare:
    """Request: verify ``compiled`` against cuBLAS, then time it and cuBLAS alternately
    (ours, cuBLAS, ours, cuBLAS, ...) for ``rounds`` rounds on the same operands."""

    compiled: CompiledKernel
    shape: Shape
    rounds: int


def device_provenance(dev: DeviceLimits) -> dict[str, Any]:
    import cupy as cp
    from cupy.cuda import nvrtc

    major, minor = nvrtc.getVersion()
    cc = cp.cuda.Device().compute_capability
    return {
        "device": dev.name,
        "sm_count": dev.sm_count,
        "compute_capability": f"{cc[:-1]}.{cc[-1]}",
        "driver": cp.cuda.runtime.driverGetVersion(),
        "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
        "nvrtc": f"{major}.{minor}",
        "cupy": cp.__version__,
        "tuner": __version__,
        "python": platform.python_version(),
    }


def _worker_main(conn: Connection, device_index: int, budget_ms: float) -> None:
    """Child process: own the GPU, answer measurement requests until told to stop."""
    import cupy as cp

    from tuner.resources import live_device

    cp.cuda.Device(device_index).use()
    dev = live_device(device_index)
    conn.send(("ready", dev, device_provenance(dev)))
    baselines: dict[Shape, tuple[tuple[Any, Any, Any], float]] = {}
    while True:
        request = conn.recv()
        if request is None:
            return
        try:
            if isinstance(request, Compare):
                conn.send(_compare_one(request, budget_ms))
            else:
                compiled, shape = request
                conn.send(_measure_one(compiled, shape, baselines, budget_ms))
        except Exception as exc:  # a CUDA error: the context may be unusable, so end here
            conn.send({"status": "launch_failed", "reason": f"{type(exc).__name__}: {exc}"[:500]})
            os._exit(3)


def _measure_one(
    compiled: CompiledKernel,
    shape: Shape,
    baselines: dict[Shape, tuple[tuple[Any, Any, Any], float]],
    budget_ms: float,
) -> dict[str, Any]:
    """Verify, then time one kernel; cuBLAS is timed once per shape on the same operands."""
    from tuner.compile import load_kernel
    from tuner.measure import cublas_gemm, launch, random_operands, tflops, time_launches, verify

    if shape not in baselines:
        a, b, c = random_operands(shape, seed=12345)
        base = time_launches(lambda: cublas_gemm(1.0, a, b, 0.0, c), budget_ms=budget_ms)
        baselines[shape] = ((a, b, c), base.median_ms)
    (a, b, c), base_ms = baselines[shape]
    source = compiled.source
    kernel = load_kernel(compiled)
    check = verify(kernel, source, shape)
    reply: dict[str, Any] = {
        "rel_error": check.rel_error,
        "cublas_ms": base_ms,
        "cublas_tflops": tflops(shape, base_ms),
    }
    if not check.ok:
        reason = f"relative error {check.rel_error:.2e} > {check.tolerance:.1e}"
        reply.update(status="wrong_result", reason=reason)
        return reply
    t = time_launches(lambda: launch(kernel, source, shape, 1.0, a, b, 0.0, c), budget_ms=budget_ms)
    reply.update(status="ok", ms=t.median_ms, tflops=tflops(shape, t.median_ms))
    return reply


def alternate(
    rounds: int, ours: Callable[[], float], theirs: Callable[[], float]
) -> tuple[list[float], list[float]]:
    """Call ``ours`` then ``theirs``, ``rounds`` times: each side's times, in round order.
    Alternating spreads clock and thermal drift over both sides alike."""
    mine: list[float] = []
    base: list[float] = []
    for _ in range(rounds):
        mine.append(ours())
        base.append(theirs())
    return mine, base


def _compare_one(request: Compare, budget_ms: float) -> dict[str, Any]:
    """Verify, then time our kernel and cuBLAS alternately on the same random operands
    (alpha = 1, beta = 0); each round is a median of repeats with L2 flushed (``measure``)."""
    from tuner.compile import load_kernel
    from tuner.measure import cublas_gemm, launch, random_operands, time_launches, verify

    shape, source = request.shape, request.compiled.source
    kernel = load_kernel(request.compiled)
    check = verify(kernel, source, shape)
    if not check.ok:
        reason = f"relative error {check.rel_error:.2e} > {check.tolerance:.1e}"
        return {"status": "wrong_result", "reason": reason, "rel_error": check.rel_error}
    a, b, c = random_operands(shape, seed=12345)
    ours = partial(launch, kernel, source, shape, 1.0, a, b, 0.0, c)
    theirs = partial(cublas_gemm, 1.0, a, b, 0.0, c)
    mine, base = alternate(
        request.rounds,
        lambda: time_launches(ours, budget_ms=budget_ms).median_ms,
        lambda: time_launches(theirs, budget_ms=budget_ms).median_ms,
    )
    return {
        "status": "ok",
        "rel_error": check.rel_error,
        "ms_rounds": mine,
        "cublas_ms_rounds": base,
    }


class GpuEvaluator:
    """Compile in this process, measure in a restartable child process with a deadline."""

    families: tuple[str, ...] = ()  # any family

    def measured_configs(self, shape: Shape) -> set[str] | None:
        return None  # any config

    def __init__(
        self, device_index: int = 0, budget_ms: float = 100.0, run_timeout_s: float = 60.0
    ) -> None:
        if importlib.util.find_spec("cupy") is None:  # say so here, not in a child's traceback
            raise ImportError("CuPy is not installed: pip install 'gemmtune[gpu]'")
        self.device_index = device_index
        self.budget_ms = budget_ms
        self.run_timeout_s = run_timeout_s
        self._ctx = mp.get_context("spawn")
        self._proc: Any = None
        self._conn: Connection | None = None
        self.restarts = 0
        self.device, self.provenance = self._start()
        self.compiler = NvrtcCompiler(self.device.arch)

    def _start(self) -> tuple[DeviceLimits, dict[str, Any]]:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(
            target=_worker_main, args=(child, self.device_index, self.budget_ms), daemon=True
        )
        self._proc.start()
        child.close()
        self._conn = parent
        if not parent.poll(READY_TIMEOUT_S):
            self._kill()
            raise RuntimeError("the GPU worker did not start (no CUDA device?)")
        try:
            _, dev, prov = parent.recv()
        except EOFError:  # it died before saying ready: no CuPy, no device, a broken driver
            code = self._exit_code()
            self._kill()
            raise RuntimeError(f"the GPU worker exited (code {code}) before it was ready") from None
        return dev, prov

    def _exit_code(self) -> int | None:
        """The dead worker's exit code (it closes its pipe a moment before it is reaped)."""
        if self._proc is None:
            return None
        self._proc.join(timeout=5)
        code: int | None = self._proc.exitcode
        return code

    def _kill(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
        if self._proc is not None:
            self._proc.join(timeout=10)
        self._proc = None

    def _restart(self) -> None:
        self._kill()
        self.restarts += 1
        self.device, self.provenance = self._start()

    def compile(self, config: Config) -> CompiledKernel | CompileError:
        try:
            return self.compiler.compile(render(config))
        except CompileError as exc:
            return exc

    def evaluate(
        self, config: Config, shape: Shape, compiled: CompiledKernel | CompileError | None = None
    ) -> Result:
        prov = {**self.provenance, "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        check = static_check(config, self.device)
        if not check.fits:
            return Result.failed(config, "pruned", check.problems[0], provenance=prov)
        compiled = compiled if compiled is not None else self.compile(config)
        if isinstance(compiled, CompileError):
            return Result.failed(config, "compile_failed", str(compiled), provenance=prov)
        occ = compiled.occupancy(self.device)
        smem = compiled.usage.smem_static_bytes + compiled.source.dynamic_smem_bytes
        rejection = compiled.rejection(self.device)
        if rejection:
            return Result.failed(
                config,
                "pruned",
                rejection,
                registers=compiled.usage.registers,
                smem_bytes=smem,
                occupancy=occ.occupancy,
                provenance=prov,
            )
        reply = self._measure(compiled, shape)
        result = Result(
            config.name,
            config.family,
            config.as_dict(),
            reply["status"],
            reply.get("reason"),
            ms=reply.get("ms"),
            tflops=reply.get("tflops"),
            cublas_ms=reply.get("cublas_ms"),
            cublas_tflops=reply.get("cublas_tflops"),
            rel_error=reply.get("rel_error"),
            registers=compiled.usage.registers,
            smem_bytes=smem,
            occupancy=occ.occupancy,
            provenance=prov,
        )
        if result.ms and result.cublas_ms:
            result.ratio = result.cublas_ms / result.ms
        return result

    def compare(self, config: Config, shape: Shape, rounds: int) -> dict[str, Any]:
        """Re-measure one config side by side with cuBLAS (see :class:`Compare`).

        The reply has ``status`` and ``reason``, and when ok ``rel_error``, ``ms_rounds`` and
        ``cublas_ms_rounds`` (one median per round, in order)."""
        if rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {rounds}")
        compiled = self.compile(config)
        if isinstance(compiled, CompileError):
            return {"status": "compile_failed", "reason": str(compiled)}
        rejection = compiled.rejection(self.device)
        if rejection:
            return {"status": "pruned", "reason": rejection}
        timeout = self.run_timeout_s + 2 * rounds * COMPARE_BLOCK_TIMEOUT_S
        return self._ask(Compare(compiled, shape, rounds), timeout)

    def _measure(self, compiled: CompiledKernel, shape: Shape) -> dict[str, Any]:
        return self._ask((compiled, shape), self.run_timeout_s)

    def _ask(self, request: object, timeout_s: float) -> dict[str, Any]:
        """Send one request to the worker and wait up to ``timeout_s`` for its reply; a worker
        that dies or misses the deadline is replaced."""
        assert self._conn is not None
        try:
            self._conn.send(request)
            if not self._conn.poll(timeout_s):
                self._restart()
                return {"status": "timeout", "reason": f"no answer within {timeout_s:.0f} s"}
            reply: dict[str, Any] = self._conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError) as exc:
            code = self._exit_code()
            self._restart()
            return {"status": "launch_failed", "reason": f"worker died (exit {code}): {exc!r}"}
        if reply["status"] == "launch_failed":
            self._restart()
        return reply

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                self._conn.send(None)
        if self._proc is not None:
            self._proc.join(timeout=10)
        self._kill()
