"""The order a batch of proposals is told to the sampler in: quickest compiles first.

A study tells its sampler results in the order they were proposed, and proposes nothing while a
measured result waits for an earlier proposal's (``tuner.search.tell_order``). So when a slow
compile sits early in a batch of proposals, the quick ones behind it are measured and then
wait. No new candidate is proposed until the slow one is in, and the device idles. A study's
first batch is the worst case: it holds a proposal of every family, and on the H200 a
``streamk`` or ``pipelined`` kernel took 1.4 to 1.6 s to compile alone, against 0.4 s for
``dmma`` and ``dmma_pipelined``.

Ordering each batch by expected compile time keeps what the rule protects. Every proposal is
still made knowing every result measured so far. But results now arrive roughly in the order
they are due, and the quick ones are told while the slow ones compile, so the sampler proposes
the next candidates meanwhile. The compiles themselves start as the proposals come, so no
compile waits for the batch to be sorted. How much time it saves is not established: the A/B
that seemed to show 14 % on one H200 probably ran the old tree from an extracted archive and the
new one from the working tree, an arrangement that flattered the new tree by as much in a later A/B
(``benchmarks/notebook.md``, "Compiling ahead of the sampler").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from tuner.core.config import Config
from tuner.kernels.families import get_family

T = TypeVar("T")

# Median seconds of one compile alone (NVRTC, one process) on the lent H200, by family:
# benchmarks/results/h200-compile-times-serial-2026-11-28.json (FP32 4096^3 candidates). The
# half families' figures are medians with 15 processes at once, which ran about 1.2x a serial
# compile there (h200x2-compile-times-bf16-nt-2026-11-28.json, and -twins- for dmma_streamk).
# Only the order matters.
EXPECTED_COMPILE_S = {
    "dmma": 0.39,
    "dmma_pipelined": 0.43,
    "dmma_streamk": 0.77,
    "warptile": 1.12,
    "pipelined": 1.37,
    "streamk": 1.62,
    "tma_ws": 1.01,
    "hmma_splitk": 1.07,
    "wgmma_splitk": 1.55,
    "wgmma": 1.97,
    "hmma": 2.88,
}
UNKNOWN_COMPILE_S = 1.0  # a family not timed yet: between the quick ones and the slow ones


def expected_compile_s(config: Config) -> float:
    """How long ``config``'s kernel is expected to take to compile: none for the vendor's
    library, else its family's figure (:data:`EXPECTED_COMPILE_S`)."""
    if get_family(config.family).vendor:
        return 0.0
    return EXPECTED_COMPILE_S.get(config.family, UNKNOWN_COMPILE_S)


def quickest_compiles_first(batch: Sequence[tuple[Config, T]]) -> list[tuple[Config, T]]:
    """``batch`` (proposals with their trials) ordered by expected compile time; ties keep their
    order."""
    return sorted(batch, key=lambda item: expected_compile_s(item[0]))
