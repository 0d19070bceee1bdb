"""GPU evaluation in an isolated worker process.

An illegal memory access ruins the CUDA context of the process that made it, and a kernel can
hang. So kernels run in a child process that owns the GPU: the parent compiles (NVRTC needs no
context), sends the cubin, and waits with a deadline. If the child dies or misses the deadline it
is killed and restarted, the candidate is recorded as ``launch_failed`` or ``timeout``, and the
study goes on.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import multiprocessing as mp
import os
import platform
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


def _provenance(dev: DeviceLimits) -> dict[str, Any]:
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
    conn.send(("ready", dev, _provenance(dev)))
    baselines: dict[Shape, tuple[tuple[Any, Any, Any], float]] = {}
    while True:
        request = conn.recv()
        if request is None:
            return
        compiled, shape = request
        try:
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


class GpuEvaluator:
    """Compile in this process, measure in a restartable child process with a deadline."""

    def __init__(
        self, device_index: int = 0, budget_ms: float = 100.0, run_timeout_s: float = 60.0
    ) -> None:
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
        _, dev, prov = parent.recv()
        return dev, prov

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

    def _measure(self, compiled: CompiledKernel, shape: Shape) -> dict[str, Any]:
        assert self._conn is not None
        try:
            self._conn.send((compiled, shape))
            if not self._conn.poll(self.run_timeout_s):
                self._restart()
                return {
                    "status": "timeout",
                    "reason": f"no answer within {self.run_timeout_s:.0f} s",
                }
            reply: dict[str, Any] = self._conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError) as exc:
            code = self._proc.exitcode if self._proc is not None else None
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
