"""Starting points for new studies from committed results: suites and sweep tables.

A study on a fresh database has no tuned neighbours to start from. The results folder
(:mod:`tuner.data.location`) carries the suites measured on the lent GPUs
(``<device>-suite.json``, written by ``gemmtune bench``) and sweep tables
(``<device>-sweep*.jsonl``, written by ``gemmtune sweep``); for a GPU of the same name, or of
the same architecture and SM count, the configs that were best there are where a new study
should look first: the suite's config of the same shape, then each sweep table's fastest config
of each family at that shape (fastest first), then those of the nearest shapes. They are only
proposals: each is measured again like any other candidate, and nothing is taken from the files
but config names.

A file with bad content stops the study, naming the file and line
(:mod:`tuner.data.validation`). Rows that did not run correctly, and configs this version of
the tuner no longer knows, are not proposals and are passed over.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from tuner.core.dims import shape_distance
from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.data import (
    MeasuredOn,
    read_suite_file,
    read_sweep_table,
    results_dir,
    suite_files,
    sweep_tables,
)
from tuner.kernels.families import parse_config
from tuner.kernels.resources import DeviceLimits


@dataclass(frozen=True)
class CommittedBests:
    """The GPU of one results file and its shapes' best configs."""

    gpu: MeasuredOn
    rows: list[tuple[tuple[int, int, int], str]]  # ((m, n, k), config name)
    # Each row's measured ms where the file ranks rows by it (sweep tables); empty for a suite,
    # whose one config per shape goes before any sweep's.
    ms: tuple[float, ...] = ()

    def same_chip(self, device: DeviceLimits) -> bool:
        """The same GPU by name, or one of the same architecture and SM count (an H200 and an
        H100 SXM share the chip's 132 SMs; their bests are where to start, not answers)."""
        return self.gpu.name == device.name or (
            self.gpu.arch == device.arch and self.gpu.sm_count == device.sm_count
        )


def _known(name: str) -> bool:
    """A config name this version of the tuner still knows."""
    try:
        parse_config(name)
    except InputError:
        return False
    return True


def suite_bests(path: Path) -> CommittedBests:
    """The shapes of one suite file whose config measured ``ok``, with its GPU."""
    suite = read_suite_file(path)
    rows = [
        ((row.shape.m, row.shape.n, row.shape.k), row.config)
        for row in suite.rows
        if row.status == "ok" and row.config is not None and _known(row.config)
    ]
    return CommittedBests(suite.gpu, rows)


@functools.lru_cache(maxsize=64)
def _sweep_bests(path: Path, mtime_ns: int) -> CommittedBests:
    table = read_sweep_table(path)
    fastest: dict[tuple[Shape, str], tuple[float, str]] = {}
    for row in table.rows:
        key = (row.shape, row.family)
        if row.ok_ms is None or (key in fastest and row.ok_ms >= fastest[key][0]):
            continue
        if _known(row.config_name):
            fastest[key] = (row.ok_ms, row.config_name)
    kept = sorted(
        ((s.m, s.n, s.k), family, ms, name) for (s, family), (ms, name) in fastest.items()
    )
    return CommittedBests(
        table.header.gpu,
        [(dims, name) for dims, _, _, name in kept],
        tuple(ms for _, _, ms, _ in kept),
    )


def sweep_bests(path: Path) -> CommittedBests:
    """The fastest ``ok`` config of each family at each shape of one sweep table, with its GPU.
    Cached per file version."""
    return _sweep_bests(path, path.stat().st_mtime_ns)


def committed_starts(
    device: DeviceLimits, shape: Shape, results: Path | None = None
) -> list[tuple[float, str]]:
    """(distance, config name) of the committed suite results and sweep tables of ``device``'s
    chip (``CommittedBests.same_chip``), nearest shape first
    (:func:`tuner.core.dims.shape_distance`; 0.0 is ``shape`` itself); at equal distance a file
    of the same GPU name first, a suite's config before the sweeps' and those by measured time,
    then by name; each config once, at its nearest shape. ``results``: the folder of result
    files (default: the results folder)."""
    folder = results_dir() if results is None else results
    if not folder.is_dir():
        return []
    target = (shape.m, shape.n, shape.k)
    scored: list[tuple[float, bool, float, str]] = []
    suites = [suite_bests(p) for p in suite_files(folder)]
    sweeps = [sweep_bests(p) for p in sweep_tables(folder)]
    for bests in suites + sweeps:
        if bests.same_chip(device):
            other = bests.gpu.name != device.name
            times = bests.ms or (-1.0,) * len(bests.rows)
            scored += [
                (shape_distance(target, dims), other, ms, name)
                for (dims, name), ms in zip(bests.rows, times, strict=True)
            ]
    seen: set[str] = set()
    nearest: list[tuple[float, str]] = []
    for distance, _, _, config in sorted(scored):
        if config not in seen:
            seen.add(config)
            nearest.append((distance, config))
    return nearest
