"""The two phases a study measures in.

A study screens its candidates one by one (``screening``), then re-measures its fastest few side
by side with cuBLAS in alternating rounds (``final``). Both kinds of measurement belong to the
study; the phase tells them apart. A final measurement outranks screening ones when the best
config is chosen: its ratio to cuBLAS is the one a side-by-side re-measurement gives.
"""

from __future__ import annotations

import enum

from tuner.core.errors import InputError


class Phase(enum.StrEnum):
    """When in its study a measurement was taken."""

    SCREENING = "screening"
    FINAL = "final"


PHASES: tuple[str, ...] = tuple(phase.value for phase in Phase)


def check_phase(value: object) -> Phase:
    """``value`` as a :class:`Phase`, else raise naming it and the choices."""
    if value not in PHASES:
        raise InputError(f"`phase` must be one of {', '.join(PHASES)}, got {value!r}")
    return Phase(str(value))
