"""On a GPU machine, NVRTC's log carries ptxas's resource report for every representative
kernel, compiled once and again in a compile pool's process (NVRTC's own cache, which answers a
repeat without the report, is off there), so no compile process loads a kernel to read its
resources: a load makes a CUDA context in that process, and 30 of them at once stalled the
first compiles of a two-GPU study."""

from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor

import pytest

from tuner.gpu.nvrtc import NvrtcCompiler
from tuner.kernels.compile import parse_ptxas_report
from tuner.kernels.compile_pool import compile_process_setup
from tuner.kernels.families import parse_config
from tuner.kernels.render import render
from tuner.kernels.representative import REPRESENTATIVE

pytestmark = pytest.mark.gpu


def _without_report(arch: str, names: list[str]) -> list[str]:
    """Of ``names``, built twice each, those whose log lacked the report at either build."""
    compiler = NvrtcCompiler(arch)
    missing = []
    for name in names:
        source = render(parse_config(name))
        for _ in range(2):
            _, log = compiler._build(source)
            try:
                parse_ptxas_report(log, source.entry)
            except Exception:
                missing.append(name)
                break
    return missing


def _primary_context_active() -> bool:
    from cuda.bindings import driver

    driver.cuInit(0)
    _, _, active = driver.cuDevicePrimaryCtxGetState(0)
    return bool(active)


def _compile_then_context(arch: str, names: list[str]) -> bool:
    """Compile each of ``names`` as a study's process does, each into a new project cache;
    then whether this process holds a CUDA context."""
    import os
    import tempfile

    compiler = NvrtcCompiler(arch)
    for name in names:
        os.environ["GEMMTUNE_CACHE_DIR"] = tempfile.mkdtemp()
        compiler.compile(render(parse_config(name)))
    return _primary_context_active()


def _pool_process() -> ProcessPoolExecutor:
    """One fresh process set up as the compile pool sets up its own."""
    context = mp.get_context("spawn")
    return ProcessPoolExecutor(1, context, initializer=compile_process_setup)


def test_nvrtc_reports_each_familys_resources_again_and_again() -> None:
    names = [configs[0] for configs in REPRESENTATIVE.values()]
    with _pool_process() as process:
        assert process.submit(_without_report, "sm_90", names).result() == []


def test_a_compile_process_makes_no_cuda_context() -> None:
    pytest.importorskip("cuda.bindings")
    names = REPRESENTATIVE["dmma"] + REPRESENTATIVE["dmma_pipelined"] + REPRESENTATIVE["warptile"]
    with _pool_process() as process:  # each compiled twice: the second finds no project cache
        assert process.submit(_compile_then_context, "sm_90", names + names).result() is False
