"""Where the committed data lives: inside this package, wherever the package is installed.

``tuner/data/`` ships two folders of data beside the modules that read them:

* ``results/``: measured results. The sweep tables (``*-sweep*.jsonl``, written by
  ``gemmtune sweep``; read by replay, priors and the server's preload), the suite files
  (``*-suite*.json``, written by ``gemmtune bench``; the float32 ones read by priors, every one
  by preload) and the suite bests
  (``h100.json``, written by ``gemmtune report``; read by preload).
* ``suites/``: shape suites; ``shapes.csv`` is the one ``gemmtune bench`` runs when given none.

Readers find them through :mod:`importlib.resources`, so a source checkout, an editable install
and a wheel resolve them the same way. ``$GEMMTUNE_RESULTS_DIR`` replaces the results folder (a
user's own measurements, a test's small set); nothing else moves it. Nothing the program writes
goes into the package: ``gemmtune bench`` writes into the working directory unless told where.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

RESULTS_ENV_VAR = "GEMMTUNE_RESULTS_DIR"
SWEEP_TABLES = "*-sweep*.jsonl"  # gemmtune sweep
SUITE_FILES = "*-suite.json"  # gemmtune bench, float32 at the strict class
# Every suite file of every dtype, layout and accuracy class (``<device>-suite-<dtype>-<layout>``
# and ``-<class>`` for the others): what the server preloads.
ANY_SUITE_FILES = "*-suite*.json"
SUITE_BESTS = "h100.json"  # gemmtune report: the H100 bests of the public suite
DEFAULT_SUITE_NAME = "shapes.csv"


def package_folder(folder: str) -> Path:
    """A data folder of this package (``"results"`` or ``"suites"``) as a path on disk.

    The readers glob and open files by path, so the package must be installed as files (a
    source checkout, an editable install or an unpacked wheel), not imported from a zip archive.
    """
    found = files("tuner.data") / folder
    if not isinstance(found, Path):
        raise RuntimeError(
            f"tuner.data/{folder} is a {type(found).__name__}, not a folder on disk: install "
            f"gemmtune unpacked (pip install), or point ${RESULTS_ENV_VAR} at a results folder"
        )
    return found


@dataclass(frozen=True)
class DataLocation:
    """Where this copy of gemmtune reads its committed data, and why there."""

    results: Path  # sweep tables and suite files
    suite: Path  # the default shape suite of ``gemmtune bench``
    from_environment: bool  # True when ``$GEMMTUNE_RESULTS_DIR`` chose ``results``

    def describe(self) -> str:
        """The results folder and where its choice came from, for messages."""
        why = f"${RESULTS_ENV_VAR}" if self.from_environment else "the installed package"
        return f"{self.results} (from {why})"


def data_location() -> DataLocation:
    """Resolved at each call, so a changed ``$GEMMTUNE_RESULTS_DIR`` is honoured at once."""
    chosen = os.environ.get(RESULTS_ENV_VAR)
    results = Path(chosen) if chosen else package_folder("results")
    return DataLocation(results, package_folder("suites") / DEFAULT_SUITE_NAME, bool(chosen))


def results_dir() -> Path:
    """The folder of sweep tables and suite files that every reader uses."""
    return data_location().results


def default_suite() -> Path:
    """The shape suite ``gemmtune bench`` runs when none is given."""
    return data_location().suite


def output_dir() -> Path:
    """Where ``gemmtune bench`` writes when not told: the working directory. The package's own
    folders are data of the install, never a place for a user's files."""
    return Path.cwd()


def sweep_tables(folder: Path) -> list[Path]:
    """The sweep tables in ``folder``, by name."""
    return sorted(folder.glob(SWEEP_TABLES))


def suite_files(folder: Path) -> list[Path]:
    """The ``gemmtune bench`` suite files of float32 at the strict class in ``folder``, by name
    (the warm starts of a study read these)."""
    return sorted(folder.glob(SUITE_FILES))


def all_suite_files(folder: Path) -> list[Path]:
    """Every ``gemmtune bench`` suite file in ``folder``, of any dtype, layout and class."""
    return sorted(folder.glob(ANY_SUITE_FILES))
