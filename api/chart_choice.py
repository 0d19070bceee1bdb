"""What a study page's chosen chart plots: which value on each axis, coloured by what, on a
linear or a log scale, over which ranges (a zoom), the way optuna-dashboard's and Kernel
Tuner's dashboards let a reader choose; and the check that names a choice the study cannot
draw, with what it can.

The choices travel in the page's query string (``?x=BM&y=ms&colour=BK&log_y=true&y_max=2``),
so a chosen view is a link; the slices follow the y value and its scale.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from api.study_data import StudyTrial
from tuner.core.errors import InputError
from tuner.report.svg_axes import Scale

# Resources every measured trial has, by the name the axis form uses.
RESOURCES = {
    "registers": "registers per thread",
    "smem": "shared memory per block, bytes",
    "occupancy": "occupancy (active warps / maximum)",
    "trial": "trial number",
}
# What a trial's speed is read as on the y axis, by the name the form uses.
OBJECTIVES = {
    "tflops": "TFLOP/s",
    "ms": "time, ms",
    "pct_cublas": "% of cuBLAS (run beside it)",
}


@dataclass(frozen=True)
class Zoom:
    """The ranges a reader chose (None: where the data end)."""

    x_min: float | None = None
    x_max: float | None = None
    y_min: float | None = None
    y_max: float | None = None

    @classmethod
    def parse(cls, x_min: str, x_max: str, y_min: str, y_max: str) -> Zoom:
        """The zoom a form's four range fields ask for (an empty field: no bound there).

        Raises:
            InputError: a field that is not a finite number (naming it and its text).
        """
        texts = {"x_min": x_min, "x_max": x_max, "y_min": y_min, "y_max": y_max}
        values: dict[str, float | None] = {}
        for name, text in texts.items():
            try:
                value = float(text) if text.strip() else None
            except ValueError:
                value = math.nan
            if value is not None and not math.isfinite(value):
                raise InputError(f"`{name}` must be a number or empty, got {text!r}")
            values[name] = value
        return cls(**values)

    def holds(self, x: float, y: float) -> bool:
        return (
            (self.x_min is None or x >= self.x_min)
            and (self.x_max is None or x <= self.x_max)
            and (self.y_min is None or y >= self.y_min)
            and (self.y_max is None or y <= self.y_max)
        )


@dataclass(frozen=True)
class ChartChoice:
    """The x value (a resource or a parameter), the y value (an objective), the colour (the
    family or a parameter), a log scale on either axis, and the zoom."""

    x: str = "registers"
    y: str = "tflops"
    colour: str = "family"
    log_x: bool = False
    log_y: bool = False
    zoom: Zoom = Zoom()

    def check(self, params: Sequence[str]) -> None:
        """Raise :class:`InputError` naming the first choice the study cannot draw (a study
        with ``params``) and what is allowed instead."""
        allowed = {
            "x": [*RESOURCES, *params],
            "y": list(OBJECTIVES),
            "colour": ["family", *params],
        }
        for name, choices in allowed.items():
            value = getattr(self, name)
            if value not in choices:
                raise InputError(f"`{name}` must be one of {choices}, got {value!r}")
        zoom = self.zoom
        for axis, low, high in (("x", zoom.x_min, zoom.x_max), ("y", zoom.y_min, zoom.y_max)):
            if low is not None and high is not None and low >= high:
                raise InputError(
                    f"`{axis}_min` must be below `{axis}_max`, got {low:g} and {high:g}"
                )
        for axis, log, low in (("x", self.log_x, zoom.x_min), ("y", self.log_y, zoom.y_min)):
            if log and low is not None and low <= 0:
                raise InputError(
                    f"`{axis}_min` must be > 0 on a log scale (`log_{axis}`), got {low:g}"
                )

    def query(self) -> dict[str, str]:
        """The query parameters that ask for this choice (the form's fields; no empty range)."""
        zoom = self.zoom
        ends = {"x_min": zoom.x_min, "x_max": zoom.x_max, "y_min": zoom.y_min, "y_max": zoom.y_max}
        return {
            "x": self.x,
            "y": self.y,
            "colour": self.colour,
            "log_x": str(self.log_x).lower(),
            "log_y": str(self.log_y).lower(),
            **{end: f"{value:g}" for end, value in ends.items() if value is not None},
        }

    @property
    def x_label(self) -> str:
        return RESOURCES.get(self.x, self.x)

    @property
    def y_label(self) -> str:
        return OBJECTIVES[self.y]


def x_value(trial: StudyTrial, axis: str) -> float | None:
    """``trial``'s value of the x choice ``axis`` (None: it has none, e.g. no register count)."""
    resource = {
        "registers": trial.registers,
        "smem": trial.smem_bytes,
        "occupancy": trial.occupancy,
        "trial": trial.number,
    }
    value = resource[axis] if axis in resource else trial.params.get(axis)
    return None if value is None else float(value)


def y_value(trial: StudyTrial, objective: str) -> float | None:
    """``trial``'s value of the objective (None: not measured, or no cuBLAS time beside it)."""
    if objective == "ms":
        return trial.ms
    if objective == "pct_cublas":
        if trial.tflops is None or not trial.cublas_tflops:
            return None
        return 100.0 * trial.tflops / trial.cublas_tflops
    return trial.tflops


def speed(objective: str, value: float) -> float:
    """``value`` of ``objective`` as "higher is better" (the fastest of a crowd is drawn)."""
    return -value if objective == "ms" else value


def scale_of(
    values: Sequence[float], log: bool, low: float | None, high: float | None, axis: str
) -> Scale:
    """The scale of an axis showing ``values`` (those inside the zoom) over [``low``, ``high``]
    (None: where the values end).

    Raises:
        InputError: a log scale for values that are not all > 0 (naming the axis and the
            least value, and what to do).
    """
    if log and values and min(values) <= 0:
        raise InputError(
            f"`log_{axis}` needs values > 0 on the {axis} axis, and it has {min(values):g}: "
            f"choose another value or set `{axis}_min` above 0"
        )
    return Scale.fit(values, log=log, low=low, high=high)
