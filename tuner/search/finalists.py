"""A study's finalists: its fastest candidates (and the answer it started from, and the default
cuBLAS call where the study searches it) re-measured side by side with cuBLAS at the end, stored
in the study as its ``final`` phase (:mod:`tuner.core.phases`), apart from its screening trials.

The stored ratio is then the one a side-by-side re-measurement gives, and the best is never
slower than the answer the study started from, nor, by those rounds, than the default call.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from tuner.core.config import Config
from tuner.core.result import Comparison, Result
from tuner.core.shape import Shape
from tuner.kernels.families import CUBLAS

if TYPE_CHECKING:
    from tuner.search.evaluator import Evaluator

# How many of the fastest candidates are re-measured beside cuBLAS at the end, and in how many
# alternating rounds: at least FINAL_MIN_ROUNDS, then one more at a time while a finalist's
# medians still move (the fidelity rule, :func:`settled`), at most FINAL_ROUNDS.
FINALISTS = 3
FINAL_ROUNDS = 5
FINAL_MIN_ROUNDS = 3
# A finalist is settled once its last round moved neither its median time nor cuBLAS's by more
# than this fraction: the stored ratio is then within a fraction of a per cent of what the
# rounds left out would give, well inside the +-3 % a bench re-measurement is held to.
FINAL_SETTLED = 0.01
# Kernel time per timed block of the re-measurement (at least 5 launches a block). A median of
# 30 ms of launches is as close to the one of ``gemmtune bench``'s 100 ms blocks as the rounds
# need: each round is judged by the fidelity rule above, and more rounds follow where it moves.
# With 100 ms blocks a study's finalists took 1.2 to 8.4 s on the H100, as long as its 40
# candidates on the biggest shapes (``benchmarks/results/h100-batch-pace-2026-11-28b.json``).
FINAL_BUDGET_MS: float | None = 30.0
# After the first round, a finalist whose time is more than this many times the fastest of that
# round gets no more rounds: it is stored with the one, which says already, side by side, that it
# is not the best. In 24 studies on the H200 (12 held-out FP32 shapes, twice) the stored best was
# the fastest of the first round in 23 and 0.4 % behind it in one
# (``benchmarks/results/h200-pace-finals-2026-11-29.json``). With 1.10, the same batch
# re-measured 27 % fewer rounds and no finalist kept to one round was faster in it than the
# stored best (``h200-pace-finals-ab-2026-11-29.json``).
FINAL_KEEP_WITHIN = 1.10
# The default cuBLAS call, what the user already has: a finalist of every study that searches
# it, so that the best is chosen over it in alternating rounds side by side (at least the
# first) and not by two screenings taken apart. On the H200 a study without this rule stored a
# tma_ws config whose own final rounds put it at 0.998x the call (4096^3 FP16 NN,
# benchmarks/results/h200-half-bench-suite-fp16-nn-2026-11-28.json).
DEFAULT_CALL = CUBLAS.config({}).name


def settled(comparison: Comparison, tolerance: float = FINAL_SETTLED) -> bool:
    """True when one more round would not change what is stored of ``comparison``: it failed
    (its status is final), or it has at least two rounds and the last one moved the median of
    its times and of cuBLAS's by at most ``tolerance`` (relative)."""
    if comparison.status != "ok":
        return True
    ours, theirs = comparison.ms_rounds, comparison.cublas_ms_rounds
    if len(ours) < 2 or len(theirs) < 2:
        return False
    return _moved(ours) <= tolerance and _moved(theirs) <= tolerance


def _moved(rounds: Sequence[float]) -> float:
    """How far the last round moved the median, relative to the median before it."""
    before = statistics.median(rounds[:-1])
    return abs(statistics.median(rounds) - before) / before if before > 0 else float("inf")


def remeasure(
    evaluator: Evaluator,
    configs: Sequence[Config],
    shape: Shape,
    budget_ms: float | None = None,
    min_rounds: int = FINAL_MIN_ROUNDS,
    max_rounds: int = FINAL_ROUNDS,
    keep_within: float | None = None,
    beside_ms: float | None = None,
) -> list[Comparison]:
    """Re-measure ``configs`` beside cuBLAS in no more rounds than fidelity needs:
    ``min_rounds`` alternating rounds of all of them, then one round at a time of those not
    yet :func:`settled`, up to ``max_rounds``. With ``keep_within`` (a factor, e.g.
    :data:`FINAL_KEEP_WITHIN`) the first round comes alone, and only the configs whose time in it
    is within that factor of the fastest go on; the others keep their one round. ``beside_ms``:
    the fastest first-round time of finalists re-measured just before these (a study measures
    the finalists whose kernels are ready while the others compile), counted among the fastest.
    One comparison per config, in order, its rounds in the order they ran. Each later request
    verifies the kernels again (milliseconds) and times each beside cuBLAS."""
    if not configs:
        return []
    first = min(min_rounds, max_rounds)
    going = list(range(len(configs)))
    if keep_within is None or first < 2:
        comparisons = list(evaluator.compare(configs, shape, first, budget_ms))
    else:
        comparisons = list(evaluator.compare(configs, shape, 1, budget_ms))
        going = _close_to_fastest(comparisons, keep_within, beside_ms)
        _more_rounds(evaluator, configs, shape, budget_ms, comparisons, going, first - 1)
    for _ in range(max_rounds - first):
        open_ = [i for i in going if not settled(comparisons[i])]
        if not open_:
            break
        _more_rounds(evaluator, configs, shape, budget_ms, comparisons, open_, 1)
    return comparisons


def fastest_first_round(comparisons: Sequence[Comparison]) -> float | None:
    """The fastest first-round time among the ``comparisons`` that passed (None: none did)."""
    firsts = [c.ms_rounds[0] for c in comparisons if c.status == "ok" and c.ms_rounds]
    return min(firsts, default=None)


def _close_to_fastest(
    comparisons: Sequence[Comparison], factor: float, beside_ms: float | None = None
) -> list[int]:
    """Indices of the comparisons that passed with a first-round time within ``factor`` of the
    fastest first-round time, theirs or ``beside_ms``."""
    fastest = fastest_first_round(comparisons)
    if fastest is None:
        return []
    if beside_ms is not None:
        fastest = min(fastest, beside_ms)
    return [
        i
        for i, c in enumerate(comparisons)
        if c.status == "ok" and c.ms_rounds and c.ms_rounds[0] <= factor * fastest
    ]


def _more_rounds(
    evaluator: Evaluator,
    configs: Sequence[Config],
    shape: Shape,
    budget_ms: float | None,
    comparisons: list[Comparison],
    which: Sequence[int],
    rounds: int,
) -> None:
    """``rounds`` more alternating rounds of the configs at ``which``, joined to their
    comparisons in place."""
    if not which or rounds < 1:
        return
    more = evaluator.compare([configs[i] for i in which], shape, rounds, budget_ms)
    for i, extra in zip(which, more, strict=True):
        comparisons[i] = _joined(comparisons[i], extra)


def _joined(earlier: Comparison, later: Comparison) -> Comparison:
    """``earlier``'s rounds and then ``later``'s; a config that fails its later check is stored
    as failed (it did not pass every check it met)."""
    if later.status != "ok":
        return later
    return replace(
        earlier,
        ms_rounds=(*earlier.ms_rounds, *later.ms_rounds),
        cublas_ms_rounds=(*earlier.cublas_ms_rounds, *later.cublas_ms_rounds),
    )


def choose_finalists(
    done: Mapping[str, Result], first: str | None, count: int, also: Sequence[str] = ()
) -> list[str]:
    """The ``count`` fastest ok candidates of ``done``, then ``first`` (the study's starting
    answer) and each of ``also`` (the default cuBLAS call, :data:`DEFAULT_CALL`) that passed
    and is not among them."""
    ok = sorted(
        (r for r in done.values() if r.status == "ok" and r.ms is not None),
        key=lambda r: (r.ms, r.config_name),
    )
    chosen = [r.config_name for r in ok[:count]]
    for name in (first, *also):
        if name is not None and name in done and done[name].status == "ok" and name not in chosen:
            chosen.append(name)
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
