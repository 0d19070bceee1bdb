"""The shape-space page: every tuned shape on one view with its ratio to cuBLAS, and for a
shape a user types, the answer the API would give, how far it is from its data and where that
data came from (the regret view).

The answer is :meth:`tuner.answers.best.Tuning.answer` on the API's own snapshot, so the page and
``POST /v1/configs/best`` cannot disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from tuner.answers.answer import FAR_DISTANCE, Answer
from tuner.answers.best import Tuned, Tuning
from tuner.answers.device_kind import DeviceSpec
from tuner.core.accuracy import ACCURACY_NAMES, DEFAULT_ACCURACY
from tuner.core.errors import InputError
from tuner.core.shape import SUPPORTED_DTYPES, SUPPORTED_LAYOUTS, parse_shape
from tuner.report.svg_charts import Point, scatter_chart

# Ratio to cuBLAS (its time / ours) in bands, for the colours of the chart.
BANDS = ((1.2, ">= 1.2x cuBLAS"), (1.0, "1.0-1.2x cuBLAS"), (0.8, "0.8-1.0x cuBLAS"))
SLOWER = "< 0.8x cuBLAS"
UNRATED = "no cuBLAS time"
ASKED = "asked"
COLOURS = dict(
    zip((*(label for _, label in BANDS), SLOWER, UNRATED, ASKED),
        ("#15803d", "#2563eb", "#ca8a04", "#dc2626", "#94a3b8", "#0f172a"), strict=True)
)  # fmt: skip


def band(ratio: float | None) -> str:
    if ratio is None:
        return UNRATED
    return next((label for low, label in BANDS if ratio >= low), SLOWER)


@dataclass(frozen=True)
class Neighbour:
    """A tuned shape and the nearest other tuned shape of its device, dtype, layout and type of
    C: the
    answer it would get if it had not been tuned."""

    entry: Tuned
    nearest: Tuned | None
    distance: float | None


def neighbours(entries: list[Tuned]) -> list[Neighbour]:
    out = []
    for entry in entries:
        # shape_distance of every pair, from the entries' logs taken once.
        others = [
            (math.dist(entry.log_point, o.log_point), o)
            for o in entries
            if o is not entry
            and (o.device, o.dtype, o.layout, o.out_dtype)
            == (entry.device, entry.dtype, entry.layout, entry.out_dtype)
        ]
        distance, nearest = min(others, key=lambda item: item[0], default=(None, None))
        out.append(Neighbour(entry, nearest, distance))
    return out


def _point(m: int, n: int, k: int, group: str, tooltip: str) -> Point:
    return Point(math.log2(m * n), math.log2(k), group, tooltip)


def space_chart(entries: list[Tuned], asked: Answer | None) -> Markup:
    points = [
        _point(
            e.m, e.n, e.k, band(e.ratio),
            f"{e.m}x{e.n}x{e.k} on {e.device.name}: {e.config_name}, "
            f"{e.ratio or 0:.2f}x cuBLAS, {e.tflops or 0:.1f} TFLOP/s",
        )
        for e in entries
    ]  # fmt: skip
    if asked is not None:
        points.append(
            _point(asked.m, asked.n, asked.k, ASKED, f"{asked.m}x{asked.n}x{asked.k}: asked")
        )
    return scatter_chart(
        points,
        title="Tuned shapes: output size against depth, coloured by the ratio to cuBLAS",
        x_label="log2(M·N), output elements",
        y_label="log2(K)",
        colours=COLOURS,
    )


@dataclass(frozen=True)
class Question:
    """What the page's form asks, as ``POST /v1/configs/best`` takes it: the shape's text
    (``MxNxK``), the device's name ('' for any), the input type, layout, accuracy floor and
    type of C ('' for the default: the input type)."""

    shape: str = ""
    device: str = ""
    dtype: str = "float32"
    layout: str = "NN"
    accuracy: str = DEFAULT_ACCURACY
    out_dtype: str = ""


def ask(tuning: Tuning, question: Question) -> Answer:
    """The answer the API gives to ``question``.

    Raises:
        InputError: a malformed shape, an unknown device, type, layout or class (naming it).
    """
    problem = parse_shape(question.shape.strip())
    spec = DeviceSpec(question.device) if question.device else None
    return tuning.answer(
        problem.m,
        problem.n,
        problem.k,
        question.dtype,
        question.layout,
        device=spec,
        accuracy=question.accuracy,
        out_dtype=question.out_dtype or None,
    )


def shape_space_context(tuning: Tuning, question: Question) -> dict[str, Any]:
    """Template context of ``/dashboard/shapes``; a bad field of the question is shown on the
    page as the line the API would answer with."""
    entries = sorted(tuning.entries, key=lambda e: (e.device.name, e.m * e.n * e.k, e.m, e.n))
    answer, error = None, None
    if question.shape:
        try:
            answer = ask(tuning, question)
        except InputError as exc:
            error = str(exc)
    return {
        "entries": neighbours(entries),
        "devices": sorted({d.name for d in tuning.devices}),
        "chart": space_chart(entries, answer) if entries else None,
        "question": question,
        "dtypes": SUPPORTED_DTYPES,
        "layouts": SUPPORTED_LAYOUTS,
        "accuracies": ACCURACY_NAMES,
        "answer": answer,
        "error": error,
        "far_distance": FAR_DISTANCE,
    }
