"""Committed data the program ships (``results/``, ``suites/``), and one module per file format.

* :mod:`tuner.data.location`: the one results folder every reader uses
  (``$GEMMTUNE_RESULTS_DIR``, else this package's ``results/``) and the default shape suite;
* :mod:`tuner.data.sweep_table`: the JSON-lines sweep tables of ``gemmtune sweep``;
* :mod:`tuner.data.suite_file`: the suite files of ``gemmtune bench``;
* :mod:`tuner.data.validation`: the one policy for bad content (stop, naming file and line).
"""

from __future__ import annotations

from tuner.data.location import (
    RESULTS_ENV_VAR,
    DataLocation,
    data_location,
    default_suite,
    output_dir,
    results_dir,
    suite_files,
    sweep_tables,
)
from tuner.data.measured_on import MeasuredOn
from tuner.data.suite_file import (
    SuiteFile,
    SuiteRow,
    read_suite_file,
    suite_document,
    write_suite_file,
)
from tuner.data.sweep_table import (
    SweepHeader,
    SweepRow,
    SweepTable,
    SweepTableWriter,
    read_sweep_table,
)
from tuner.data.validation import ResultsFileError

__all__ = [
    "RESULTS_ENV_VAR",
    "DataLocation",
    "MeasuredOn",
    "ResultsFileError",
    "SuiteFile",
    "SuiteRow",
    "SweepHeader",
    "SweepRow",
    "SweepTable",
    "SweepTableWriter",
    "data_location",
    "default_suite",
    "output_dir",
    "read_suite_file",
    "read_sweep_table",
    "results_dir",
    "suite_document",
    "suite_files",
    "sweep_tables",
    "write_suite_file",
]
