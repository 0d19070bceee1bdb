"""Replay evaluator: answers from tables of real GPU measurements (exhaustive sweeps).

The tables are the sweep tables that ``gemmtune sweep`` writes on the GPU
(:mod:`tuner.data.sweep_table`). Studies run on them exactly as on the GPU, with real
numbers, in CI and for sampler research. Every result says it was replayed
(``Result.evaluator``): a database keeps it apart from measurements, and it never becomes a
device's best config (``tuner.core.evaluators``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tuner.core.config import Config
from tuner.core.errors import InputError
from tuner.core.evaluators import REPLAYED_FROM, EvaluatorKind
from tuner.core.result import Comparison, Result
from tuner.core.shape import Shape
from tuner.data import SweepRow, data_location, read_sweep_table
from tuner.kernels.families import FAMILIES, parse_config
from tuner.kernels.resources import DeviceLimits, table_device
from tuner.model.rates import DeviceRates
from tuner.search.evaluator import EvaluatesAtOnce

DEFAULT_TABLE_NAME = "h100-sweep.jsonl"


def default_table() -> Path:
    """The exhaustive H100 sweep of warptile and pipelined, in the results folder."""
    location = data_location()
    table = location.results / DEFAULT_TABLE_NAME
    if not table.is_file():
        raise InputError(
            f"the default replay table {DEFAULT_TABLE_NAME} is not in the results folder "
            f"{location.describe()}; give one with --replay-table"
        )
    return table


class ReplayEvaluator(EvaluatesAtOnce):
    """Looks results up by (shape, config name); counts how many it answered.

    Several tables of one device may be given (sweeps of different families or shapes); where
    two hold the same (shape, config), the later table's row is kept (the newer measurement when
    they are given oldest first). With no table, :func:`default_table`.
    """

    def __init__(self, table: Path | str | Sequence[Path | str] | None = None) -> None:
        if table is None:
            table = default_table()
        paths = [Path(table)] if isinstance(table, (str, Path)) else [Path(t) for t in table]
        if not paths:
            raise InputError("a replay needs at least one table")
        tables = [read_sweep_table(path) for path in paths]
        devices = {t.header.device for t in tables}
        if len(devices) > 1:
            raise InputError(
                f"replay tables {', '.join(p.name for p in paths)} were measured on different "
                f"devices ({', '.join(sorted(devices))}): give tables of one device"
            )
        self.rows: dict[tuple[Shape, str], SweepRow] = {
            (row.shape, row.config_name): row for t in tables for row in t.rows
        }
        header = tables[-1].header
        self.device: DeviceLimits = replace(table_device(header.arch), name=header.device)
        self.provenance: dict[str, Any] = {
            **header.provenance,
            REPLAYED_FROM: " + ".join(p.name for p in paths),
        }
        measured = {row.family for row in self.rows.values()}
        # The families the tables measured, in the order of tuner.kernels.families.FAMILIES.
        self.families: tuple[str, ...] = tuple(f for f in FAMILIES if f in measured)
        self.evaluations = 0
        self.parallelism = 1  # nothing to prepare ahead
        self.kind = EvaluatorKind.REPLAY.value

    def replica(self) -> ReplayEvaluator:
        """Another replay of the same tables (read once, shared: they are never written), for
        a second worker of one process, as a second GPU would be."""
        twin = copy.copy(self)
        twin.evaluations = 0
        twin.provenance = dict(self.provenance)
        return twin

    def shapes(self) -> list[Shape]:
        return sorted({shape for shape, _ in self.rows})

    def configs(self, shape: Shape) -> list[Config]:
        return [parse_config(name) for (s, name) in self.rows if s == shape]

    def measured_configs(self, shape: Shape) -> set[str] | None:
        """The config names the tables hold for ``shape``: a study on a replay searches only
        these (any other candidate would have no answer)."""
        return {name for (s, name) in self.rows if s == shape}

    def check_covers(self, shape: Shape, families: Sequence[str] = ()) -> None:
        """Refuse, before a study starts, a shape the tables hold no row of, or a named family
        (``families``; empty: the tables' own) they hold none of for it: every candidate would
        otherwise be pruned as unmeasured, and the study end with nothing to show."""
        tables = self.provenance[REPLAYED_FROM]
        held = [f for f in FAMILIES if any(r.family == f for r in self._rows_of(shape))]
        if not held:
            shapes = ", ".join(str(s) for s in self.shapes())
            raise InputError(
                f"replay table {tables} holds no measurements for {shape}; it holds {shapes} "
                "(tune one of those, or give another --replay-table)"
            )
        missing = [f for f in families if f not in held]
        if missing:
            raise InputError(
                f"replay table {tables} holds no {', '.join(missing)} measurements for {shape}; "
                f"for it it holds {', '.join(held)} (choose those with --family, or give "
                "another --replay-table)"
            )

    def _rows_of(self, shape: Shape) -> list[SweepRow]:
        return [row for (s, _), row in self.rows.items() if s == shape]

    def evaluate(self, config: Config, shape: Shape) -> Result:
        self.evaluations += 1
        return self._answer(config, shape)

    def _answer(self, config: Config, shape: Shape) -> Result:
        """The table's row as a result marked replayed (``tuner.core.evaluators``): stored, it is
        listed as such and never becomes the device's best config."""
        row = self.rows.get((shape, config.name))
        if row is None:
            return Result.failed(
                config,
                "pruned",
                f"not measured in the replay table for {shape}",
                provenance=self.provenance,
                evaluator=self.kind,
            )
        return replace(row.to_result(config, self.provenance), evaluator=self.kind)

    def prepare(self, config: Config) -> None:
        return None  # nothing to compile

    def compare(
        self,
        configs: Sequence[Config],
        shape: Shape,
        rounds: int,
        budget_ms: float | None = None,
    ) -> list[Comparison]:
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
