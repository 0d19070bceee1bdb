"""``cublaslt`` and ``cublas``: the vendor library as candidates beside our kernel families.

A study should never store a best that is slower than what the user already has, so cuBLASLt's
own algorithms are measured like any candidate (verified, then timed with CUDA events;
``tuner.gpu.vendor_launch``). A config does not describe a kernel: RANK names the place of an
algorithm in the list ``cublasLtMatmulAlgoGetHeuristic`` returns for the problem, and the operand
mode (``_pad4``, ``_pad8``) runs it on zero-padded copies whose dimensions are whole 16-byte
vectors (``tuner.kernels.operand_padding``, the plan of a family without leading dimensions; the
copies are timed). The algorithm a measurement ran is stored beside it as its provenance (its
eight opaque words and the library version), so an answer replays that very algorithm.

``cublas`` is the default call, what ``cupy.matmul`` and ``torch.matmul`` users already get:
``cublasSgemm`` for float32 NN, ``cublasGemmEx`` (FP32 sums, ``CUBLAS_GEMM_DEFAULT``) for the rest
(``tuner.gpu.default_call``). cuBLAS picks its algorithm by rules of its own, which on some
problems beat every algorithm cuBLASLt's heuristic lists (4096^3 FP16 and BF16 NN on the H100,
by 6 to 7 %), so the default call is measured too: a stored best is never slower than what the
user had. It has no parameters (its name is the family's, ``cublas``); padded (``cublas_pad8``)
it is "pad, then cuBLAS", which on ragged half shapes runs cuBLAS's aligned kernels.

Nothing renders or compiles (``Family.vendor`` names the library): there is no template, and the
footprint below is nominal (one block of 128 threads, nothing in shared memory), enough for the
generic checks of the space to let every candidate through; the library picks its own resources.
"""

from __future__ import annotations

from tuner.core.shape import SUPPORTED_DTYPES, SUPPORTED_LAYOUTS
from tuner.kernels.families._base import CostTraits, Family, Footprint, Param

# How many of the heuristic's algorithms a study measures: its first choice and the next ones
# while they may still be faster on this exact problem.
HEURISTIC_RANKS = 8
# cuBLASLt algorithms the bench times for its baseline, the best vendor launch (``gemmtune bench
# --vendor-ranks``).
BASELINE_RANKS = 4
NOMINAL_THREADS = 128


def _nominal_footprint(params: object) -> Footprint:
    return Footprint(
        threads=NOMINAL_THREADS, smem_bytes=0, dynamic_smem=False, accumulators=0, fragments=0
    )


def _library(name: str, doc: str, params: tuple[Param, ...], library: str) -> Family:
    """A vendor library as a family: nominal resources, every input type, layout and type of C
    (cuBLASLt and cublasGemmEx write C in any of them), computed by ``library``."""
    return Family(
        name=name,
        doc=doc,
        params=params,
        rules=(),
        threads=lambda p: NOMINAL_THREADS,
        footprint=_nominal_footprint,
        k_step=lambda p: 1,
        cost=CostTraits(math="library"),
        dtypes=SUPPORTED_DTYPES,
        out_dtypes=("float32", "float16", "bfloat16"),
        layouts=SUPPORTED_LAYOUTS,
        vendor=library,
    )


CUBLASLT = _library(
    "cublaslt",
    "The vendor library: cuBLASLt's heuristic's RANK-th algorithm for the problem "
    "(FP32 sums, CUBLAS_COMPUTE_32F, never TF32), optionally on operands zero-padded to whole "
    "16-byte vectors; no template.",
    (
        Param(
            "RANK",
            tuple(range(HEURISTIC_RANKS)),
            "place in cublasLtMatmulAlgoGetHeuristic's list (0: its first choice)",
        ),
    ),
    "cublasLt",
)

CUBLAS = _library(
    "cublas",
    "The vendor library's default call, as cupy.matmul and torch.matmul make it: "
    "cublasSgemm for float32 NN, cublasGemmEx with FP32 sums (never TF32) and "
    "CUBLAS_GEMM_DEFAULT otherwise, optionally on operands zero-padded to whole 16-byte "
    "vectors; no parameters, no template.",
    (),
    "cublas",
)
