"""A candidate: one config as a space offers it for a shape and a device, with what the search
reads of it worked out once.

The space checks every config against the device's limits (``tuner.kernels.resources``) and a
config on padded operands has a padding plan (``tuner.kernels.operand_padding``). The cost model
(``tuner.model.cost_model``) and the study's choice of operand mode
(``tuner.search.screening_mode``) read both for every candidate, many times: a :class:`Candidate`
carries them, so they are computed once, when the candidate is built.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.kernels.families import get_family
from tuner.kernels.operand_padding import PaddingPlan, pad_multiple, plan_padding
from tuner.kernels.resources import DeviceLimits, ResourceCheck, static_check


@dataclass(frozen=True)
class Candidate:
    """A config with its resource check on the device (that of its kernel: both operand modes
    share it) and, when it runs on padded operands, the plan of its copies for the shape."""

    config: Config
    check: ResourceCheck
    padding: PaddingPlan | None = None

    def __post_init__(self) -> None:
        if (self.padding is None) != (not self.config.pad):
            held = "no padding plan" if self.padding is None else "a padding plan"
            raise ValueError(
                f"candidate {self.config.name} has {held}: a config on padded operands needs "
                "one (``padding_plan``), a config on the caller's arrays none"
            )

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def family(self) -> str:
        return self.config.family

    def padded(self, shape: Shape) -> Candidate:
        """This candidate's kernel on padded operands of ``shape``: rows rounded up to whole
        16-byte vectors (``Config.padded``), with the plan of the copies."""
        config = self.config.padded(pad_multiple(shape.dtype))
        return Candidate(config, self.check, padding_plan(config, shape))

    def direct(self) -> Candidate:
        """This candidate's kernel on the caller's arrays (itself when it is not padded)."""
        if not self.config.pad:
            return self
        return Candidate(self.config.direct, self.check)


def padding_plan(config: Config, shape: Shape) -> PaddingPlan | None:
    """The copies ``config`` makes before its kernel runs on ``shape`` (None: it runs on the
    caller's arrays): operands into rows of whole vectors, the kernel's leading dimensions
    deciding which (``tuner.kernels.operand_padding.plan_padding``)."""
    if not config.pad:
        return None
    family = get_family(config.family)
    return plan_padding(shape, leading_dims=family.leading_dims, c_rows=family.pads_c_rows)


def build_candidate(
    config: Config, shape: Shape, device: DeviceLimits, check: ResourceCheck | None = None
) -> Candidate:
    """``config`` as a candidate for ``shape`` on ``device``; ``check``: its kernel's resource
    check when the caller has it already (a space keeps them), else it is checked now."""
    kernel_check = check if check is not None else static_check(config.direct, device)
    return Candidate(config, kernel_check, padding_plan(config, shape))
