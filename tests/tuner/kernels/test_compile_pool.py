"""The compile pool: compiles ahead in worker processes, and survives a compiler that crashes."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from tuner.core.config import Config
from tuner.kernels import compile_pool
from tuner.kernels.compile import CompiledKernel, CompileError, ResourceUsage
from tuner.kernels.compile_pool import CompilePool, Outcome
from tuner.kernels.families import parse_config
from tuner.kernels.render import KernelSource

CONFIGS = [
    parse_config(f"warptile_bm64_bn64_bk{bk}_wm32_wn32_wni1_tm4_tn4_t128") for bk in (8, 16, 32)
] + [parse_config(f"warptile_bm128_bn64_bk{bk}_wm64_wn32_wni1_tm4_tn4_t128") for bk in (8, 16)]
CRASHER = CONFIGS[2]


class CrashingCompiler:
    """Compiles to a fake cubin in a worker process; the process dies on ``CRASHER`` (as NVRTC
    might), so the whole process pool breaks with every compile in flight."""

    arch = "sm_90"
    version = "fake 1.0"
    in_process = False  # the pool is told where to compile

    def compile(self, source: KernelSource) -> CompiledKernel:
        if source.config.name == CRASHER.name:
            os._exit(11)
        usage = ResourceUsage(64, 0, 0, 0, 0)
        who = f"pid {os.getpid()}"  # which process compiled it
        return CompiledKernel(source, self.arch, who, Path("/nonexistent"), usage, False)


def test_every_config_gets_a_result_and_only_the_crasher_fails() -> None:
    pool = CompilePool(CrashingCompiler(), workers=3, in_processes=True)
    try:
        for config in CONFIGS:
            pool.submit(config)
        outcomes = {config.name: pool.result(config) for config in CONFIGS}
        assert pool.crashes >= 1
        crashed = outcomes.pop(CRASHER.name)
        assert isinstance(crashed, CompileError) and CRASHER.name in str(crashed)
        assert "crashed" in str(crashed)
        assert all(isinstance(o, CompiledKernel) for o in outcomes.values())
        # The pool still works after the crash.
        again = parse_config("warptile_bm64_bn128_bk8_wm32_wn64_wni1_tm4_tn4_t128")
        assert isinstance(pool.result(again), CompiledKernel)
    finally:
        pool.close()


class CrashAwaitingCompiler(CrashingCompiler):
    """As :class:`CrashingCompiler`, but every other config's compile waits until the crasher
    has crashed (a file says so), so that all of them are in flight when the pool breaks."""

    def __init__(self, folder: Path) -> None:
        self.crashed = folder / "crashed"

    def compile(self, source: KernelSource) -> CompiledKernel:
        if source.config.name == CRASHER.name:
            self.crashed.touch()
        else:
            deadline = time.monotonic() + HANG_GUARD_S
            while not self.crashed.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        return super().compile(source)


# Only a guard against a hang: a test that would otherwise wait forever fails after this long.
HANG_GUARD_S = 60.0


def test_after_a_crash_the_suspects_compile_side_by_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each config in flight at the crash is compiled again in a process of its own, several at
    once: a recompile does not end before another has begun (each waits, in its thread of the
    pool, until a second one is under way; one after another, the first would wait in vain)."""
    lock, together = threading.Lock(), threading.Event()
    under_way, most = [0], [0]
    compile_alone = CompilePool._compile_alone

    def side_by_side(self: CompilePool, config: Config) -> Outcome:
        with lock:
            under_way[0] += 1
            most[0] = max(most[0], under_way[0])
            if under_way[0] >= 2:
                together.set()
        together.wait(HANG_GUARD_S)
        try:
            return compile_alone(self, config)
        finally:
            with lock:
                under_way[0] -= 1

    monkeypatch.setattr(CompilePool, "_compile_alone", side_by_side)
    pool = CompilePool(CrashAwaitingCompiler(tmp_path), workers=len(CONFIGS), in_processes=True)
    try:
        for config in CONFIGS:
            pool.submit(config)
        outcomes = {config.name: pool.result(config) for config in CONFIGS}
        assert pool.crashes >= 1
        assert isinstance(outcomes.pop(CRASHER.name), CompileError)
        assert all(isinstance(o, CompiledKernel) for o in outcomes.values())
        assert together.is_set() and most[0] >= 2
    finally:
        pool.close()


def test_compiles_run_in_other_processes_and_are_not_repeated() -> None:
    pool = CompilePool(CrashingCompiler(), workers=2, in_processes=True)
    try:
        safe = [c for c in CONFIGS if c != CRASHER]
        for config in safe:
            pool.submit(config)
            pool.submit(config)  # a second submit of a pending config adds nothing
        assert pool.pending() == len(safe)
        results = [pool.result(c) for c in safe]
        assert all(isinstance(r, CompiledKernel) for r in results)
        assert all(
            isinstance(r, CompiledKernel) and r.compiler != f"pid {os.getpid()}" for r in results
        )
        assert pool.pending() == 0
    finally:
        pool.close()


def _blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_a_warm_process_pool_leaves_this_process_one_blas_thread_until_closed() -> None:
    import numpy  # noqa: F401  (its BLAS is the one limited)

    with threadpool_limits(limits=2, user_api="blas"):
        assert _blas_threads() == {2}
        pool = CompilePool(CrashingCompiler(), workers=1, in_processes=True)
        try:
            pool.warm()
            assert _blas_threads() == {1}  # the compiler processes hold the other cores
        finally:
            pool.close()
        assert _blas_threads() == {2}


class CountingCompiler:
    """Compiles to a fake cubin in a thread, counting the compiles of each config."""

    arch = "sm_90"
    version = "fake 1.0"
    in_process = False  # the pool is told where to compile

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()

    def compile(self, source: KernelSource) -> CompiledKernel:
        with self.lock:
            self.counts[source.config.name] += 1
        usage = ResourceUsage(64, 0, 0, 0, 0)
        return CompiledKernel(source, self.arch, "fake", Path("/nonexistent"), usage, False)


def test_studies_in_threads_share_one_pool() -> None:
    """Two studies (one per GPU) submit the same configs at once: each config is compiled once;
    then both ask for every result at once, and both get one."""
    compiler = CountingCompiler()
    pool = CompilePool(compiler, workers=2, in_processes=False)
    start = threading.Barrier(2)

    def submit_all() -> None:
        start.wait(timeout=30)
        for config in CONFIGS:
            pool.submit(config)

    def take_all() -> list[Outcome]:
        start.wait(timeout=30)
        return [pool.result(config) for config in CONFIGS]

    try:
        with ThreadPoolExecutor(2) as threads:
            for done in [threads.submit(submit_all) for _ in range(2)]:
                done.result(timeout=60)
        assert pool.pending() == len(CONFIGS)
        assert all(isinstance(pool.result(c), CompiledKernel) for c in CONFIGS)
        assert compiler.counts == Counter(c.name for c in CONFIGS)  # once each
        for config in CONFIGS:
            pool.submit(config)
        with ThreadPoolExecutor(2) as threads:
            taken = [threads.submit(take_all) for _ in range(2)]
            results = [outcome.result(timeout=60) for outcome in taken]
        assert all(isinstance(r, CompiledKernel) for rs in results for r in rs)
        assert pool.pending() == 0
    finally:
        pool.close()


class SlowCompiler(CrashingCompiler):
    """Takes ``DELAY_S`` a compile, in threads."""

    DELAY_S = 0.05

    def compile(self, source: KernelSource) -> CompiledKernel:
        time.sleep(self.DELAY_S)
        return super().compile(source)


def test_a_compile_says_how_long_it_took_from_its_submission_once() -> None:
    pool = CompilePool(SlowCompiler(), workers=1, in_processes=False)
    try:
        first, second = CONFIGS[0], CONFIGS[1]
        pool.submit(first)
        pool.submit(second)  # waits for the one worker: its time includes the first's compile
        assert isinstance(pool.result(second), CompiledKernel)
        assert isinstance(pool.result(first), CompiledKernel)
        took_first, took_second = pool.took(first), pool.took(second)
        assert took_first is not None and took_second is not None
        assert took_first >= SlowCompiler.DELAY_S
        assert took_second >= took_first + SlowCompiler.DELAY_S / 2  # waited for the first
        assert pool.took(first) is None  # read once
        assert isinstance(pool.result(CONFIGS[3]), CompiledKernel)  # compiled on demand
        assert pool.took(CONFIGS[3]) is not None
        assert pool.took(CONFIGS[4]) is None  # never submitted
    finally:
        pool.close()


class EnvironmentCompiler(CrashingCompiler):
    """Says, in its compiler field, the process's CUDA_CACHE_DISABLE."""

    def compile(self, source: KernelSource) -> CompiledKernel:
        usage = ResourceUsage(64, 0, 0, 0, 0)
        seen = os.environ.get("CUDA_CACHE_DISABLE", "unset")
        return CompiledKernel(source, self.arch, seen, Path("/nonexistent"), usage, False)


def test_the_compiler_processes_turn_nvrtcs_own_cache_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_CACHE_DISABLE", raising=False)
    pool = CompilePool(EnvironmentCompiler(), workers=2, in_processes=True)
    try:
        outcome = pool.result(CONFIGS[0])
        assert isinstance(outcome, CompiledKernel) and outcome.compiler == "1"
        assert "CUDA_CACHE_DISABLE" not in os.environ  # this process's own is left alone
    finally:
        pool.close()


def test_only_the_latest_compile_times_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compile_pool, "KEPT_TIMES", 2)
    pool = CompilePool(SlowCompiler(), workers=1, in_processes=False)
    try:
        first, second, third = [c for c in CONFIGS if c != CRASHER][:3]
        for config in (first, second, third):  # compiled one after another, never read
            pool.submit(config)
            pool.result(config)
        assert pool.took(first) is None  # the oldest, dropped
        assert pool.took(second) is not None and pool.took(third) is not None
    finally:
        pool.close()


def test_only_the_latest_untaken_kernels_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels compiled and never asked for (a first proposal guessed wrong) are dropped, oldest
    first, past KEPT_UNTAKEN; one asked for after that is compiled again."""
    monkeypatch.setattr(compile_pool, "KEPT_UNTAKEN", 2)
    compiler = CountingCompiler()
    pool = CompilePool(compiler, workers=1, in_processes=False)
    try:
        first, second, third = [c for c in CONFIGS if c != CRASHER][:3]
        for config in (first, second):
            pool.submit(config)
            while not pool.ready(config):
                time.sleep(0.001)
        pool.submit(third)  # three held: the oldest finished one goes
        assert pool.pending() == 2
        assert isinstance(pool.result(second), CompiledKernel)
        assert isinstance(pool.result(first), CompiledKernel)  # dropped: compiled again
        assert compiler.counts[first.name] == 2 and compiler.counts[second.name] == 1
    finally:
        pool.close()


class FailingCompiler(CountingCompiler):
    """Counts its compiles and fails every one (a kernel that does not compile)."""

    def compile(self, source: KernelSource) -> CompiledKernel:
        super().compile(source)
        raise CompileError(f"{source.config.name}: no")


def test_a_taken_kernel_is_kept_for_the_next_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """A finalist's re-measurement asks for a kernel its screening took: it is answered from
    memory, past KEPT_TAKEN the least recently taken one compiles again, and an error is never
    kept (the next request tries again)."""
    monkeypatch.setattr(compile_pool, "KEPT_TAKEN", 2)
    compiler = CountingCompiler()
    pool = CompilePool(compiler, workers=1, in_processes=False)
    try:
        first, second, third = [c for c in CONFIGS if c != CRASHER][:3]
        kernel = pool.result(first)
        pool.submit(first)  # nothing to do: it is kept
        assert pool.pending() == 0 and pool.ready(first)
        assert pool.result(first) is kernel
        pool.result(second)
        pool.result(first)  # taken again: the most recent now
        pool.result(third)  # three taken: the least recently taken, ``second``, goes
        assert compiler.counts == Counter({first.name: 1, second.name: 1, third.name: 1})
        pool.result(second)
        assert compiler.counts[second.name] == 2
    finally:
        pool.close()
    failing = FailingCompiler()
    pool = CompilePool(failing, workers=1, in_processes=False)
    try:
        assert isinstance(pool.result(first), CompileError)
        assert isinstance(pool.result(first), CompileError)
        assert failing.counts[first.name] == 2
    finally:
        pool.close()
