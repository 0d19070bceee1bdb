"""CUDA source -> cubin + the compiler's own resource report, cached on disk.

Two compilers: NVRTC through CuPy on a machine with a GPU (``tuner.gpu.nvrtc``, beside the other
CuPy code), ``nvcc`` everywhere else (CI builds for sm_90 without a device). Both run ptxas
verbosely and we read registers, shared memory, stack frame and spill bytes from its report; the
resource model (``tuner.kernels.resources``) turns those into real occupancy. A cubin is cached
under a key made of everything that changes it: source, architecture, compiler and version, options.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

from tuner.kernels.render import KernelSource
from tuner.kernels.resources import DeviceLimits, Occupancy, occupancy

# The C++ dialect of the templates, for either compiler (and in a launch recipe).
LANGUAGE_STANDARD = "-std=c++17"
# -O3 is the default; IEEE semantics stay (no fast math: results must match cuBLAS in FP32).
NVCC_OPTIONS = ("-O3", LANGUAGE_STANDARD, "-Xptxas=-v", "-diag-suppress=177")


def compile_target(arch: str, arch_specific: bool) -> str:
    """The architecture a kernel is compiled for on a GPU of ``arch`` (``sm_90``): its
    architecture-specific variant (``sm_90a``) for a family that needs one
    (``Family.arch_specific``), else ``arch`` itself."""
    if arch_specific and not arch.endswith("a"):
        return arch + "a"
    return arch


class CompileError(RuntimeError):
    """The compiler rejected a kernel; ``log`` holds its output."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log

    def __reduce__(self) -> tuple[type[CompileError], tuple[str, str]]:
        return (CompileError, (str(self), self.log))  # keep the log across process pools


@dataclass(frozen=True)
class ResourceUsage:
    """Per-kernel resources as the compiler reports them."""

    registers: int
    smem_static_bytes: int
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int

    @property
    def spills(self) -> bool:
        return bool(self.stack_bytes or self.spill_store_bytes or self.spill_load_bytes)


@dataclass(frozen=True)
class CompiledKernel:
    """A cubin on disk plus what it costs the chip."""

    source: KernelSource
    arch: str
    compiler: str
    cubin: Path
    usage: ResourceUsage
    cached: bool

    def occupancy(self, dev: DeviceLimits) -> Occupancy:
        """Real occupancy from the compiler's registers and all shared memory the launch uses."""
        smem = self.usage.smem_static_bytes + self.source.dynamic_smem_bytes
        return occupancy(self.source.threads, self.usage.registers, smem, dev)

    def rejection(self, dev: DeviceLimits) -> str | None:
        """Why this kernel must not be timed (spills, or no block fits), or None."""
        u = self.usage
        if u.spills:
            return (
                f"spills: {u.spill_store_bytes} B stores, {u.spill_load_bytes} B loads, "
                f"{u.stack_bytes} B stack frame"
            )
        occ = self.occupancy(dev)
        if occ.blocks_per_sm < 1:
            return (
                f"no block fits on an SM with {u.registers} registers (limited by {occ.limited_by})"
            )
        return None


_ENTRY_RE = re.compile(r"(?:Compiling entry function|Function properties for) '?([A-Za-z0-9_]+)'?")
_REGS_RE = re.compile(r"Used (\d+) registers")
_SMEM_RE = re.compile(r"(\d+) bytes smem")
_SPILL_RE = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)


def parse_ptxas_report(log: str, entry: str) -> ResourceUsage:
    """Read one entry function's resources from ``ptxas -v`` output."""
    current = None
    regs = smem = stack = stores = loads = None
    for line in log.splitlines():
        match = _ENTRY_RE.search(line)
        if match:
            current = match.group(1)
            continue
        if current != entry:
            continue
        if (m := _SPILL_RE.search(line)) is not None:
            stack, stores, loads = (int(g) for g in m.groups())
        if (m := _REGS_RE.search(line)) is not None:
            regs = int(m.group(1))
            s = _SMEM_RE.search(line)
            smem = int(s.group(1)) if s else 0
    if regs is None or stack is None or stores is None or loads is None or smem is None:
        raise CompileError(f"no resource report for {entry} in the compiler output", log)
    return ResourceUsage(regs, smem, stack, stores, loads)


def cache_root() -> Path:
    """Where cubins live: $GEMMTUNE_CACHE_DIR, else ~/.cache/gemmtune/kernels."""
    env = os.environ.get("GEMMTUNE_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "gemmtune" / "kernels"


def write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)


class Compiler(Protocol):
    arch: str
    in_process: bool

    @property
    def version(self) -> str: ...

    def compile(self, source: KernelSource) -> CompiledKernel: ...


class CachingCompiler:
    """Shared cache logic; subclasses provide ``version`` and ``_build``.

    ``in_process`` says whether the compiler runs inside the calling process (NVRTC) rather than
    in a subprocess of its own (nvcc): such a compiler needs worker processes to use every core.
    """

    arch: str
    options: tuple[str, ...]
    in_process: bool = False

    @property
    def version(self) -> str:
        raise NotImplementedError

    def _build(self, source: KernelSource) -> tuple[bytes, str]:
        """Compile to (cubin bytes, ptxas log)."""
        raise NotImplementedError

    def _usage(self, log: str, source: KernelSource, cubin: Path) -> ResourceUsage:
        return parse_ptxas_report(log, source.entry)

    def target(self, source: KernelSource) -> str:
        """The architecture ``source`` is compiled for: the compiler's, or its
        architecture-specific variant (``sm_90`` -> ``sm_90a``) for a family that needs it."""
        return compile_target(self.arch, source.arch_specific)

    def cache_key(self, source: KernelSource) -> str:
        blob = json.dumps([source.code, self.target(source), self.version, self.options])
        return hashlib.sha256(blob.encode()).hexdigest()[:32]

    def compile(self, source: KernelSource) -> CompiledKernel:
        folder = cache_root() / self.cache_key(source)
        cubin, report = folder / "kernel.cubin", folder / "usage.json"
        arch = self.target(source)
        if cubin.is_file() and report.is_file():
            usage = ResourceUsage(**json.loads(report.read_text()))
            return CompiledKernel(source, arch, self.version, cubin, usage, cached=True)
        binary, log = self._build(source)
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(cubin, binary)
        usage = self._usage(log, source, cubin)
        write_atomic(report, json.dumps(asdict(usage)).encode())
        return CompiledKernel(source, arch, self.version, cubin, usage, cached=False)


class NvccCompiler(CachingCompiler):
    """``nvcc -cubin``: works without a GPU (CI, this machine)."""

    def __init__(
        self, arch: str = "sm_90", nvcc: str | None = None, timeout_s: float = 120
    ) -> None:
        self.arch = arch
        self.nvcc = nvcc or shutil.which("nvcc") or "nvcc"
        self.options = NVCC_OPTIONS
        self.timeout_s = timeout_s

    @property
    def version(self) -> str:
        return _nvcc_version(self.nvcc)

    def _build(self, source: KernelSource) -> tuple[bytes, str]:
        with tempfile.TemporaryDirectory(prefix="gemmtune-") as tmp:
            src, out = Path(tmp) / "kernel.cu", Path(tmp) / "kernel.cubin"
            src.write_text(source.code)
            cmd = [
                self.nvcc,
                "-cubin",
                f"-arch={self.target(source)}",
                *self.options,
                "-o",
                str(out),
                str(src),
            ]
            try:
                proc = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=self.timeout_s, check=False
                )
            except subprocess.TimeoutExpired as exc:
                raise CompileError(f"nvcc took longer than {self.timeout_s:.0f} s") from exc
            log = proc.stdout + proc.stderr
            if proc.returncode != 0:
                first = next((ln for ln in log.splitlines() if "error" in ln), log.strip()[:200])
                raise CompileError(f"nvcc failed: {first}", log)
            return out.read_bytes(), log


@cache
def _nvcc_version(nvcc: str) -> str:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise CompileError(f"cannot run {nvcc}: {exc}") from exc
    match = re.search(r"release [\d.]+, V([\d.]+)", out)
    return f"nvcc {match.group(1) if match else out.strip().splitlines()[-1]}"


def compile_many(
    compiler: Compiler,
    sources: Sequence[KernelSource],
    jobs: int | None = None,
    on_done: Callable[[KernelSource, CompiledKernel | CompileError], None] | None = None,
) -> list[CompiledKernel | CompileError]:
    """Compile ``sources`` on all cores; results in input order, failures returned, not raised.

    nvcc runs in subprocesses, so threads suffice; NVRTC compiles inside the calling process, so
    it gets a pool of worker processes (none of them touches the GPU).
    """
    workers = max(1, min(jobs or os.cpu_count() or 1, len(sources)))
    pool: Executor
    if compiler.in_process and workers > 1:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"))
    else:
        pool = ThreadPoolExecutor(max_workers=workers)
    with pool:
        futures = [pool.submit(_compile_one, compiler, source) for source in sources]
        results = []
        for source, future in zip(sources, futures, strict=True):
            result = future.result()
            if on_done is not None:
                on_done(source, result)
            results.append(result)
    return results


def _compile_one(compiler: Compiler, source: KernelSource) -> CompiledKernel | CompileError:
    try:
        return compiler.compile(source)
    except CompileError as exc:
        return exc


def cubin_copy(cubin: Path, copy: int) -> Path:
    """``cubin`` itself for copy 0, else its copy N beside it (written once, atomically)."""
    if not copy:
        return cubin
    path = cubin.with_name(f"{cubin.stem}.copy{copy}{cubin.suffix}")
    if not path.is_file():
        write_atomic(path, cubin.read_bytes())
    return path
