"""Replay evaluator: answers from a table of real GPU measurements (an exhaustive sweep).

The table is the JSON-lines file that ``benchmarks/sweep.py`` writes on the GPU: a header with the
device and versions, then one row per (shape, config) with its status and times. Studies run on
it exactly as on the GPU, with real numbers, in CI and for sampler research.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tuner.config import Config
from tuner.errors import InputError
from tuner.evaluate import Comparison, Result
from tuner.families import FAMILIES, parse_config
from tuner.rates import DeviceRates
from tuner.resources import DeviceLimits, table_device
from tuner.shape import Shape, parse_shape

DEFAULT_TABLE = (
    Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "h100-sweep.jsonl"
)


class ReplayEvaluator:
    """Looks results up by (shape, config name); counts how many it answered.

    Several tables of one device may be given (sweeps of different families or shapes); where
    two hold the same (shape, config), the later table's row is kept (the newer measurement when
    they are given oldest first).
    """

    def __init__(self, table: Path | str | Sequence[Path | str] = DEFAULT_TABLE) -> None:
        paths = [Path(table)] if isinstance(table, (str, Path)) else [Path(t) for t in table]
        if not paths:
            raise InputError("a replay needs at least one table")
        self.rows: dict[tuple[Shape, str], dict[str, Any]] = {}
        headers = [self._read(path) for path in paths]
        devices = {h.get("device", "replayed GPU") for h in headers}
        if len(devices) > 1:
            raise InputError(
                f"replay tables {', '.join(p.name for p in paths)} were measured on different "
                f"devices ({', '.join(sorted(devices))}): give tables of one device"
            )
        header = headers[-1]
        self.device: DeviceLimits = replace(
            table_device(header.get("arch", "sm_90")), name=header.get("device", "replayed GPU")
        )
        self.provenance: dict[str, Any] = {
            **header.get("provenance", {}),
            "replayed_from": " + ".join(p.name for p in paths),
        }
        measured = {row.get("family") for row in self.rows.values()}
        # The families the tables measured, in the order of tuner.families.FAMILIES.
        self.families: tuple[str, ...] = tuple(f for f in FAMILIES if f in measured)
        self.evaluations = 0
        self.parallelism = 1  # nothing to prepare ahead

    def _read(self, path: Path) -> dict[str, Any]:
        """Add one table's rows; its header."""
        if not path.is_file():
            raise InputError(f"replay table {str(path)!r} does not exist")
        header: dict[str, Any] = {}
        with path.open() as handle:
            for number, line in enumerate(handle, 1):
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"replay table {path.name} line {number}: {exc}") from None
                if not isinstance(row, dict):
                    raise InputError(f"replay table {path.name} line {number}: not a JSON object")
                if row.get("kind") == "header":
                    header = row
                elif row.get("kind") == "result":
                    try:
                        self.rows[(parse_shape(row["shape"]), str(row["config_name"]))] = row
                    except (KeyError, TypeError, InputError) as exc:
                        raise InputError(
                            f"replay table {path.name} line {number}: bad result row ({exc})"
                        ) from None
        return header

    def shapes(self) -> list[Shape]:
        return sorted({shape for shape, _ in self.rows})

    def configs(self, shape: Shape) -> list[Config]:
        return [parse_config(name) for (s, name) in self.rows if s == shape]

    def measured_configs(self, shape: Shape) -> set[str] | None:
        """The config names the tables hold for ``shape``: a study on a replay searches only
        these (any other candidate would have no answer)."""
        return {name for (s, name) in self.rows if s == shape}

    def evaluate(self, config: Config, shape: Shape) -> Result:
        self.evaluations += 1
        return self._answer(config, shape)

    def _answer(self, config: Config, shape: Shape) -> Result:
        row = self.rows.get((shape, config.name))
        if row is None:
            return Result.failed(
                config,
                "pruned",
                f"not measured in the replay table for {shape}",
                provenance=self.provenance,
            )
        ms, base = row.get("ms"), row.get("cublas_ms")
        return Result(
            config.name,
            config.family,
            config.as_dict(),
            row["status"],
            row.get("reason"),
            ms=ms,
            tflops=shape.flops / (ms * 1e9) if ms else None,
            cublas_ms=base,
            cublas_tflops=shape.flops / (base * 1e9) if base else None,
            ratio=base / ms if ms and base else None,
            rel_error=row.get("rel_error"),
            registers=row.get("registers"),
            smem_bytes=row.get("smem_bytes"),
            occupancy=row.get("occupancy"),
            provenance=self.provenance,
        )

    def prepare(self, config: Config) -> None:
        return None  # nothing to compile

    def compare(self, configs: Sequence[Config], shape: Shape, rounds: int) -> list[Comparison]:
        """The tables' times, as if re-measured ``rounds`` times without noise."""
        answers = []
        for config in configs:
            result = self._answer(config, shape)
            if result.status != "ok" or result.ms is None or result.cublas_ms is None:
                answers.append(Comparison(config.name, result.status, result.reason))
                continue
            answers.append(
                Comparison(
                    config.name,
                    "ok",
                    None,
                    (result.ms,) * rounds,
                    (result.cublas_ms,) * rounds,
                    result.rel_error,
                )
            )
        return answers

    def probe(self) -> DeviceRates | None:
        return None  # a table holds no rates

    def close(self) -> None:
        return None
