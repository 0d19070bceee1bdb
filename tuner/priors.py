"""Starting points for new studies from committed suite results (``gemmtune bench`` outputs).

A study on a fresh database has no tuned neighbours to start from. The repository carries the
suites measured on the lent GPUs (``benchmarks/results/<device>-suite.json``, written by
``gemmtune bench``); for a GPU of the same name, or of the same architecture and SM count, the
configs that were best there are where a new study should look first: the one of the same
shape, then those of the nearest shapes. They are only proposals: each is measured again like
any other candidate, and nothing is taken from the file but config names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from storage import shape_distance
from tuner.errors import InputError
from tuner.families import parse_config
from tuner.resources import DeviceLimits
from tuner.shape import Shape

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


@dataclass(frozen=True)
class SuiteBests:
    """The GPU of one ``gemmtune bench`` file and its shapes' best configs."""

    device: str
    arch: str  # "sm_90" from the provenance's compute capability; "" when absent
    sm_count: int
    rows: list[tuple[tuple[int, int, int], str]]  # ((m, n, k), config name)

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
    provenance = document.get("provenance")
    provenance = provenance if isinstance(provenance, dict) else {}
    try:
        arch = "sm_" + str(provenance["compute_capability"]).replace(".", "")
        sm_count = int(provenance["sm_count"])
    except (KeyError, TypeError, ValueError):
        arch, sm_count = "", 0
    return SuiteBests(str(document.get("device", "")), arch, sm_count, rows)


def committed_starts(
    device: DeviceLimits, shape: Shape, results: Path | None = None
) -> list[tuple[float, str]]:
    """(distance, config name) of the committed suite results of ``device``'s chip
    (``SuiteBests.same_chip``), nearest shape first (``storage.shape_distance``; 0.0 is
    ``shape`` itself; at equal distance a file of the same GPU name first, then by name), each
    config once, at its nearest shape. ``results``: the folder of suite files (default
    ``RESULTS``)."""
    folder = RESULTS if results is None else results
    if not folder.is_dir():
        return []
    target = (shape.m, shape.n, shape.k)
    scored: list[tuple[float, bool, str]] = []
    for path in sorted(folder.glob("*-suite.json")):
        bests = suite_bests(path)
        if bests.same_chip(device):
            other = bests.device != device.name
            scored += [(shape_distance(target, dims), other, name) for dims, name in bests.rows]
    seen: set[str] = set()
    nearest: list[tuple[float, str]] = []
    for distance, _, config in sorted(scored):
        if config not in seen:
            seen.add(config)
            nearest.append((distance, config))
    return nearest
