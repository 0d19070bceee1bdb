"""Compiling ahead: a pool of compiler processes fed with the configs a study will measure next.

NVRTC compiles inside the calling process, so a pool of worker processes (none touches the GPU)
compiles as many candidates at once as there are cores, while the GPU measures the ones already
built. nvcc runs in subprocesses of its own, so threads are enough for it.

A compiler process that dies (a crash inside NVRTC) breaks the whole process pool, and every
compile in flight with it. The pool is rebuilt and the configs that were in flight are compiled
again, each alone in a process of its own: a second crash there names the config that causes
it, which becomes a ``CompileError``; the others compile normally. No config is
lost, and the study goes on.

Several studies may feed one pool at once (one per GPU, ``tuner.run.multi_gpu``): the pool is
thread-safe, and a config two of them submit is compiled once.
"""

from __future__ import annotations

import functools
import itertools
import multiprocessing as mp
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from threadpoolctl import threadpool_limits

from tuner.core.config import Config
from tuner.kernels.compile import CompiledKernel, CompileError, Compiler
from tuner.kernels.render import render

Outcome = CompiledKernel | CompileError
KEPT_TIMES = 4096  # compile times kept for :meth:`CompilePool.took`
# Compiled kernels whose answer nobody took (a first proposal guessed at a study's start that
# was not proposed, a finalist's extra that did not become one) kept at most: past this many the
# oldest are dropped. One asked for later is compiled again on demand, from the disk cache.
KEPT_UNTAKEN = 256
# Compiled kernels whose answer was taken, kept at most (the latest taken): a study's finalists
# were measured moments before, and their re-measurement finds their kernels here instead of
# queueing behind other compiles for a trip to a compiler process and the disk cache.
KEPT_TAKEN = 256


def compile_config(compiler: Compiler, config: Config) -> Outcome:
    """Render and compile one config; a compile error is returned, not raised."""
    try:
        return compiler.compile(render(config))
    except CompileError as exc:
        return exc


def _load_compiler(compiler: Compiler) -> str:
    return compiler.version  # NVRTC's version: loads the library in the worker


def compile_process_setup() -> None:
    """Run first in each compiler process, before NVRTC loads: NVRTC's own cache off.

    NVRTC 12.9 and newer keeps compiles in the driver's cache (``~/.nv/ComputeCache``) and
    answers a source it compiled before in milliseconds, with no ptxas report in its log. The
    resources of such a kernel were then read by loading it (``tuner.gpu.nvrtc.NvrtcCompiler``),
    which makes a CUDA context in the compile process: on two H200 (2026-11-28), with up to 30
    compile processes doing so at a study's start, its first compiles took up to 7 s
    (``benchmarks/results/h200x2-study-rows-2026-11-28b.json``). The project's kernel cache
    (``tuner.kernels.compile``) keeps every cubin with its report, so that cache is not lost.
    """
    os.environ["CUDA_CACHE_DISABLE"] = "1"


def one_blas_thread() -> threadpool_limits:
    """Limit this process's BLAS to one thread (the returned object keeps the limit).

    While the compiler processes keep every core but one busy, a multithreaded BLAS in the study
    process waits for cores they hold: one ridge solve of the study's correction (a few hundred
    unknowns) took 54 ms on the 16-core H100 machine
    (``benchmarks/results/h100-search-throughput-profile-2026-11-24.txt``).
    """
    import numpy  # noqa: F401  (loads the BLAS to limit)

    return threadpool_limits(limits=1, user_api="blas")


def default_workers(gpus: int = 1) -> int:
    """Every core but one per GPU (which measures and runs its study), at least one."""
    return max(1, (os.cpu_count() or 2) - gpus)


def host_share(gpus_on_host: int) -> int:
    """Compiler processes of one worker process among ``gpus_on_host`` (one per GPU, each with
    pools of its own): its GPU's share of the host's cores, less the core that measures and runs
    its study; at least one. Workers that each took every core would keep several times as many
    compiles running as there are cores, and each would wait for the others'."""
    return max(1, (os.cpu_count() or 2) // max(1, gpus_on_host) - 1)


class CompilePool:
    """Compiles configs in the background; :meth:`result` waits for one.

    ``in_processes`` (default: for a compiler that runs in-process, NVRTC) runs compiles in spawned
    worker processes, else in threads. Thread-safe: the studies of several GPUs may share it.
    """

    def __init__(
        self, compiler: Compiler, workers: int | None = None, in_processes: bool | None = None
    ) -> None:
        self.compiler = compiler
        self.workers = workers or default_workers()
        self.in_processes = compiler.in_process if in_processes is None else in_processes
        self._pool: Executor | None = None
        self._pending: dict[str, tuple[Config, Future[Outcome]]] = {}
        # Seconds from a config's submission to its compile's end (waiting for a free process
        # included), kept until read (:meth:`took`), the latest KEPT_TIMES of them (a config
        # compiled and never measured is not read): where a study's candidates wait.
        self._took: dict[str, float] = {}
        self._taken: OrderedDict[str, CompiledKernel] = OrderedDict()  # the latest KEPT_TAKEN
        self._lock = threading.RLock()  # guards _pool, _pending, crashes and the times
        self.crashes = 0
        self._blas_limit: threadpool_limits | None = None

    def _executor(self) -> Executor:
        with self._lock:
            if self._pool is None:
                self._pool = self._new_executor(self.workers)
            return self._pool

    def _new_executor(self, workers: int) -> Executor:
        if self.in_processes:
            return ProcessPoolExecutor(
                max_workers=workers,
                mp_context=mp.get_context("spawn"),
                initializer=compile_process_setup,
            )
        return ThreadPoolExecutor(max_workers=workers)

    def submit(self, config: Config) -> None:
        """Start compiling ``config`` (nothing if it is already pending or compiled)."""
        with self._lock:
            if config.name not in self._pending and config.name not in self._taken:
                start = time.perf_counter()  # before the submit: a thread may start at once
                future = self._executor().submit(compile_config, self.compiler, config)
                self._pending[config.name] = (config, future)
                future.add_done_callback(functools.partial(self._done, config.name, start))
                self._drop_untaken()

    def _drop_untaken(self) -> None:
        """Past ``KEPT_UNTAKEN`` configs held, drop the oldest finished ones (a standing worker
        would otherwise keep every kernel it compiled and never measured)."""
        excess = len(self._pending) - KEPT_UNTAKEN
        if excess > 0:  # usually one: the scan stops at the oldest finished
            finished = (name for name, (_, f) in self._pending.items() if f.done())
            for name in list(itertools.islice(finished, excess)):
                del self._pending[name]

    def _done(self, name: str, start: float, _: Future[Outcome]) -> None:
        # A config is submitted again only once its answer was taken, so its earlier future
        # is done by then: the time set here is always its latest submission's.
        with self._lock:
            self._took[name] = time.perf_counter() - start
            while len(self._took) > KEPT_TIMES:
                del self._took[next(iter(self._took))]  # the oldest

    def warm(self) -> None:
        """Start every worker now (each imports its compiler once), so the first candidates
        do not wait for process start-up."""
        if self.in_processes:
            self._blas_limit = one_blas_thread()
            executor = self._executor()
            for _ in range(self.workers):
                executor.submit(_load_compiler, self.compiler)

    def ready(self, config: Config) -> bool:
        """True unless ``config`` is still compiling (a kernel taken is kept, and a config
        never submitted, or taken and no longer kept, is compiled on demand by :meth:`result`,
        from the disk cache)."""
        with self._lock:
            entry = self._pending.get(config.name)
        return entry is None or entry[1].done()

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def result(self, config: Config) -> Outcome:
        """The compiled kernel of ``config`` (submitting it first if needed), or its error.

        Every study that submitted ``config`` and asks before the first answer is taken gets
        that answer, and so does a later one while the kernel is among the latest
        :data:`KEPT_TAKEN` taken; past those it is compiled again (from the disk cache,
        ``tuner.kernels.compile``). An error is not kept: a later request tries again.
        """
        with self._lock:  # one hold: a kernel taken meanwhile by another study is not missed
            kept = self._taken.get(config.name)
            if kept is not None:
                self._taken.move_to_end(config.name)
                return kept
            self.submit(config)
            future = self._pending[config.name][1]
        try:
            outcome = future.result()
        except BrokenProcessPool:
            self._recover(future)
            with self._lock:
                entry = self._pending.get(config.name)
            # Settled by the recovery; or already taken by another study: compiled alone.
            outcome = entry[1].result() if entry else self._compile_alone(config)
        with self._lock:
            self._pending.pop(config.name, None)
            if isinstance(outcome, CompiledKernel):
                self._taken[config.name] = outcome
                self._taken.move_to_end(config.name)
                while len(self._taken) > KEPT_TAKEN:
                    self._taken.popitem(last=False)  # the least recently taken
        return outcome

    def took(self, config: Config) -> float | None:
        """Seconds from ``config``'s submission to the end of its compile (None: not compiled
        by this pool since it was last submitted); read once, after :meth:`result`."""
        with self._lock:
            return self._took.pop(config.name, None)

    def _recover(self, broken: Future[Outcome]) -> None:
        """After a crash: a fresh pool for new work, and every config that was in flight
        compiled again alone, so that a second crash names the config that causes it (once,
        however many studies met the crash: ``broken`` is the future one of them waited on).
        The suspects compile side by side, as many at once as the pool has workers, each in a
        process of its own: one after another, a crash with every worker busy cost a process
        start and a compile per config in flight, with the cores idle."""
        with self._lock:
            if not any(future is broken for _, future in self._pending.values()):
                return  # another study recovered already: the config has a new future
            self.crashes += 1
            self._shutdown(self._pool)
            self._pool = None
            suspects = [
                (name, config)
                for name, (config, future) in self._pending.items()
                if not (future.done() and future.exception() is None)  # not done before it
            ]
            with ThreadPoolExecutor(max_workers=max(1, self.workers)) as side_by_side:
                outcomes = side_by_side.map(lambda s: self._compile_alone(s[1]), suspects)
                for (name, config), outcome in zip(suspects, outcomes, strict=True):
                    settled: Future[Outcome] = Future()
                    settled.set_result(outcome)
                    self._pending[name] = (config, settled)

    def _compile_alone(self, config: Config) -> Outcome:
        """Compile a crash suspect in a process of its own (waiting for it here)."""
        with self._new_executor(1) as alone:
            try:
                return alone.submit(compile_config, self.compiler, config).result()
            except BrokenProcessPool:
                return CompileError(f"the compiler process crashed compiling {config.name}")

    @staticmethod
    def _shutdown(pool: Executor | None) -> None:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Stop the workers; compiles still pending are dropped (their cubins, if written,
        stay in the cache)."""
        with self._lock:
            self._shutdown(self._pool)
            self._pool = None
            self._pending.clear()
            self._took.clear()
            self._taken.clear()
            if self._blas_limit is not None:  # the cores are free again
                self._blas_limit.restore_original_limits()
                self._blas_limit = None


class CompilePools:
    """One NVRTC pool per GPU architecture, shared by the evaluators of a host's GPUs: the
    cores compile for all of them, and a config compiled for one is not compiled again for
    another of the same architecture. Thread-safe."""

    def __init__(self, workers: int | None, compiler: Callable[[str], Compiler]) -> None:
        self.workers = workers or default_workers()
        self.compiler = compiler  # the compiler for an architecture
        self._pools: dict[str, CompilePool] = {}
        self._lock = threading.Lock()

    def for_arch(self, arch: str) -> CompilePool:
        """The pool compiling for ``arch`` (started, and its workers warmed, on first use)."""
        with self._lock:
            pool = self._pools.get(arch)
            if pool is None:
                pool = self._pools[arch] = CompilePool(self.compiler(arch), self.workers)
                pool.warm()
            return pool

    def close(self) -> None:
        with self._lock:
            for pool in self._pools.values():
                pool.close()
            self._pools.clear()
