"""On a GPU machine, NVRTC's log carries ptxas's resource report for every representative
kernel, so no compile process loads a kernel to read its resources (a load makes a CUDA
context in that process: 30 of them at once stalled the first compiles of a two-GPU study)."""

from __future__ import annotations

import multiprocessing as mp
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from tuner.gpu.nvrtc import NvrtcCompiler
from tuner.kernels.compile import parse_ptxas_report
from tuner.kernels.families import parse_config
from tuner.kernels.render import render
from tuner.kernels.representative import REPRESENTATIVE

pytestmark = pytest.mark.gpu


def _without_report(arch: str, names: list[str]) -> list[str]:
    compiler = NvrtcCompiler(arch)
    missing = []
    for name in names:
        source = render(parse_config(name))
        _, log = compiler._build(source)
        try:
            parse_ptxas_report(log, source.entry)
        except Exception:
            missing.append(name)
    return missing


def _primary_context_active() -> bool:
    from cuda.bindings import driver

    driver.cuInit(0)
    _, _, active = driver.cuDevicePrimaryCtxGetState(0)
    return bool(active)


def _compile_then_context(arch: str, names: list[str]) -> bool:
    compiler = NvrtcCompiler(arch)
    for name in names:
        compiler.compile(render(parse_config(name)))
    return _primary_context_active()


def test_nvrtc_reports_every_representative_kernels_resources() -> None:
    names = [name for configs in REPRESENTATIVE.values() for name in configs]
    assert _without_report("sm_90", names) == []


def test_a_compile_process_makes_no_cuda_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("cuda.bindings")
    monkeypatch.setenv("GEMMTUNE_CACHE_DIR", str(tmp_path))  # compiled here, not found cached
    monkeypatch.setenv("CUDA_CACHE_DISABLE", "1")
    names = REPRESENTATIVE["dmma"] + REPRESENTATIVE["dmma_pipelined"] + REPRESENTATIVE["warptile"]
    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as fresh:
        assert fresh.submit(_compile_then_context, "sm_90", names).result() is False
