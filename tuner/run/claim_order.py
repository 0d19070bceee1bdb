"""The order a batch's shapes are queued in: shapes with ragged rows first.

Workers share a batch shape by shape, and an idle worker also claims candidates of a study
another worker is still searching. But a study's finalists are re-measured by the one worker
that holds it, beside its own GPU's cuBLAS, and nobody can help with them. So a batch ends when
its last finalists end, and the shapes left for the end should be those whose finalists are
short.

A shape with ragged rows (a stored row of A, B or C that is not a whole number of 16-byte
vectors) re-measures its fastest finalists in the other operand mode too
(``tuner.search.screening_mode.other_mode``), so it has about twice as many finalists. On four
H200 (2026-11-28, ``benchmarks/results/h200x4-fleet-pg-2026-11-28.json``), the batch of
16 held-out FP32 shapes had its 6 ragged shapes last, in the order of the file. Their
finalists took 2.1 to 3.1 s (9 to 11 rows) on one GPU, and the aligned shapes' 0.9 to 1.7 s
(4 to 6 rows). The last ragged one ended the batch 2.2 s after the next-to-last worker had
finished.

The order is stable: among ragged shapes, and among the rest, the caller's order stays. Nothing
else is reordered, so a queue fed one shape at a time (tune on miss) stays first come, first
served.
"""

from __future__ import annotations

from collections.abc import Sequence

from storage.tune_queue import Problem
from tuner.kernels.operand_padding import padding_refusal


def has_ragged_rows(problem: Problem) -> bool:
    """Whether a stored row of A, B or C of the problem's shape is not a whole number of 16-byte
    vectors (its finalists are re-measured in both operand modes)."""
    return padding_refusal(problem.shape, c_rows=True) is None


def ragged_first(problems: Sequence[Problem]) -> list[Problem]:
    """``problems`` in the order to queue them: those with ragged rows first, each group in the
    order given."""
    return sorted(problems, key=lambda problem: not has_ragged_rows(problem))
