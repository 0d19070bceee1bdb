"""Why a candidate produced no time: every evaluated candidate gets exactly one status.

The one list: evaluators, results files, the measurement table's CHECK constraint and the API's
enum all read it.
"""

from __future__ import annotations

STATUSES: tuple[str, ...] = (
    "ok",
    "invalid",  # breaks a family rule (never reaches a compiler)
    "pruned",  # breaks a resource limit, before or after compiling (spills, no block fits)
    "compile_failed",
    "launch_failed",  # the launch or the worker process failed (illegal address, ...)
    "wrong_result",  # differs from cuBLAS beyond the FP32 tolerance
    "timeout",  # compile or run took longer than its bound
)
