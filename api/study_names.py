"""Readable titles for study keys.

A study's key says everything that makes it one study (``gemmtune tune``'s
``device|MxNxK|dtype|layout|family+family``, with ``|finalists`` for its re-measurements; a
preloaded sweep table's ``<file stem>-MxNxK``), which makes it long and hard to read as a
title. The title puts the shape first, then the device and what was searched.
"""

from __future__ import annotations

import re

_TUNED = re.compile(
    r"(?P<device>[^|]+)\|(?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)\|(?P<dtype>[^|]+)\|(?P<layout>[^|]+)"
    r"\|(?P<families>[^|]+)(?P<finalists>\|finalists)?"
)
TIMES = "\u00d7"
_SWEEP = re.compile(r"(?P<table>.+)-(?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)")


def study_title(key: str) -> str:
    """``4096x4096x4096 on NVIDIA H100 80GB HBM3 · warptile, pipelined`` (with multiplication
    signs) for a tuning study (``4096x4096x4096 bfloat16 NT on ...`` for inputs other than
    float32 NN), ``4096x4096x4096 · sweep table h100-sweep`` for a preloaded one; other keys
    as they are."""
    tuned = _TUNED.fullmatch(key)
    if tuned:
        shape = TIMES.join(tuned[d] for d in "mnk")
        if (tuned["dtype"], tuned["layout"]) not in (("float32", "NN"), ("float32", "row-major")):
            shape += f" {tuned['dtype']} {tuned['layout']}"
        families = ", ".join(tuned["families"].split("+"))
        what = "finalists re-measured" if tuned["finalists"] else families
        return f"{shape} on {tuned['device']} · {what}"
    sweep = _SWEEP.fullmatch(key)
    if sweep:
        return f"{TIMES.join(sweep[d] for d in 'mnk')} · sweep table {sweep['table']}"
    return key
