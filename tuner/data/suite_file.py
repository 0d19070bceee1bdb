"""Suite files: one config per shape of a shape suite, re-measured beside cuBLAS on one GPU.

``gemmtune bench`` writes them (``<device>-suite.json``: :func:`suite_document`, then
:func:`write_suite_file`), and so does ``gemmtune report`` (``h100.json``); the priors, the
server's preload and ``gemmtune report`` read them with :func:`read_suite_file`. One JSON object:

* ``device`` (the GPU's name) and ``provenance`` (with ``sm_count`` and ``compute_capability``,
  and the driver, CUDA, NVRTC and CuPy versions);
* ``shapes``: one row per suite shape, ``{"class", "m", "n", "k", "dtype", "layout",
  "out_dtype", "status", "config", "ms",
  "tflops", "cublas_ms", "cublas_tflops", "ratio", "rel_error", ...}``: ``config`` is null when
  the shape got none (``status`` ``no_config``), the figures are numbers or null, and an ``ok``
  row has its config and ``ms``; a row without ``out_dtype`` (a file from before C had a type)
  was measured writing float32 C;
* whatever else the writer records (``what``, ``date``, ``method``, ``roofline``, ``summary``,
  a row's ``roofline`` or ``rounds``), kept as it is in :attr:`SuiteFile.document`.

Bad content stops the read with the file and row named (:mod:`tuner.data.validation`); the
writer checks a document by the same rules before it writes it.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuner.core.errors import InputError
from tuner.core.shape import STORED_OUT_DTYPE, Shape
from tuner.core.statuses import STATUSES
from tuner.data.measured_on import MeasuredOn, measured_on
from tuner.data.user_files import read_text
from tuner.data.validation import (
    BadField,
    ResultsFileError,
    integer,
    json_object,
    mapping,
    optional_number,
    optional_text,
    text,
)

ROW_STATUSES = (*STATUSES, "no_config")
BENCH_WHAT = (
    "gemmtune bench: the best stored (or freshly tuned) config per suite shape, in the row's "
    "dtype and layout (float32 NN when a row names none), re-measured side by side with cuBLAS "
    "in the same dtype with FP32 sums (TF32 off) in one worker process; ratio = cuBLAS time / "
    "our time"
)
_FIGURES = ("ms", "tflops", "cublas_ms", "cublas_tflops", "ratio", "rel_error")


@dataclass(frozen=True)
class SuiteRow:
    """What readers use of one shape's row."""

    label: str | None  # the suite class: square, llm, skinny, ...
    shape: Shape
    status: str
    config: str | None
    ms: float | None = None
    tflops: float | None = None
    cublas_ms: float | None = None
    cublas_tflops: float | None = None
    ratio: float | None = None
    rel_error: float | None = None

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SuiteRow:
        try:
            shape = Shape(
                integer(obj, "m"),
                integer(obj, "n"),
                integer(obj, "k"),
                optional_text(obj, "dtype") or "float32",  # files from before dtypes: float32
                optional_text(obj, "layout") or "NN",
                optional_text(obj, "out_dtype") or STORED_OUT_DTYPE,
            )
        except InputError as exc:
            raise BadField(str(exc)) from None
        row = cls(
            optional_text(obj, "class"),
            shape,
            text(obj, "status"),
            optional_text(obj, "config"),
            *(optional_number(obj, name) for name in _FIGURES),
        )
        if row.status not in ROW_STATUSES:
            raise BadField(f"`status` must be one of {', '.join(ROW_STATUSES)}, got {row.status!r}")
        if row.status == "ok" and (row.config is None or row.ms is None):
            raise BadField("an ok row needs its `config` and `ms`")
        return row


@dataclass(frozen=True)
class SuiteFile:
    path: Path
    gpu: MeasuredOn
    rows: tuple[SuiteRow, ...]
    document: dict[str, Any]  # the whole file, for renderers and summaries

    @property
    def provenance(self) -> dict[str, Any]:
        return dict(self.document["provenance"])


def read_suite_file(path: Path) -> SuiteFile:
    text_of_file = read_text(path, "suite file")
    try:
        document = json.loads(text_of_file)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(path, f"line {exc.lineno}", exc.msg) from None
    return _checked(path, document)


def _checked(path: Path, document: object) -> SuiteFile:
    """The file's GPU and rows, or a :class:`ResultsFileError` naming what is wrong."""
    try:
        top = json_object(document, "a suite file")
        gpu = measured_on(text(top, "device"), mapping(top, "provenance"))
        shapes = top.get("shapes")
        if not isinstance(shapes, list):
            raise BadField(f"`shapes` must be a list of rows, got {type(shapes).__name__}")
    except BadField as exc:
        raise ResultsFileError(path, "(top level)", str(exc)) from None
    rows = []
    for index, row in enumerate(shapes):
        try:
            rows.append(SuiteRow.from_json(json_object(row, "a row")))
        except BadField as exc:
            raise ResultsFileError(path, f"shapes[{index}]", str(exc)) from None
    return SuiteFile(path, gpu, tuple(rows), dict(top))


def suite_document(
    *,
    device: str,
    provenance: Mapping[str, Any],
    suite: str,
    method: Mapping[str, Any],
    roofline: Mapping[str, Any] | None,
    summary: Mapping[str, Any],
    rows: list[dict[str, Any]],
    what: str = BENCH_WHAT,
) -> dict[str, Any]:
    """A suite document, dated now (the provenance too): what ``gemmtune bench`` writes, or,
    with its own ``what``, another writer of suite files."""
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return {
        "what": what,
        "date": now,
        "device": device,
        "provenance": {**provenance, "date": now},
        "suite": suite,
        "method": dict(method),
        "roofline": None if roofline is None else dict(roofline),
        "summary": dict(summary),
        "shapes": rows,
    }


def write_suite_file(path: Path, document: Mapping[str, Any]) -> None:
    """Check ``document`` by the readers' rules, then write it (folders made as needed)."""
    _checked(path, document)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
