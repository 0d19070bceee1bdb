"""Where the committed results live: one location, resolved the same way for every reader.

The program needs data that the repository commits under ``benchmarks/``: the sweep tables
(``results/*-sweep*.jsonl``, read by replay, priors and preload), the suite files
(``results/*-suite.json`` and ``results/h100.json``, read by priors and preload) and the default
shape suite (``shapes.csv``, read by ``gemmtune bench``). A wheel carries a copy of exactly these
files under ``tuner/_benchmarks/`` (``hatch_build.py`` asks :func:`shipped_files` what to copy),
so an installed copy has them too. The results folder is, in this order:

1. ``$GEMMTUNE_RESULTS_DIR`` when it is set;
2. ``benchmarks/results`` of the source checkout this package runs from;
3. ``tuner/_benchmarks/results``, the copy inside an installed wheel.

The default suite is the checkout's ``benchmarks/shapes.csv``, else the packaged copy.

Standard library only: the build hook loads this file by path, before any dependency exists.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

RESULTS_ENV_VAR = "GEMMTUNE_RESULTS_DIR"
SWEEP_TABLES = "*-sweep*.jsonl"  # benchmarks/sweep.py
SUITE_FILES = "*-suite.json"  # gemmtune bench
SUITE_BESTS = "h100.json"  # benchmarks/tuning_summary.py: the H100 bests of the public suite
SHIPPED_RESULTS = (SWEEP_TABLES, SUITE_FILES, SUITE_BESTS)
DEFAULT_SUITE_NAME = "shapes.csv"
PACKAGED = "tuner/_benchmarks"  # where a wheel keeps its copy of benchmarks/

_PACKAGE = Path(__file__).resolve().parent.parent  # tuner/
_ROOT = _PACKAGE.parent  # the checkout, when running from one


@dataclass(frozen=True)
class DataLocation:
    """Where this copy of gemmtune reads its committed data, and why there."""

    results: Path  # sweep tables and suite files
    suite: Path  # the default shape suite of ``gemmtune bench``
    origin: str  # "environment", "checkout" or "package"

    def describe(self) -> str:
        """The results folder and where its choice came from, for messages."""
        why = {
            "environment": f"${RESULTS_ENV_VAR}",
            "checkout": "the source checkout",
            "package": "the installed package",
        }[self.origin]
        return f"{self.results} (from {why})"


def is_checkout(root: Path) -> bool:
    """True when ``root`` is a source checkout of gemmtune with its committed results."""
    return (root / "pyproject.toml").is_file() and (root / "benchmarks" / "results").is_dir()


def data_location() -> DataLocation:
    """Resolved at each call, so a changed ``$GEMMTUNE_RESULTS_DIR`` is honoured at once."""
    if is_checkout(_ROOT):
        base, origin = _ROOT / "benchmarks", "checkout"
    else:
        base, origin = _ROOT / PACKAGED, "package"
    results = base / "results"
    chosen = os.environ.get(RESULTS_ENV_VAR)
    if chosen:
        results, origin = Path(chosen), "environment"
    return DataLocation(results, base / DEFAULT_SUITE_NAME, origin)


def results_dir() -> Path:
    """The folder of sweep tables and suite files that every reader uses."""
    return data_location().results


def default_suite() -> Path:
    """The shape suite ``gemmtune bench`` runs when none is given."""
    return data_location().suite


def output_dir() -> Path:
    """Where ``gemmtune bench`` writes when not told: the results folder, unless that is the
    installed package's copy (data of the install, not a place for a user's files); then the
    working directory."""
    location = data_location()
    return Path.cwd() if location.origin == "package" else location.results


def sweep_tables(folder: Path) -> list[Path]:
    """The sweep tables in ``folder``, by name."""
    return sorted(folder.glob(SWEEP_TABLES))


def suite_files(folder: Path) -> list[Path]:
    """The ``gemmtune bench`` suite files in ``folder``, by name."""
    return sorted(folder.glob(SUITE_FILES))


def shipped_files(root: Path) -> dict[str, str]:
    """What a wheel built from the checkout ``root`` carries: source path -> path in the wheel.

    Only what the readers above need: no profiles, tries, logs or history.
    """
    results = root / "benchmarks" / "results"
    suite = root / "benchmarks" / DEFAULT_SUITE_NAME
    files = sorted({path for pattern in SHIPPED_RESULTS for path in results.glob(pattern)})
    if not sweep_tables(results) or not suite.is_file():
        raise FileNotFoundError(
            f"no committed results under {root / 'benchmarks'} (sweep tables in results/ and "
            f"{DEFAULT_SUITE_NAME}): a wheel without them starts with no data"
        )
    shipped = {str(path): f"{PACKAGED}/results/{path.name}" for path in files}
    shipped[str(suite)] = f"{PACKAGED}/{DEFAULT_SUITE_NAME}"
    return shipped
