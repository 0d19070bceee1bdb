"""Which GPUs are alike, and which kinds of math run slowly on one.

A device asked about is named and, where known, described by its architecture and SM count
(:class:`DeviceSpec`). Devices of the same architecture and SM count are the same kind of chip:
an H200 and an H100 SXM are both sm_90 with 132 SMs, so tile counts, waves and shared memory
per SM agree, and configs tuned on one are a sound answer for the other.

Some math is slow on some chips. The ``dmma`` families (``Family.cost.math == "fp64_tensor"``)
run FP32 GEMMs on the FP64 tensor cores: on the A100 and the H100 those are about as fast as
the FP32 FMA pipes, and the families beat FFMA kernels; on most other parts FP64 runs at 1/64
of the FP32 rate and a dmma config is many times slower than cuBLAS. :func:`slow_math` decides
per device: from the rates the GPU probes stored for it (``storage.device_rates``) when both
rates are there, else from the architecture's figures (``tuner.model.rates.ARCH_FIGURES``), and an
architecture the table does not list counts as slow (a dmma config is never a safe guess).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tuner.core.errors import InputError
from tuner.kernels.families import FAMILIES
from tuner.model.rates import ARCH_FIGURES, FAST_FP64_TENSOR_SHARE

ARCH_FORMAT = re.compile(r"^sm_[1-9][0-9]{1,2}[a-z]?$")


@dataclass(frozen=True)
class DeviceSpec:
    """A GPU an answer is asked for: its name, and where known its architecture ("sm_90") and
    SM count (both are needed to find devices of the same kind)."""

    name: str
    arch: str | None = None
    sm_count: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InputError(f"`device` must be a GPU's name, got {self.name!r}")
        if self.arch is not None and (
            not isinstance(self.arch, str) or not ARCH_FORMAT.fullmatch(self.arch)
        ):
            raise InputError(
                f"`arch` must look like sm_90 ('sm_' and the compute capability), got {self.arch!r}"
            )
        if self.sm_count is not None and (
            isinstance(self.sm_count, bool)
            or not isinstance(self.sm_count, int)
            or self.sm_count < 1
        ):
            raise InputError(f"`sm_count` must be an integer >= 1, got {self.sm_count!r}")

    @property
    def kind(self) -> tuple[str, int] | None:
        """(architecture, SM count), or None when either is unknown."""
        if self.arch is None or self.sm_count is None:
            return None
        return self.arch, self.sm_count

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arch": self.arch, "sm_count": self.sm_count}


@dataclass(frozen=True)
class MathRates:
    """A device's measured peak rates that decide which math is slow on it, TFLOP/s."""

    ffma_tflops: float | None
    fp64_tensor_tflops: float | None


@dataclass(frozen=True)
class SlowMath:
    """The math units that run slowly on a device, and why (empty when none)."""

    units: frozenset[str]  # values of CostTraits.math
    reason: str = ""

    def allows(self, family: str) -> bool:
        """Whether a config of ``family`` may be the answer on the device (a family this
        tuner does not know is not judged)."""
        known = FAMILIES.get(family)
        return known is None or known.cost.math not in self.units


def slow_math(arch: str | None, rates: MathRates | None) -> SlowMath:
    """What runs slowly on a device of ``arch`` with the probes' ``rates`` (None: not probed).

    Measured rates win over the table; with neither (an architecture the table does not
    list, or none known) the FP64 tensor cores count as slow.
    """
    if rates is not None and rates.ffma_tflops and rates.fp64_tensor_tflops:
        ratio = rates.fp64_tensor_tflops / rates.ffma_tflops
        where = (
            f"measured {rates.fp64_tensor_tflops:.3g} TFLOP/s on the FP64 tensor cores against "
            f"{rates.ffma_tflops:.3g} with FFMA"
        )
    elif arch is not None and arch in ARCH_FIGURES:
        ratio = ARCH_FIGURES[arch].fp64_tensor_share
        where = f"{ratio:.3g} of the FFMA rate on {arch}"
    else:
        return SlowMath(
            frozenset({"fp64_tensor"}),
            f"FP64 tensor-core rate unknown for {arch or 'an unknown architecture'}",
        )
    if ratio >= FAST_FP64_TENSOR_SHARE:
        return SlowMath(frozenset())
    return SlowMath(frozenset({"fp64_tensor"}), f"FP64 tensor cores slow ({where})")
