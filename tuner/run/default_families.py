"""The families a study searches when none are named, by input type and accuracy floor: apart
from the runner so that the CLI's help can name them without importing the study loop."""

from __future__ import annotations

# What a study searches without --family: the families whose configs won suite shapes on the H100
# (the suite files of docs/results.md and earlier runs: dmma, streamk, skinny, warptile),
# pipelined, the multi-stage ladder rung, and dmma_pipelined (dmma fed by cp.async, faster than
# dmma on every shape of its sweeps). skinny has candidates only for small M;
# elsewhere its proposals are invalid points, which cost nothing.
DEFAULT_FAMILIES = ("warptile", "pipelined", "streamk", "skinny", "dmma", "dmma_pipelined")
# What a study of float16 or bfloat16 inputs searches without --family: mma.sync by warp (any
# sm_80+ chip) and Hopper's warpgroup mma (sm_90 only; elsewhere its space is empty), each with
# its split-K twin for grids too small to fill the chip, and Hopper's TMA-fed, warp-specialised,
# persistent tma_ws (sm_90 only; shapes whose stored rows are whole 16-byte vectors).
DEFAULT_HALF_FAMILIES = ("hmma", "hmma_splitk", "wgmma", "wgmma_splitk", "tma_ws")
# What a float32 study adds when its accuracy floor is bf16x3 (``tuner.core.accuracy``): the same
# kernels on float32 split into BF16 parts (tma_ws's on sm_90 only); any layout.
DEFAULT_EMULATED_FAMILIES = (
    "hmma_bf16x3",
    "hmma_splitk_bf16x3",
    "wgmma_bf16x3",
    "wgmma_splitk_bf16x3",
    "tma_ws_bf16x3",
)
# What every study measures beside its kernels (issue 42): cuBLASLt's top algorithms and the
# default cuBLAS call (which on some shapes beats every algorithm cuBLASLt's heuristic lists), so a
# stored best is never slower than the vendor library on the device; they join a study only where
# one of the kernel families computes the shape.
VENDOR_FAMILIES = ("cublaslt", "cublas")
