"""A study's finalists: its fastest candidates (and the answer it started from) re-measured
side by side with cuBLAS at the end, stored in the study as its ``final`` phase
(:mod:`tuner.core.phases`), apart from its screening trials.

The stored ratio is then the one a side-by-side re-measurement gives, and the best is never
slower than the answer the study started from.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

from tuner.core.result import Comparison, Result
from tuner.core.shape import Shape

# How many of the fastest candidates are re-measured beside cuBLAS at the end, and in how many
# alternating rounds.
FINALISTS = 3
FINAL_ROUNDS = 5
# Kernel time per timed block of the re-measurement: None, the evaluator's own, which is what
# ``gemmtune bench`` re-measures with, so the stored ratio is the one the bench gives.
FINAL_BUDGET_MS: float | None = None


def choose_finalists(done: Mapping[str, Result], first: str | None, count: int) -> list[str]:
    """The ``count`` fastest ok candidates of ``done``, and ``first`` (the study's starting
    answer) when it passed and is not among them."""
    ok = sorted(
        (r for r in done.values() if r.status == "ok" and r.ms is not None),
        key=lambda r: (r.ms, r.config_name),
    )
    chosen = [r.config_name for r in ok[:count]]
    if first is not None and done[first].status == "ok" and first not in chosen:
        chosen.append(first)
    return chosen


def padding_candidates(
    done: Mapping[str, Result],
    fastest: list[str],
    leading: Collection[str],
) -> list[str]:
    """What a study of a ragged shape re-measures in the other operand mode (padded, or on the
    caller's arrays; ``tuner.search.screening_mode.other_mode``): its ``fastest`` finalists, then
    the fastest ok candidate of each family in ``leading`` (those that take leading dimensions) not
    among them. Such a family's padded launch copies only the ragged operands and then runs at its
    aligned rate, so its best padded time may beat those of finalists screened on the caller's
    arrays."""
    chosen = list(fastest)
    best: dict[str, Result] = {}
    for result in done.values():
        family = result.family
        if family not in leading or result.status != "ok" or result.ms is None:
            continue
        held = best.get(family)
        if held is None or (result.ms, result.config_name) < (held.ms or 0.0, held.config_name):
            best[family] = result
    for family in sorted(best):
        if best[family].config_name not in chosen:
            chosen.append(best[family].config_name)
    return chosen


def final_result(screened: Result, comparison: Comparison, shape: Shape) -> Result | None:
    """A finalist's re-measurement as a result to store (None when it did not pass); a padded
    twin's (``tuner.kernels.operand_padding``) under its own name, with its unpadded config's
    screening."""
    ms, cublas_ms = comparison.ms, comparison.cublas_ms
    if comparison.status != "ok" or ms is None or cublas_ms is None:
        return None
    provenance = {
        **screened.provenance,
        **comparison.provenance,  # a vendor's algorithm as re-measured (a padded twin's own)
        "rounds": len(comparison.ms_rounds),
        "ms_rounds": list(comparison.ms_rounds),
        "cublas_ms_rounds": list(comparison.cublas_ms_rounds),
    }
    return replace(
        screened,
        config_name=comparison.config_name,
        ms=ms,
        tflops=shape.tflops(ms),
        cublas_ms=cublas_ms,
        cublas_tflops=shape.tflops(cublas_ms),
        ratio=cublas_ms / ms,
        rel_error=comparison.rel_error,
        provenance=provenance,
    )
