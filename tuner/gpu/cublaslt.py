"""A small ctypes binding of cuBLASLt: the heuristic's algorithms for a problem, the check that a
stored algorithm still applies, and the matmul on the current CuPy stream.

Only what the vendor candidate needs (``tuner.kernels.families.vendor``): FP32 sums
(``CUBLAS_COMPUTE_32F``, never TF32, whatever the input type), an FP32 scale type (alpha and beta
are host floats), no epilogue, D written over C. Descriptors are made once per problem
(``tuner.gpu.lt_layouts.LtProblem``) and kept for the process; a handle per device; a workspace
of :data:`WORKSPACE_BYTES` per device, stream and thread (``tuner.gpu.kept_buffers``), so two
streams never share scratch memory.

The library is the one the process already loaded with CuPy's cuBLAS when there is one (the
reference the candidates are verified against comes from the same release), else the
``nvidia-cublas`` wheel's, else the system's; ``GEMMTUNE_CUBLASLT`` names a file to use instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.gpu.kept_buffers import kept_buffers
from tuner.gpu.lt_layouts import ALGO_WORDS, LtProblem, MatrixLayout

LIBRARY_ENV_VAR = "GEMMTUNE_CUBLASLT"
WORKSPACE_BYTES = 32 * 2**20
# Algorithms asked of the heuristic at once: more than a study's ranks, so that ranks stay
# filled after repeats in its list are dropped.
REQUESTED = 16
CUBLAS_COMPUTE_32F = 68
CUDA_R_32F = 0
DESC_TRANSA, DESC_TRANSB = 3, 4  # cublasLtMatmulDescAttributes_t
# cublasLtMatmulPreferenceAttributes_t: the workspace limit, then the least alignment of the
# bases of A, B, C and D (in the library's terms) in bytes.
PREF_MAX_WORKSPACE_BYTES = 1
PREF_MIN_ALIGNMENT_A, PREF_MIN_ALIGNMENT_B, PREF_MIN_ALIGNMENT_C, PREF_MIN_ALIGNMENT_D = 5, 6, 7, 8
STATUS_NAMES = {
    0: "SUCCESS",
    1: "NOT_INITIALIZED",
    3: "ALLOC_FAILED",
    7: "INVALID_VALUE",
    8: "ARCH_MISMATCH",
    13: "EXECUTION_FAILED",
    14: "INTERNAL_ERROR",
    15: "NOT_SUPPORTED",
}


class LtError(RuntimeError):
    """A cuBLASLt call that did not succeed, with its status."""


class LtUnavailable(LtError):
    """What was asked of the library does not exist for the problem (an algorithm rank past the
    heuristic's list): nothing was launched, so the CUDA context is intact."""


class _Algo(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64 * ALGO_WORDS)]


class _HeuristicResult(ctypes.Structure):
    _fields_ = [
        ("algo", _Algo),
        ("workspace_size", ctypes.c_size_t),
        ("state", ctypes.c_int),
        ("waves_count", ctypes.c_float),
        ("reserved", ctypes.c_int * 4),
    ]


@dataclass(frozen=True)
class Algorithm:
    """One algorithm the heuristic offered (or a stored one that still applies): its words,
    the workspace it needs and the heuristic's waves count (0 when unknown)."""

    words: tuple[int, ...]
    workspace_bytes: int
    waves: float


def library_path() -> str:
    """Where libcublasLt is, searched in the order the module docstring gives."""
    named = os.environ.get(LIBRARY_ENV_VAR)
    if named:
        if not Path(named).is_file():
            raise LtError(f"${LIBRARY_ENV_VAR} names {named!r}, which is not a file")
        return named
    for found in (_beside_loaded_cublas(), _in_nvidia_wheel(), _system_library()):
        if found:
            return found
    raise LtError(
        "libcublasLt was not found: install nvidia-cublas (pip) or the CUDA toolkit, or set "
        f"${LIBRARY_ENV_VAR} to the library's path"
    )


def _beside_loaded_cublas() -> str | None:
    """The libcublasLt this process mapped, or the one beside the libcublas CuPy loaded."""
    try:
        from cupy_backends.cuda.libs import cublas  # noqa: F401  (maps libcublas)

        maps = Path("/proc/self/maps").read_text().splitlines()
    except (ImportError, OSError):
        return None
    paths = {line.split()[-1] for line in maps if "libcublas" in line and "/" in line}
    for path in sorted(paths):
        if Path(path).name.startswith("libcublasLt.so"):
            return path
    for path in sorted(paths):
        beside = sorted(glob.glob(str(Path(path).parent / "libcublasLt.so*")))
        if beside:
            return beside[-1]
    return None


def _in_nvidia_wheel() -> str | None:
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        found = sorted(glob.glob(os.path.join(root, "*", "lib", "libcublasLt.so*")))
        if found:
            return found[-1]
    return None


def _system_library() -> str | None:
    name = ctypes.util.find_library("cublasLt")
    if name:
        return name
    found = sorted(glob.glob("/usr/local/cuda*/lib64/libcublasLt.so*"))
    return found[-1] if found else None


P = ctypes.c_void_p
PP = ctypes.POINTER(ctypes.c_void_p)
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "cublasLtGetVersion": (ctypes.c_size_t, []),
    "cublasLtCreate": (ctypes.c_int, [PP]),
    "cublasLtMatmulDescCreate": (ctypes.c_int, [PP, ctypes.c_int, ctypes.c_int]),
    "cublasLtMatmulDescSetAttribute": (ctypes.c_int, [P, ctypes.c_int, P, ctypes.c_size_t]),
    "cublasLtMatrixLayoutCreate": (
        ctypes.c_int,
        [PP, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64],
    ),
    "cublasLtMatmulPreferenceCreate": (ctypes.c_int, [PP]),
    "cublasLtMatmulPreferenceSetAttribute": (ctypes.c_int, [P, ctypes.c_int, P, ctypes.c_size_t]),
    "cublasLtMatmulAlgoGetHeuristic": (
        ctypes.c_int,
        [
            P,
            P,
            P,
            P,
            P,
            P,
            P,
            ctypes.c_int,
            ctypes.POINTER(_HeuristicResult),
            ctypes.POINTER(ctypes.c_int),
        ],
    ),
    "cublasLtMatmulAlgoCheck": (
        ctypes.c_int,
        [P, P, P, P, P, P, ctypes.POINTER(_Algo), ctypes.POINTER(_HeuristicResult)],
    ),
    "cublasLtMatmul": (
        ctypes.c_int,
        [P, P, P, P, P, P, P, P, P, P, P, P, ctypes.POINTER(_Algo), P, ctypes.c_size_t, P],
    ),
}


@functools.cache
def _lib() -> ctypes.CDLL:
    lib = ctypes.CDLL(library_path())
    for name, (restype, argtypes) in _SIGNATURES.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib


def _call(name: str, *args: Any) -> None:
    status = getattr(_lib(), name)(*args)
    if status != 0:
        raise LtError(f"{name} failed: CUBLAS_STATUS_{STATUS_NAMES.get(status, status)}")


def version() -> int:
    """cuBLASLt's version number (``cublasLtGetVersion``: major*10000 + minor*100 + patch)."""
    return int(_lib().cublasLtGetVersion())


_lock = threading.Lock()
_handles: dict[int, ctypes.c_void_p] = {}
_descriptors: dict[LtProblem, tuple[ctypes.c_void_p, ...]] = {}
_heuristics: dict[tuple[int, LtProblem, int], tuple[Algorithm, ...]] = {}


def _device() -> int:
    import cupy

    return int(cupy.cuda.Device().id)


def _handle() -> ctypes.c_void_p:
    device = _device()
    with _lock:
        handle = _handles.get(device)
        if handle is None:
            handle = ctypes.c_void_p()
            _call("cublasLtCreate", ctypes.byref(handle))
            _handles[device] = handle
        return handle


def _layout(layout: MatrixLayout) -> ctypes.c_void_p:
    made = ctypes.c_void_p()
    _call(
        "cublasLtMatrixLayoutCreate",
        ctypes.byref(made),
        layout.data_type,
        layout.rows,
        layout.cols,
        layout.ld,
    )
    return made


def _descriptors_of(problem: LtProblem) -> tuple[ctypes.c_void_p, ...]:
    """(matmul desc, first layout, second layout, C layout, preference) of ``problem``."""
    with _lock:
        kept = _descriptors.get(problem)
        if kept is not None:
            return kept
        desc = ctypes.c_void_p()
        _call("cublasLtMatmulDescCreate", ctypes.byref(desc), CUBLAS_COMPUTE_32F, CUDA_R_32F)
        for attribute, op in ((DESC_TRANSA, problem.op_first), (DESC_TRANSB, problem.op_second)):
            value = ctypes.c_int32(op)
            _call(
                "cublasLtMatmulDescSetAttribute",
                desc,
                attribute,
                ctypes.byref(value),
                ctypes.sizeof(value),
            )
        preference = ctypes.c_void_p()
        _call("cublasLtMatmulPreferenceCreate", ctypes.byref(preference))
        first_base, second_base, c_base = problem.alignments
        settings = (
            (PREF_MAX_WORKSPACE_BYTES, ctypes.c_uint64(WORKSPACE_BYTES)),
            (PREF_MIN_ALIGNMENT_A, ctypes.c_uint32(first_base)),
            (PREF_MIN_ALIGNMENT_B, ctypes.c_uint32(second_base)),
            (PREF_MIN_ALIGNMENT_C, ctypes.c_uint32(c_base)),
            (PREF_MIN_ALIGNMENT_D, ctypes.c_uint32(c_base)),
        )
        for attribute, setting in settings:
            _call(
                "cublasLtMatmulPreferenceSetAttribute",
                preference,
                attribute,
                ctypes.byref(setting),
                ctypes.sizeof(setting),
            )
        kept = (
            desc,
            _layout(problem.first),
            _layout(problem.second),
            _layout(problem.c),
            preference,
        )
        _descriptors[problem] = kept
        return kept


def heuristic(problem: LtProblem, count: int = REQUESTED) -> tuple[Algorithm, ...]:
    """Up to ``count`` distinct algorithms ``cublasLtMatmulAlgoGetHeuristic`` offers for
    ``problem`` on the current device, best first (kept per device, problem and count)."""
    if count < 1:
        raise ValueError(f"ask the heuristic for at least one algorithm, not {count}")
    key = (_device(), problem, count)
    with _lock:
        known = _heuristics.get(key)
    if known is not None:
        return known
    desc, first, second, c, preference = _descriptors_of(problem)
    results = (_HeuristicResult * count)()
    returned = ctypes.c_int(0)
    _call(
        "cublasLtMatmulAlgoGetHeuristic",
        _handle(),
        desc,
        first,
        second,
        c,
        c,
        preference,
        count,
        results,
        ctypes.byref(returned),
    )
    # The list may name one algorithm more than once (seen for small float32 and BF16 problems
    # on the H200 with cuBLASLt 13.1, benchmarks/notebook.md): each rank is kept for another one.
    distinct: dict[tuple[int, ...], Algorithm] = {}
    for r in results[: returned.value]:
        words = tuple(int(w) for w in r.algo.data)
        if r.state == 0 and words not in distinct:
            distinct[words] = Algorithm(words, int(r.workspace_size), float(r.waves_count))
    offered = tuple(distinct.values())
    with _lock:
        _heuristics[key] = offered
    return offered


def check(problem: LtProblem, words: tuple[int, ...]) -> Algorithm | str:
    """A stored algorithm as ``cublasLtMatmulAlgoCheck`` sees it for ``problem`` on the
    current device: the algorithm (with the workspace it needs) when it applies, else why not."""
    desc, first, second, c, _ = _descriptors_of(problem)
    algo = _Algo((ctypes.c_uint64 * ALGO_WORDS)(*words))
    result = _HeuristicResult()
    status = _lib().cublasLtMatmulAlgoCheck(
        _handle(), desc, first, second, c, c, ctypes.byref(algo), ctypes.byref(result)
    )
    if status != 0:
        return f"cublasLtMatmulAlgoCheck: CUBLAS_STATUS_{STATUS_NAMES.get(status, status)}"
    if result.workspace_size > WORKSPACE_BYTES:
        return f"it needs {result.workspace_size} bytes of workspace, over {WORKSPACE_BYTES}"
    return Algorithm(words, int(result.workspace_size), float(result.waves_count))


def _workspace() -> Any:
    import cupy

    return kept_buffers(
        ("cublaslt-workspace",), lambda: {"w": cupy.zeros(WORKSPACE_BYTES, dtype=cupy.uint8)}
    )["w"]


def matmul(
    problem: LtProblem,
    algorithm: Algorithm,
    alpha: float,
    a_ptr: int,
    b_ptr: int,
    beta: float,
    c_ptr: int,
) -> None:
    """``C = alpha * op(A) @ op(B) + beta * C`` (row-major terms; ``problem`` says how they are
    stored) with ``algorithm``, on the current CuPy stream (asynchronous)."""
    import cupy

    desc, first, second, c, _ = _descriptors_of(problem)
    algo = _Algo((ctypes.c_uint64 * ALGO_WORDS)(*algorithm.words))
    scale_a, scale_b = ctypes.c_float(alpha), ctypes.c_float(beta)
    workspace = _workspace()
    _call(
        "cublasLtMatmul",
        _handle(),
        desc,
        ctypes.byref(scale_a),
        ctypes.c_void_p(b_ptr),  # the library's first operand is the caller's B
        first,
        ctypes.c_void_p(a_ptr),
        second,
        ctypes.byref(scale_b),
        ctypes.c_void_p(c_ptr),
        c,
        ctypes.c_void_p(c_ptr),
        c,
        ctypes.byref(algo),
        ctypes.c_void_p(int(workspace.data.ptr)),
        WORKSPACE_BYTES,
        ctypes.c_void_p(cupy.cuda.get_current_stream().ptr),
    )
