"""Sweep tables: every candidate of some families on some shapes, measured on one GPU.

``gemmtune sweep`` writes them with :class:`SweepTableWriter`; the replay evaluator, the
priors and the server's preload read them with :func:`read_sweep_table`. JSON lines:

* line 1, the header: ``{"kind": "header", "device": NAME, "arch": "sm_90", "date": ISO,
  "provenance": {..., "sm_count": 132, ...}, ...}`` (other keys say how the sweep ran, e.g.
  ``budget_ms`` and ``where``, and are kept as ``details``);
* then one result per (shape, config): ``{"kind": "result", "shape": "MxNxK", "config_name",
  "family", "status", "reason", "ms", "cublas_ms", "rel_error", "registers", "smem_bytes",
  "occupancy"}``; an ``ok`` result has its ``ms``.

Bad content stops the read with the file and line named (:mod:`tuner.data.validation`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from tuner.core.config import Config
from tuner.core.errors import InputError
from tuner.core.result import Result
from tuner.core.shape import Shape, parse_shape
from tuner.core.statuses import STATUSES
from tuner.data.measured_on import MeasuredOn, measured_on
from tuner.data.user_files import read_text
from tuner.data.validation import (
    BadField,
    ResultsFileError,
    json_object,
    mapping,
    optional_integer,
    optional_number,
    optional_text,
    text,
)

_HEADER_KEYS = ("kind", "device", "arch", "date", "provenance")


@dataclass(frozen=True)
class SweepHeader:
    """The GPU and versions a table was measured with."""

    device: str
    arch: str
    provenance: dict[str, Any]  # holds the SM count, driver, CUDA, NVRTC and CuPy versions
    date: str | None = None
    details: dict[str, Any] = field(default_factory=dict)  # how it was swept

    def __post_init__(self) -> None:
        measured_on(self.device, self.provenance, self.arch)  # the provenance has the SM count

    @property
    def gpu(self) -> MeasuredOn:
        return measured_on(self.device, self.provenance, self.arch)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SweepHeader:
        details = {key: value for key, value in obj.items() if key not in _HEADER_KEYS}
        return cls(
            text(obj, "device"),
            text(obj, "arch"),
            mapping(obj, "provenance"),
            optional_text(obj, "date"),
            details,
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": "header",
            "device": self.device,
            "arch": self.arch,
            "date": self.date,
            **self.details,
            "provenance": self.provenance,
        }


@dataclass(frozen=True)
class SweepRow:
    """One measured (or failed) candidate at one shape."""

    shape: Shape
    config_name: str
    family: str
    status: str
    reason: str | None = None
    ms: float | None = None
    cublas_ms: float | None = None
    rel_error: float | None = None
    registers: int | None = None
    smem_bytes: int | None = None
    occupancy: float | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise BadField(f"`status` must be one of {', '.join(STATUSES)}, got {self.status!r}")
        if self.status == "ok" and self.ms is None:
            raise BadField("an ok result needs its `ms`")

    @property
    def ok_ms(self) -> float | None:
        """Its time when it ran correctly, else None."""
        return self.ms if self.status == "ok" else None

    @classmethod
    def from_result(cls, result: Result, shape: Shape) -> SweepRow:
        return cls(
            shape,
            result.config_name,
            result.family,
            result.status,
            result.reason,
            result.ms,
            result.cublas_ms,
            result.rel_error,
            result.registers,
            result.smem_bytes,
            result.occupancy,
        )

    def to_result(self, config: Config, provenance: dict[str, Any]) -> Result:
        """The row as the result it recorded, with TFLOP/s and the ratio to cuBLAS from its
        times (the inverse of :meth:`from_result`)."""
        ms, base = self.ms, self.cublas_ms
        return Result(
            config.name,
            config.family,
            config.as_dict(),
            self.status,
            self.reason,
            ms=ms,
            tflops=self.shape.tflops(ms),
            cublas_ms=base,
            cublas_tflops=self.shape.tflops(base),
            ratio=base / ms if ms and base else None,
            rel_error=self.rel_error,
            registers=self.registers,
            smem_bytes=self.smem_bytes,
            occupancy=self.occupancy,
            provenance=provenance,
        )

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], shapes: dict[str, Shape]) -> SweepRow:
        """``shapes`` caches parsed shape strings across the rows of a table."""
        shape_text = text(obj, "shape")
        if shape_text not in shapes:
            try:
                shapes[shape_text] = parse_shape(shape_text)
            except InputError as exc:
                raise BadField(f"`shape`: {exc}") from None
        return cls(
            shapes[shape_text],
            text(obj, "config_name"),
            text(obj, "family"),
            text(obj, "status"),
            optional_text(obj, "reason"),
            optional_number(obj, "ms"),
            optional_number(obj, "cublas_ms"),
            optional_number(obj, "rel_error"),
            optional_integer(obj, "registers"),
            optional_integer(obj, "smem_bytes"),
            optional_number(obj, "occupancy"),
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": "result",
            "shape": str(self.shape),
            "config_name": self.config_name,
            "family": self.family,
            "status": self.status,
            "reason": self.reason,
            "ms": self.ms,
            "cublas_ms": self.cublas_ms,
            "rel_error": self.rel_error,
            "registers": self.registers,
            "smem_bytes": self.smem_bytes,
            "occupancy": self.occupancy,
        }


@dataclass(frozen=True)
class SweepTable:
    path: Path
    header: SweepHeader
    rows: tuple[SweepRow, ...]


def read_sweep_table(path: Path) -> SweepTable:
    """The header and every result of the table at ``path``, in file order."""
    lines = read_text(path, "sweep table").split("\n")
    header: SweepHeader | None = None
    rows: list[SweepRow] = []
    shapes: dict[str, Shape] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json_object(json.loads(line), "a line")
            kind = obj.get("kind")
            if header is None and kind != "header":
                raise BadField(f"a table starts with its header, got `kind` {kind!r}")
            if header is None:
                header = SweepHeader.from_json(obj)
            elif kind == "result":
                rows.append(SweepRow.from_json(obj, shapes))
            else:
                raise BadField(f"`kind` must be 'result' after the header, got {kind!r}")
        except (json.JSONDecodeError, BadField) as exc:
            raise ResultsFileError(path, f"line {number}", str(exc)) from None
    if header is None:
        raise ResultsFileError(path, "line 1", "the file is empty, a table starts with its header")
    return SweepTable(path, header, tuple(rows))


class SweepTableWriter:
    """Writes a table a line at a time, each flushed, so a sweep cut short keeps what it
    measured (and ``read_sweep_table`` reads it)."""

    def __init__(self, path: Path, header: SweepHeader) -> None:
        self._handle = path.open("w", encoding="utf-8")
        self._line(header.as_json())

    def add(self, row: SweepRow) -> None:
        self._line(row.as_json())

    def _line(self, obj: dict[str, Any]) -> None:
        self._handle.write(json.dumps(obj) + "\n")
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> SweepTableWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
