"""Stored measurements as plain values: one conversion for every reader of a whole record.

An export, the API's result lists and the tuner's ``Result`` all want a measurement's fields by
name (:data:`storage.MEASUREMENT_FIELDS`); :func:`measurement_values` is the one place that reads
them off a row, and :func:`shape_values` the one that reads a problem's key. TFLOP/s are derived
from the times where a row has none (uploads may leave them out), by
:func:`tuner.core.dims.tflops`.
"""

from __future__ import annotations

from typing import Any

from storage.inputs import MEASUREMENT_FIELDS, ShapeIn
from storage.models import Measurement, Shape
from tuner.core.dims import tflops
from tuner.core.provenance import readable_provenance

SHAPE_FIELDS = ("m", "n", "k", "dtype", "layout", "out_dtype")


def shape_values(shape: Shape | ShapeIn) -> dict[str, Any]:
    """A problem's key fields by name (a stored row's, or one about to be stored): what a shape
    row is written from, and what an export or a suite file writes of it."""
    return {name: getattr(shape, name) for name in SHAPE_FIELDS}


def measurement_values(row: Measurement, *, derive_tflops: bool = False) -> dict[str, Any]:
    """The row's :data:`~storage.MEASUREMENT_FIELDS`, JSON-ready (``created_at`` as ISO 8601,
    fresh copies of ``params`` and ``provenance``; a provenance stored before its rules, or
    around them, that no reader could send out is replaced by one key saying why:
    :func:`tuner.core.provenance.readable_provenance`).

    Args:
        derive_tflops: fill ``tflops`` and ``cublas_tflops`` from ``ms`` and ``cublas_ms`` where
            the row has none (what a reader shows; an export keeps the row as stored).
    """
    values = {name: getattr(row, name) for name in MEASUREMENT_FIELDS}
    values["params"] = dict(row.params)
    values["provenance"] = readable_provenance(row.provenance)
    values["created_at"] = row.created_at.isoformat()
    if derive_tflops:
        shape = row.shape
        for rate, time in (("tflops", "ms"), ("cublas_tflops", "cublas_ms")):
            if values[rate] is None:
                values[rate] = tflops(shape.m, shape.n, shape.k, values[time])
    return values
