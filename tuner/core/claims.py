"""What became of a worker's claim on a study's candidate.

Workers that share a study claim a candidate before measuring it, so none is measured twice;
the study loop reads the answer, and every recorder (in memory, on SQL) gives it.
"""

from __future__ import annotations

import enum


class Claimed(enum.Enum):
    """What became of a claim; truthy only when the worker got the candidate."""

    TAKEN = "taken"
    HELD = "held"  # another worker holds it (unexpired) or measured it
    FULL = "full"  # the study's budget of candidates is spent

    def __bool__(self) -> bool:
        return self is Claimed.TAKEN
