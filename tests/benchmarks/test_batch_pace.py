"""benchmarks/batch_pace.py without a GPU: what a run's screened candidates waited for and how
busy they kept the compile pool, read back from the measurements it stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage import open_database
from tests.lab_scripts import lab_script
from tuner.core.phases import Phase
from tuner.core.result import Result
from tuner.core.shape import Shape
from tuner.kernels.resources import table_device
from tuner.search.sql_recorder import SqlRecorder

batch_pace = lab_script("batch_pace")


def _result(name: str, ms: float, **provenance: float) -> Result:
    return Result(
        name, "dmma", {}, "ok", ms=ms, cublas_ms=1.0, ratio=1.0 / ms, provenance=provenance
    )


def test_waits_count_compiles_per_study_and_leave_finalists_out(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pace.db'}"
    recorder = SqlRecorder(open_database(url))
    device, shape = table_device("sm_90"), Shape(512, 512, 512)
    study = "NVIDIA H100|512x512x512|float32|NN|dmma"
    screened = [
        _result("dmma_a", 1.0, compile_s=0.5, compile_wait_s=0.25, measure_s=0.01),
        _result("dmma_b", 1.1, compile_s=1.5, compile_wait_s=0.0, measure_s=0.02),
        _result("dmma_c", 1.2, measure_s=0.01),  # compiled for an earlier shape
    ]
    for result in screened:
        recorder.record(result, device, shape, study, None)
    final = _result("dmma_a", 1.0, compile_s=9.0, measure_s=9.0)
    recorder.record(final, device, shape, study, None, Phase.FINAL)

    waits = batch_pace.screening_waits(url)
    assert waits == {
        "512x512x512": {
            "candidates": 3,
            "compile_wait_s": 0.25,
            "measure_s": 0.04,
            "compiled": 2,
            "compile_s": 2.0,
        }
    }
    share = batch_pace.compile_pool_share(waits, wall_s=4.0)
    assert share["compiled"] == 2 and share["compile_s"] == 2.0
    assert share["busy_share_at_least"] == pytest.approx(2.0 / (share["workers"] * 4.0), abs=1e-3)
