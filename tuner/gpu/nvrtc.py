"""NVRTC through CuPy: the compiler on a machine with a GPU, and loading what it built.

nvcc (``tuner.kernels.compile``) needs the CUDA toolkit; NVRTC comes with CuPy, so a GPU machine
compiles without a toolkit install. Both share the on-disk cache of ``CachingCompiler``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

from tuner.core.errors import InputError
from tuner.kernels.compile import (
    LANGUAGE_STANDARD,
    CachingCompiler,
    CompiledKernel,
    CompileError,
    Compiler,
    NvccCompiler,
    ResourceUsage,
    cache_root,
    cubin_copy,
    parse_ptxas_report,
    write_atomic,
)
from tuner.kernels.render import KernelSource

NVRTC_OPTIONS = (LANGUAGE_STANDARD, "--ptxas-options=-v")


class NvrtcCompiler(CachingCompiler):
    """NVRTC through CuPy: the compiler on a GPU machine (no toolkit install needed)."""

    in_process = True  # NVRTC compiles inside the calling process

    def __init__(self, arch: str) -> None:
        self.arch = arch
        self.options = NVRTC_OPTIONS

    @property
    def version(self) -> str:
        from cupy.cuda import nvrtc

        major, minor = nvrtc.getVersion()
        return f"nvrtc {major}.{minor}"

    def _build(self, source: KernelSource) -> tuple[bytes, str]:
        options = (f"-arch={self.target(source)}", *self.options)
        return nvrtc_cubin(source.code, f"{source.entry}.cu", options)

    def _usage(self, log: str, source: KernelSource, cubin: Path) -> ResourceUsage:
        """ptxas's report when NVRTC's log carries it, else the loaded function's attributes
        (the driver reports spills only as local memory, so all of it counts as stack)."""
        try:
            return parse_ptxas_report(log, source.entry)
        except CompileError:
            import cupy

            try:
                attrs = cupy.RawModule(path=str(cubin)).get_function(source.entry).attributes
            except Exception as exc:  # loading makes a CUDA context here: the device may be full
                # The candidate fails to compile, with the reason; an exception here would end
                # the whole study of the process that waits for this compile.
                raise CompileError(
                    f"the kernel's resources are not in NVRTC's log and loading it to read them "
                    f"failed: {type(exc).__name__}: {exc}",
                    log,
                ) from exc
            return ResourceUsage(
                registers=int(attrs["num_regs"]),
                smem_static_bytes=int(attrs["shared_size_bytes"]),
                stack_bytes=int(attrs["local_size_bytes"]),
                spill_store_bytes=0,
                spill_load_bytes=0,
            )


def plain_cubin(code: str, arch: str) -> Path:
    """The cubin of a plain CUDA file (``tuner.gpu.plain_kernels``; no family, no ptxas report
    kept), compiled by NVRTC for ``arch`` once and kept in the kernel cache's ``plain`` folder.

    Straight to a cubin: CuPy's own ``RawModule(code=...)`` took about a second a kernel on an
    empty cache on the lent H200, where NVRTC took 0.07 s for the probe's FMA chains and 0.15 s
    for its FP64 tensor-core chains (``h200-start-parts-2026-11-29-0e0579c.json``); a measuring
    process's start compiled several such kernels one after another before its first candidate."""
    from cupy.cuda import nvrtc

    major, minor = nvrtc.getVersion()
    options = (f"-arch={arch}", LANGUAGE_STANDARD)
    key = json.dumps([code, f"nvrtc {major}.{minor}", options])
    path = cache_root() / "plain" / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.cubin"
    if path.is_file():
        return path
    cubin, _ = nvrtc_cubin(code, "plain.cu", options)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, cubin)
    return path


def nvrtc_cubin(code: str, name: str, options: tuple[str, ...]) -> tuple[bytes, str]:
    """``code`` compiled by NVRTC to (cubin, NVRTC's log); a :class:`CompileError` carrying the
    log and its first error line when it does not compile."""
    from cupy.cuda import nvrtc

    prog = nvrtc.createProgram(code, name, (), ())
    try:
        try:
            nvrtc.compileProgram(prog, options)
        except nvrtc.NVRTCError as exc:
            log = nvrtc.getProgramLog(prog)
            first = next((ln for ln in log.splitlines() if "error" in ln), str(exc))
            raise CompileError(f"nvrtc failed: {first}", log) from exc
        return bytes(nvrtc.getCUBIN(prog)), nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)


COMPILERS = ("auto", "nvcc", "nvrtc")


def choose_compiler(arch: str, name: str = "auto") -> Compiler:
    """The compiler called ``name``; ``auto`` is NVRTC where a CUDA GPU is present, else nvcc.

    Raises:
        InputError: an unknown name, or a compiler that is not installed here.
    """
    if name == "auto":
        name = "nvrtc" if gpu_present() else "nvcc"
    if name == "nvcc":
        if shutil.which("nvcc") is None:
            raise InputError(
                "--compiler nvcc needs the CUDA toolkit's nvcc on PATH, and it is not there; "
                "install the CUDA toolkit, or use --compiler nvrtc on a machine with CuPy"
            )
        return NvccCompiler(arch)
    if name == "nvrtc":
        if importlib.util.find_spec("cupy") is None:
            raise InputError(
                "--compiler nvrtc needs CuPy (NVRTC comes with it), and it is not installed: "
                "pip install 'gemmtune[gpu]', or use --compiler nvcc"
            )
        return NvrtcCompiler(arch)
    raise InputError(f"--compiler must be one of {', '.join(COMPILERS)}, got {name!r}")


def gpu_present() -> bool:
    """Whether CuPy is installed and sees at least one CUDA device."""
    try:
        import cupy

        return bool(cupy.cuda.runtime.getDeviceCount() > 0)
    except Exception:
        return False


def load_kernel(compiled: CompiledKernel, copy: int = 0) -> Any:
    """Load a cubin on the current GPU as a CuPy RawKernel with its dynamic smem limit set.

    CuPy loads a cubin path once per process and device: every load of one path shares the
    module and its module-scope state (the split-K counters). ``copy`` N > 0 loads a copy of
    the cubin beside it (``kernel.copyN.cubin``, written on first use), a module of its own.
    """
    import cupy

    module = cupy.RawModule(path=str(cubin_copy(compiled.cubin, copy)))
    kernel = module.get_function(compiled.source.entry)
    if compiled.source.dynamic_smem_bytes:
        kernel.max_dynamic_shared_size_bytes = compiled.source.dynamic_smem_bytes
    return kernel
