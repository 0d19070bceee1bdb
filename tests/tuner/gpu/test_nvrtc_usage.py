"""NVRTC's compiles read a kernel's resources from ptxas's report; where the log lacks it they
load the kernel, which makes a CUDA context in the compile process. That load failing must
fail the candidate (a compile error with the reason), not raise in the study waiting for it."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from tuner.gpu.nvrtc import NvrtcCompiler
from tuner.kernels.compile import CompileError


class _FullDevice:
    def __init__(self, path: str) -> None:
        raise RuntimeError("cudaErrorMemoryAllocation: out of memory")


def test_a_failed_load_for_the_resources_is_a_compile_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(RawModule=_FullDevice))
    compiler = object.__new__(NvrtcCompiler)  # _usage reads nothing of the instance
    source = types.SimpleNamespace(entry="gemm_kernel")
    with pytest.raises(CompileError, match="out of memory") as caught:
        compiler._usage("no ptxas report here", source, tmp_path / "kernel.cubin")  # type: ignore[arg-type]
    assert caught.value.log == "no ptxas report here"
