"""Exhaustive sweeps: every candidate of some families on some shapes, measured on one GPU.

A sweep writes a sweep table (:mod:`tuner.data.sweep_table`): a header with the device, date
and versions, then one row per (shape, config) with every status, failures with their reason.
Replay, priors and the server's preload read these tables, so they are how measurements on a lent
GPU become data the program ships.

Kernels do not depend on the shape, so each family's candidates (the union over the shapes) are
handed to the evaluator to compile ahead, on every core, while they are measured one by one. A
sweep longer than one GPU session runs in pieces: ``resume`` names the tables already written,
whose rows are skipped. ``where`` keeps a slice of a large space: the candidates whose named
parameters take one of the listed values.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tuner.core.config import Config
from tuner.core.errors import InputError
from tuner.core.result import Result
from tuner.core.shape import Shape
from tuner.data import SweepHeader, SweepRow, SweepTableWriter, read_sweep_table
from tuner.kernels.families import FAMILIES
from tuner.kernels.resources import DeviceLimits
from tuner.kernels.space import Space
from tuner.search.evaluator import Evaluator

Where = Mapping[str, frozenset[int]]


@dataclass(frozen=True)
class SweepRequest:
    """What one sweep measures and where it writes, checked once by :meth:`checked`."""

    families: tuple[str, ...]
    shapes: tuple[Shape, ...]
    out: Path
    resume: tuple[Path, ...] = ()
    budget_ms: float = 25.0  # timed kernel milliseconds per config
    max_minutes: float = 9.0  # stop measuring (the table stays readable) after this long
    where: Where = field(default_factory=dict)

    def checked(self) -> SweepRequest:
        """This request, or an :class:`InputError` naming the first value that cannot run."""
        if not self.families:
            raise InputError("a sweep needs at least one --family")
        for name in self.families:
            if name not in FAMILIES:
                raise InputError(f"unknown family {name!r}; choose one of {', '.join(FAMILIES)}")
        if not self.shapes:
            raise InputError("a sweep needs at least one --shape")
        for shape in self.shapes:
            if (shape.dtype, shape.layout) != ("float32", "NN"):
                raise InputError(
                    f"sweep tables hold float32 NN shapes only, got {shape.dtype} {shape.layout}"
                )
        if self.out.resolve() in {path.resolve() for path in self.resume}:
            raise InputError(
                f"--out {self.out} is also a --resume table; write the next piece to a new file"
            )
        for path in self.resume:
            if not path.is_file():
                raise InputError(f"--resume table {path} does not exist")
        if self.budget_ms <= 0 or self.max_minutes <= 0:
            raise InputError(
                f"--budget-ms and --max-minutes must be > 0, got {self.budget_ms} and "
                f"{self.max_minutes}"
            )
        return self


@dataclass(frozen=True)
class SweepOutcome:
    """What a sweep wrote: rows measured, and whether the time limit cut it short."""

    rows: int
    cut_short: bool


def parse_where(items: Iterable[str]) -> dict[str, frozenset[int]]:
    """``["THREADS=128,256", "BK=32"]`` -> ``{"THREADS": {128, 256}, "BK": {32}}``."""
    where: dict[str, frozenset[int]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        try:
            parsed = frozenset(int(v) for v in values.split(","))
        except ValueError:
            parsed = frozenset()
        if not sep or not name.strip() or not parsed:
            raise InputError(f"--where {item!r} must look like NAME=INT[,INT...]")
        where[name.strip().upper()] = parsed
    return where


def selected(config: Config, where: Where) -> bool:
    """True when every parameter named in ``where`` that the config has takes a listed value."""
    params = config.as_dict()
    return all(params[name] in values for name, values in where.items() if name in params)


def already_measured(paths: Sequence[Path]) -> set[tuple[str, str]]:
    """(shape, config name) of every row of the tables a resumed sweep continues."""
    return {
        (str(row.shape), row.config_name) for path in paths for row in read_sweep_table(path).rows
    }


def still_to_measure(
    request: SweepRequest, family: str, device: DeviceLimits, done: set[tuple[str, str]]
) -> dict[Shape, list[Config]]:
    """Per shape, the family's selected candidates that no resumed table measured."""
    return {
        shape: [
            config
            for config in Space(family, shape, device).candidates()
            if (str(shape), config.name) not in done and selected(config, request.where)
        ]
        for shape in request.shapes
    }


def sweep_header(evaluator: Evaluator, request: SweepRequest) -> SweepHeader:
    """The table's header: the evaluator's device and versions, now, and how it was swept."""
    return SweepHeader(
        evaluator.device.name,
        evaluator.device.arch,
        evaluator.provenance,
        dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        {
            "budget_ms": request.budget_ms,
            "where": {name: sorted(values) for name, values in request.where.items()},
        },
    )


def _best_line(shape: Shape, measured: int, best: Result | None) -> str | None:
    if best is None or not best.tflops or not best.ratio:
        return None
    return (
        f"  {shape}: {measured} measured, best {best.config_name} "
        f"{best.tflops:.1f} TFLOP/s, x{best.ratio:.2f} cuBLAS"
    )


def run_sweep(
    request: SweepRequest,
    evaluator: Evaluator,
    say: Callable[[str], None] = print,
    clock: Callable[[], float] = time.monotonic,
) -> SweepOutcome:
    """Measure every selected candidate not yet measured into ``request.out``, family by family.

    The caller owns ``evaluator`` (and closes it). ``say`` gets one line per family and per
    shape; ``clock`` (seconds) decides when ``request.max_minutes`` have passed.
    """
    deadline = clock() + request.max_minutes * 60
    done = already_measured(request.resume)
    rows = 0
    with SweepTableWriter(request.out, sweep_header(evaluator, request)) as out:
        for family in request.families:
            todo = still_to_measure(request, family, evaluator.device, done)
            # Compiled on every core, in the order they are measured, while the first run.
            union = list(dict.fromkeys(c for configs in todo.values() for c in configs))
            for config in union:
                evaluator.prepare(config)
            say(f"{family}: {len(union)} configs to compile")
            for shape, configs in todo.items():
                best: Result | None = None
                for config in configs:
                    if clock() > deadline:
                        say("time limit reached")
                        return SweepOutcome(rows, cut_short=True)
                    result = evaluator.evaluate(config, shape)
                    out.add(SweepRow.from_result(result, shape))
                    rows += 1
                    if result.ms is not None and (best is None or result.ms < (best.ms or 0.0)):
                        best = result  # only results with a time become best
                line = _best_line(shape, len(configs), best)
                if line is not None:
                    say(line)
    return SweepOutcome(rows, cut_short=False)
