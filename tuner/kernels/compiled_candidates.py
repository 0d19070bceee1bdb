"""From a space to the kernels worth timing: static pruning, then compile and prune on real usage.

Every config ends with a status and, when dropped, the reason: ``pruned`` (broke a resource limit
before or after compiling: spills, no block fits) or ``compile_failed``. Nothing is silently lost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tuner.core.config import Config
from tuner.kernels.compile import CompiledKernel, CompileError, Compiler, compile_many
from tuner.kernels.render import KernelSource, render
from tuner.kernels.resources import Occupancy
from tuner.kernels.space import Space, SpaceCounts


@dataclass(frozen=True)
class CompiledCandidate:
    """One config after compiling: ready to time (status ``ok``) or dropped with a reason."""

    config: Config
    status: str  # "ok", "pruned" or "compile_failed"
    reason: str | None
    kernel: CompiledKernel | None
    occupancy: Occupancy | None


def compile_candidates(
    space: Space,
    compiler: Compiler,
    jobs: int | None = None,
    limit: int | None = None,
    on_done: Callable[[KernelSource, CompiledKernel | CompileError], None] | None = None,
) -> tuple[list[CompiledCandidate], SpaceCounts]:
    """Compile the space's static survivors (the first ``limit`` of them) in parallel."""
    checks, counts = space.evaluate()
    configs = [c.config for c in checks][:limit]
    sources = [render(config) for config in configs]
    results = compile_many(compiler, sources, jobs=jobs, on_done=on_done)
    return [judge(config, r, space) for config, r in zip(configs, results, strict=True)], counts


def judge(config: Config, result: CompiledKernel | CompileError, space: Space) -> CompiledCandidate:
    """Turn one compile result into a candidate with its status."""
    if isinstance(result, CompileError):
        return CompiledCandidate(config, "compile_failed", str(result), None, None)
    occ = result.occupancy(space.device)
    reason = result.rejection(space.device)
    return CompiledCandidate(config, "pruned" if reason else "ok", reason, result, occ)
