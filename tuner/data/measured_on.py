"""The GPU a results file was measured on, as its header or provenance names it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner.data.validation import BadField, integer, text


@dataclass(frozen=True)
class MeasuredOn:
    """Name, architecture (``sm_90``) and SM count: what priors and preload match devices by."""

    name: str
    arch: str
    sm_count: int


def measured_on(name: str, provenance: Mapping[str, Any], arch: str | None = None) -> MeasuredOn:
    """The GPU of a file: ``arch`` when the file states it, else from the provenance's
    compute capability (``"9.0"`` -> ``sm_90``); the SM count from the provenance."""
    try:
        sm_count = integer(provenance, "sm_count")
        if arch is None:
            arch = "sm_" + text(provenance, "compute_capability").replace(".", "")
    except BadField as exc:
        raise BadField(f"provenance: {exc}") from None
    return MeasuredOn(name, arch, sm_count)
