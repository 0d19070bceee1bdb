"""Starting points for new studies from committed results: suites and sweep tables.

A study on a fresh database has no tuned neighbours to start from. The repository carries the
suites measured on the lent GPUs (``benchmarks/results/<device>-suite.json``, written by
``gemmtune bench``) and sweep tables (``benchmarks/results/<device>-sweep*.jsonl``, written by
``benchmarks/sweep.py``); for a GPU of the same name, or of the same architecture and SM count,
the configs that were best there are where a new study should look first: the suite's config of
the same shape, then each sweep table's fastest config of each family at that shape (fastest
first), then those of the nearest shapes. They are only proposals: each is measured again like
any other candidate, and nothing is taken from the files but config names.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from storage import shape_distance
from tuner.errors import InputError
from tuner.families import parse_config
from tuner.resources import DeviceLimits
from tuner.shape import Shape, parse_shape

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


@dataclass(frozen=True)
class SuiteBests:
    """The GPU of one ``gemmtune bench`` file and its shapes' best configs."""

    device: str
    arch: str  # "sm_90" from the provenance's compute capability; "" when absent
    sm_count: int
    rows: list[tuple[tuple[int, int, int], str]]  # ((m, n, k), config name)
    # Each row's measured ms where the file ranks rows by it (sweep tables); empty for a suite,
    # whose one config per shape goes before any sweep's.
    ms: tuple[float, ...] = ()

    def same_chip(self, device: DeviceLimits) -> bool:
        """The same GPU by name, or one of the same architecture and SM count (an H200 and an
        H100 SXM share the chip's 132 SMs; their bests are where to start, not answers)."""
        return self.device == device.name or (
            self.arch == device.arch and self.sm_count == device.sm_count
        )


NOTHING = SuiteBests("", "", 0, [])


def suite_bests(path: Path) -> SuiteBests:
    """The shapes of one ``gemmtune bench`` JSON file whose config measured ``ok``, with its GPU.
    A file of another format gives ``NOTHING``."""
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return NOTHING
    if not isinstance(document, dict) or not isinstance(document.get("shapes"), list):
        return NOTHING
    rows: list[tuple[tuple[int, int, int], str]] = []
    for row in document["shapes"]:
        if not isinstance(row, dict) or row.get("status") != "ok":
            continue
        try:
            dims = (int(row["m"]), int(row["n"]), int(row["k"]))
            name = str(row["config"])
            parse_config(name)  # a name this version of the tuner still knows
        except (KeyError, TypeError, ValueError, InputError):
            continue
        rows.append((dims, name))
    arch, sm_count = _provenance_chip(document)
    return SuiteBests(str(document.get("device", "")), arch, sm_count, rows)


def _provenance_chip(header: dict[str, object]) -> tuple[str, int]:
    """(arch, SM count) of a results file's provenance; ("", 0) when absent."""
    provenance = header.get("provenance")
    provenance = provenance if isinstance(provenance, dict) else {}
    try:
        return "sm_" + str(provenance["compute_capability"]).replace(".", ""), int(
            provenance["sm_count"]
        )
    except (KeyError, TypeError, ValueError):
        return "", 0


@functools.lru_cache(maxsize=64)
def _sweep_bests(path: Path, mtime_ns: int) -> SuiteBests:
    rows: dict[tuple[tuple[int, int, int], str], tuple[float, str]] = {}
    header: dict[str, object] = {}
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return NOTHING
    for line in lines:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(row, dict):
            continue
        if row.get("kind") == "header":
            header = row
            continue
        if row.get("status") != "ok" or not isinstance(row.get("ms"), (int, float)):
            continue
        try:
            shape = parse_shape(str(row["shape"]))
            key = ((shape.m, shape.n, shape.k), str(row["family"]))
            name = str(row["config_name"])
        except (KeyError, InputError):
            continue
        if key in rows and row["ms"] >= rows[key][0]:
            continue
        try:
            parse_config(name)  # a name this version of the tuner still knows
        except InputError:
            continue
        rows[key] = (float(row["ms"]), name)
    kept = [(dims, name, ms) for (dims, _), (ms, name) in sorted(rows.items())]
    arch, sm_count = _provenance_chip(header)
    return SuiteBests(
        str(header.get("device", "")),
        arch,
        sm_count,
        [(dims, name) for dims, name, _ in kept],
        tuple(ms for _, _, ms in kept),
    )


def sweep_bests(path: Path) -> SuiteBests:
    """The fastest ``ok`` config of each family at each shape of one sweep table (JSON lines of
    ``benchmarks/sweep.py``), with its GPU; unreadable lines are skipped. Cached per file
    version."""
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        return NOTHING
    return _sweep_bests(path, mtime)


def committed_starts(
    device: DeviceLimits, shape: Shape, results: Path | None = None
) -> list[tuple[float, str]]:
    """(distance, config name) of the committed suite results and sweep tables of ``device``'s
    chip (``SuiteBests.same_chip``), nearest shape first (``storage.shape_distance``; 0.0 is
    ``shape`` itself); at equal distance a file of the same GPU name first, a suite's config
    before the sweeps' and those by measured time, then by name; each config once, at its
    nearest shape. ``results``: the folder of result files (default ``RESULTS``)."""
    folder = RESULTS if results is None else results
    if not folder.is_dir():
        return []
    target = (shape.m, shape.n, shape.k)
    scored: list[tuple[float, bool, float, str]] = []
    suites = [suite_bests(p) for p in sorted(folder.glob("*-suite.json"))]
    sweeps = [sweep_bests(p) for p in sorted(folder.glob("*-sweep*.jsonl"))]
    for bests in suites + sweeps:
        if bests.same_chip(device):
            other = bests.device != device.name
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
