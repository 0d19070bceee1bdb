"""Where a measurement's numbers come from: timed on the GPU it names, or replayed.

A study runs on an evaluator: the GPU one times each candidate on the device, the replay one
(``tuner.search.replay``) answers from tables of earlier measurements, so that whole studies run
on a CPU. A replayed result is the device's number only second-hand (the table's, for the table's
shape and config, of another run), so it is kept apart: stored and listed as ``replay``, usable
by the study that made it, and never the best config of a device, which only measurements
taken on it may be.
"""

from __future__ import annotations

import enum


class EvaluatorKind(enum.StrEnum):
    """What produced a result."""

    GPU = "gpu"
    REPLAY = "replay"


EVALUATORS: tuple[str, ...] = tuple(evaluator.value for evaluator in EvaluatorKind)

# The provenance key every replayed result carries (the tables it came from): how records written
# before ``evaluator`` was a field are known to be replayed.
REPLAYED_FROM = "replayed_from"
