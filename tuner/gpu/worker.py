"""GPU evaluation: compiles ahead on every core, measures in an isolated worker process.

An illegal memory access ruins the CUDA context of the process that made it, and a kernel can
hang. So kernels run in a child process that owns the GPU: the parent has them compiled by a
pool of compiler processes (``tuner.kernels.compile_pool``; NVRTC needs no context) while the child
measures the candidate before, sends the cubin, and waits with a deadline. If the child dies or
misses the deadline it is killed and restarted, the candidate is recorded as ``launch_failed``
or ``timeout``, and the study goes on.

A vendor library's config (``cublaslt``) skips the compilers and the resource checks: the worker
asks the library for its algorithm, and the one that ran is kept in the result's provenance
(``vendor``).

Requests (``tuner.gpu.requests``): :class:`Measure` verifies and times one candidate beside
cuBLAS; :class:`Compare` re-measures a few kernels and cuBLAS in alternating rounds (a study's
finalists, ``gemmtune bench``); :class:`Probe` measures the device's rates.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import multiprocessing as mp
import os
import platform
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from tuner import __version__
from tuner.core.config import Config
from tuner.core.evaluators import EvaluatorKind
from tuner.core.result import Comparison, Result
from tuner.core.shape import Shape
from tuner.gpu.nvrtc import NvrtcCompiler
from tuner.gpu.requests import Compare, Measure, Probe, WorkerState, handle, warm_up
from tuner.kernels.compile import CompiledKernel, CompileError
from tuner.kernels.compile_pool import CompilePools, Outcome
from tuner.kernels.families import is_vendor
from tuner.kernels.resources import DeviceLimits, static_check
from tuner.model.rates import DeviceRates
from tuner.search.evaluator import Ticket

READY_TIMEOUT_S = 120.0
# Deadline allowance per timed block of a Compare request, on top of ``run_timeout_s``.
COMPARE_BLOCK_TIMEOUT_S = 10.0
PROBE_TIMEOUT_S = 60.0
# Kernel time per timed block while a study screens candidates (ours, then cuBLAS); a study's
# finalists and the bench re-measure with ``budget_ms``.
SCREEN_BUDGET_MS = 15.0


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


def device_identity(device_index: int) -> dict[str, Any]:
    """Which GPU of the host measured: its index among the visible devices, the
    ``CUDA_VISIBLE_DEVICES`` that made them visible, and its PCI bus id (the physical one)."""
    import cupy as cp

    identity: dict[str, Any] = {"device_index": device_index}
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        identity["cuda_visible_devices"] = visible
    with contextlib.suppress(Exception):  # the bus id is a label: never worth a failed start
        identity["pci_bus_id"] = cp.cuda.Device(device_index).pci_bus_id
    return identity


def _worker_main(conn: Connection, device_index: int, budget_ms: float) -> None:
    """Child process: own the GPU, answer requests until told to stop."""
    import cupy as cp

    from tuner.gpu.device import live_device

    cp.cuda.Device(device_index).use()
    dev = live_device(device_index)
    conn.send(("ready", dev, {**device_provenance(dev), **device_identity(device_index)}))
    state = WorkerState()
    warm_up(state)  # while the parent builds its study
    while True:
        request = conn.recv()
        if request is None:
            return
        try:
            conn.send(handle(request, state))
        except Exception as exc:  # a CUDA error: the context may be unusable, so end here
            conn.send({"status": "launch_failed", "reason": f"{type(exc).__name__}: {exc}"[:500]})
            os._exit(3)


@dataclass
class _Outstanding:
    """A measurement sent to the worker and not yet answered."""

    ticket: Ticket
    request: Measure
    provenance: dict[str, Any]
    usage: dict[str, int]
    occupancy: float | None  # None for a vendor library's config
    sent: float = field(default_factory=time.perf_counter)


class GpuEvaluator:
    """Compile ahead in a pool of processes, measure in a restartable child process.

    Args:
        device_index: the GPU the measuring child owns, among those ``CUDA_VISIBLE_DEVICES``
            leaves visible.
        budget_ms: kernel time per timed block when re-measuring (``compare``).
        screen_budget_ms: kernel time per timed block when a study screens a candidate.
        compile_workers: compiler processes (default: every core but one) when the evaluator
            has pools of its own.
        pools: compile pools shared with the evaluators of other GPUs (``tuner.run.multi_gpu``);
            they are closed by whoever made them. None: pools of its own.
        sharers: how many evaluators compile on ``pools``; each prepares its share of them.
    """

    families: tuple[str, ...] = ()  # any family

    def __init__(
        self,
        device_index: int = 0,
        budget_ms: float = 100.0,
        run_timeout_s: float = 60.0,
        screen_budget_ms: float = SCREEN_BUDGET_MS,
        compile_workers: int | None = None,
        pools: CompilePools | None = None,
        sharers: int = 1,
    ) -> None:
        if importlib.util.find_spec("cupy") is None:  # say so here, not in a child's traceback
            raise ImportError("CuPy is not installed: pip install 'gemmtune[gpu]'")
        self.device_index = device_index
        self.budget_ms = budget_ms
        self.screen_budget_ms = screen_budget_ms
        self.run_timeout_s = run_timeout_s
        self._ctx = mp.get_context("spawn")
        self._proc: Any = None
        self._conn: Connection | None = None
        self.restarts = 0
        self._outstanding: deque[_Outstanding] = deque()
        self._probed = False  # :meth:`probe` asks the worker once
        self._rates: DeviceRates | None = None
        self.device, self.provenance = self._start()
        self._own_pools = pools is None
        self.pools = CompilePools(compile_workers, NvrtcCompiler) if pools is None else pools
        self.pool = self.pools.for_arch(self.device.arch)
        self.compiler = self.pool.compiler
        # Candidates worth compiling ahead of the one being measured: one per compiler process
        # (of this evaluator's share of them) and one more, so a process never waits for work.
        self.parallelism = max(1, self.pool.workers // max(1, sharers)) + 1
        self.kind = EvaluatorKind.GPU.value

    def measured_configs(self, shape: Shape) -> set[str] | None:
        return None  # any config

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

    def prepare(self, config: Config) -> None:
        """Start compiling ``config`` on a spare core (nothing if it cannot fit the device, or
        is a vendor library's: nothing compiles)."""
        if not is_vendor(config.family) and static_check(config, self.device).fits:
            self.pool.submit(config)

    def ready(self, config: Config) -> bool:
        return is_vendor(config.family) or self.pool.ready(config)

    def compile(self, config: Config) -> Outcome:
        """The compiled kernel of ``config`` (from the pool, compiled now if not prepared)."""
        return self.pool.result(config)

    def evaluate(self, config: Config, shape: Shape) -> Result:
        return self.finish(self.start(config, shape))

    def start(self, config: Config, shape: Shape) -> Ticket:
        """Compile (or take from the pool) and send the measurement to the worker, without
        waiting for it: the worker queues requests, so the next candidate's starts as soon as
        the last one's ends while this process records and proposes."""
        prov = {**self.provenance, "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        ticket = Ticket(config, shape)
        if is_vendor(config.family):  # the library's own kernels: nothing to compile or check
            request = Measure(config, shape, self.screen_budget_ms)
            self._outstanding.append(_Outstanding(ticket, request, prov, {}, None))
            self._send(request)
            return ticket
        check = static_check(config, self.device)
        if not check.fits:
            ticket.result = Result.failed(config, "pruned", check.problems[0], provenance=prov)
            return ticket
        waited = time.perf_counter()
        compiled = self.compile(config)
        # Where a candidate's time goes: waiting for its compile, then for its measurement.
        prov["compile_wait_s"] = round(time.perf_counter() - waited, 4)
        took = self.pool.took(config)
        if took is not None:  # its compile's own seconds, from submission (queueing included)
            prov["compile_s"] = round(took, 4)
        if self.pool.crashes:  # the compiler processes died this often (each a stall): shown
            prov["compile_crashes"] = self.pool.crashes
        if isinstance(compiled, CompileError):
            ticket.result = Result.failed(config, "compile_failed", str(compiled), provenance=prov)
            return ticket
        occ = compiled.occupancy(self.device)
        smem = compiled.usage.smem_static_bytes + compiled.source.dynamic_smem_bytes
        usage = {"registers": compiled.usage.registers, "smem_bytes": smem}
        rejection = compiled.rejection(self.device)
        if rejection:
            ticket.result = Result.failed(
                config, "pruned", rejection, occupancy=occ.occupancy, provenance=prov, **usage
            )
            return ticket
        request = Measure(compiled, shape, self.screen_budget_ms)
        self._outstanding.append(_Outstanding(ticket, request, prov, usage, occ.occupancy))
        self._send(request)
        return ticket

    def finish(self, ticket: Ticket) -> Result:
        if ticket.result is not None:
            return ticket.result
        entry = self._outstanding[0]
        if entry.ticket is not ticket:
            raise RuntimeError("finish tickets in the order they were started")
        reply = self._receive(self.run_timeout_s)
        self._outstanding.popleft()
        if reply.get("status") in ("timeout", "launch_failed"):
            self._resend_outstanding()
        config, shape, prov = ticket.config, ticket.shape, entry.provenance
        prov["measure_s"] = round(time.perf_counter() - entry.sent, 4)
        if reply.get("vendor"):  # the algorithm a vendor config ran: what an answer replays
            prov["vendor"] = reply["vendor"]
        ms, base = reply.get("ms"), reply.get("cublas_ms")
        return Result(
            config.name,
            config.family,
            config.as_dict(),
            reply["status"],
            reply.get("reason"),
            ms=ms,
            tflops=shape.tflops(ms),
            cublas_ms=base,
            cublas_tflops=shape.tflops(base),
            ratio=base / ms if ms and base else None,
            rel_error=reply.get("rel_error"),
            occupancy=entry.occupancy,
            provenance=prov,
            evaluator=self.kind,  # timed here, on the device
            **entry.usage,
        )

    def compare(
        self,
        configs: Sequence[Config],
        shape: Shape,
        rounds: int,
        budget_ms: float | None = None,
    ) -> list[Comparison]:
        """Re-measure ``configs`` side by side with cuBLAS in ``rounds`` alternating rounds
        (``tuner.gpu.requests.compare``); configs that do not compile or fit come back with
        that status without reaching the worker."""
        if rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {rounds}")
        for config in configs:  # every one compiling at once, not each after the one before
            self.prepare(config)
        answers: dict[int, Comparison] = {}
        kernels: list[tuple[int, CompiledKernel | Config]] = []
        for index, config in enumerate(configs):
            if is_vendor(config.family):  # nothing to compile: the worker asks the library
                kernels.append((index, config))
                continue
            compiled = self.compile(config)
            if isinstance(compiled, CompileError):
                answers[index] = Comparison(config.name, "compile_failed", str(compiled))
                continue
            rejection = compiled.rejection(self.device)
            if rejection:
                answers[index] = Comparison(config.name, "pruned", rejection)
                continue
            kernels.append((index, compiled))
        if kernels:
            blocks = 2 * rounds * len(kernels)
            budget = self.budget_ms if budget_ms is None else budget_ms
            request = Compare(tuple(k for _, k in kernels), shape, rounds, budget)
            reply = self._ask(request, self.run_timeout_s + blocks * COMPARE_BLOCK_TIMEOUT_S)
            replies = reply if isinstance(reply, list) else [reply] * len(kernels)
            for (index, _), answer in zip(kernels, replies, strict=True):
                answers[index] = Comparison(
                    configs[index].name,
                    answer["status"],
                    answer.get("reason"),
                    tuple(answer.get("ms_rounds", ())),
                    tuple(answer.get("cublas_ms_rounds", ())),
                    answer.get("rel_error"),
                    {"vendor": answer["vendor"]} if answer.get("vendor") else {},
                )
        return [answers[i] for i in range(len(configs))]

    def probe(self) -> DeviceRates | None:
        """The device's rates (``tuner.gpu.probes``); None when a probe fails. Probed once per
        evaluator, failure included: every later study of the command reads the first answer
        without asking the worker (so a study prepared beside another's measurements,
        ``tuner.run.lookahead``, never shares the worker's pipe)."""
        if not self._probed:
            reply = self._ask(Probe(), PROBE_TIMEOUT_S)
            self._rates = reply if isinstance(reply, DeviceRates) else None
            self._probed = True
        return self._rates

    def _ask(self, request: object, timeout_s: float) -> Any:
        """Send one request and wait up to ``timeout_s`` for its reply (no measurement may be
        outstanding: replies come back in the order requests were sent)."""
        if self._outstanding:
            raise RuntimeError("finish every started candidate before comparing or probing")
        self._send(request)
        return self._receive(timeout_s)

    def _send(self, request: object) -> None:
        assert self._conn is not None
        # A worker that is gone is found by _receive, which restarts it and says so.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
            self._conn.send(request)

    def _receive(self, timeout_s: float) -> Any:
        """The reply to the oldest request sent, waiting up to ``timeout_s``; a worker that
        dies or misses the deadline is replaced (the reply is then a failure dict)."""
        assert self._conn is not None
        try:
            if not self._conn.poll(timeout_s):
                self._restart()
                return {"status": "timeout", "reason": f"no answer within {timeout_s:.0f} s"}
            reply: Any = self._conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError) as exc:
            code = self._exit_code()
            self._restart()
            return {"status": "launch_failed", "reason": f"worker died (exit {code}): {exc!r}"}
        if isinstance(reply, dict) and reply.get("status") == "launch_failed":
            self._restart()
        return reply

    def _resend_outstanding(self) -> None:
        """After a restart: the requests the old worker took with it go to the new one."""
        for entry in self._outstanding:
            entry.sent = time.perf_counter()
            self._send(entry.request)

    def close(self) -> None:
        if self._own_pools:
            self.pools.close()
        if self._conn is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                self._conn.send(None)
        if self._proc is not None:
            self._proc.join(timeout=10)
        self._kill()
