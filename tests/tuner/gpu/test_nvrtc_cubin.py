"""NVRTC to a cubin (``tuner.gpu.nvrtc.nvrtc_cubin``) and the plain kernels' cache
(``plain_cubin``) without a GPU: a fake NVRTC module stands in for CuPy's, so what is asked of
it, what comes back and what is kept can be checked here; the real compiles run in the GPU
tests (``tests/gpu/test_worker_start.py``)."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tuner.gpu.nvrtc import nvrtc_cubin, plain_cubin
from tuner.kernels.compile import CompileError


class FakeNvrtc(types.ModuleType):
    """The calls ``nvrtc_cubin`` makes of ``cupy.cuda.nvrtc``: a program per compile, compiled
    with the options given, refused when the code holds ``broken``."""

    class NVRTCError(Exception):
        pass

    def __init__(self) -> None:
        super().__init__("cupy.cuda.nvrtc")
        self.compiled: list[tuple[str, tuple[str, ...]]] = []
        self.live: set[int] = set()
        self.codes: dict[int, str] = {}

    def getVersion(self) -> tuple[int, int]:
        return (13, 0)

    def createProgram(self, code: str, name: str, headers: Any, names: Any) -> int:
        handle = len(self.codes) + 1
        self.codes[handle] = code
        self.live.add(handle)
        return handle

    def compileProgram(self, prog: int, options: tuple[str, ...]) -> None:
        self.compiled.append((self.codes[prog], tuple(options)))
        if "broken" in self.codes[prog]:
            raise self.NVRTCError("NVRTC_ERROR_COMPILATION")

    def getProgramLog(self, prog: int) -> str:
        if "broken" in self.codes[prog]:
            return "plain.cu(3): warning: unused\nplain.cu(4): error: identifier undefined\n"
        return "ptxas info: 0 bytes spill stores\n"

    def getCUBIN(self, prog: int) -> bytes:
        return b"\x7fELF" + self.codes[prog].encode()

    def destroyProgram(self, prog: int) -> None:
        self.live.discard(prog)


@pytest.fixture
def nvrtc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeNvrtc:
    fake = FakeNvrtc()
    cuda = types.ModuleType("cupy.cuda")
    cuda.nvrtc = fake  # type: ignore[attr-defined]
    cupy = types.ModuleType("cupy")
    cupy.cuda = cuda  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.nvrtc", fake)
    monkeypatch.setenv("GEMMTUNE_CACHE_DIR", str(tmp_path))
    return fake


def test_a_compile_gives_the_cubin_and_the_log_and_frees_the_program(nvrtc: FakeNvrtc) -> None:
    cubin, log = nvrtc_cubin("kernel one", "k.cu", ("-arch=sm_90",))
    assert cubin == b"\x7fELFkernel one" and "ptxas info" in log
    assert nvrtc.compiled == [("kernel one", ("-arch=sm_90",))] and not nvrtc.live


def test_a_failed_compile_names_its_first_error_and_keeps_the_log(nvrtc: FakeNvrtc) -> None:
    first_error = r"nvrtc failed: plain\.cu\(4\): error: identifier"
    with pytest.raises(CompileError, match=first_error) as err:
        nvrtc_cubin("broken kernel", "k.cu", ("-arch=sm_90",))
    assert "warning: unused" in err.value.log
    assert not nvrtc.live


def test_a_plain_cubin_is_compiled_once_per_code_and_architecture(
    nvrtc: FakeNvrtc, tmp_path: Path
) -> None:
    first = plain_cubin("gate", "sm_90")
    assert first.parent == tmp_path / "plain" and first.read_bytes() == b"\x7fELFgate"
    assert plain_cubin("gate", "sm_90") == first
    assert len(nvrtc.compiled) == 1  # the second call read the cache
    other = plain_cubin("gate", "sm_80")
    assert other != first and nvrtc.compiled[-1][1][0] == "-arch=sm_80"
    assert plain_cubin("sums", "sm_90") not in (first, other)
    assert len(nvrtc.compiled) == 3


def test_a_plain_kernel_that_does_not_compile_leaves_nothing_in_the_cache(
    nvrtc: FakeNvrtc, tmp_path: Path
) -> None:
    with pytest.raises(CompileError):
        plain_cubin("broken", "sm_90")
    assert not list(tmp_path.rglob("*.cubin"))
