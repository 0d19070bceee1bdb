"""A real 30-trial study on the GPU stores every result and a verified best config."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu


def test_thirty_trial_study_on_4096_cubed_stores_its_results(tmp_path: Path) -> None:
    import storage
    from storage import open_database
    from tuner.core.shape import Shape
    from tuner.gpu.worker import GpuEvaluator
    from tuner.search.finalists import FINAL_MIN_ROUNDS, FINAL_ROUNDS
    from tuner.search.sql_recorder import SqlRecorder
    from tuner.search.study import Study

    url = f"sqlite:///{tmp_path / 'gpu.db'}"
    sessions = open_database(url)
    evaluator = GpuEvaluator(budget_ms=30)
    try:
        study = Study(
            Shape(4096, 4096, 4096),
            ("warptile",),
            evaluator,
            SqlRecorder(sessions),
            seed=0,
            optuna_storage=url,
        )
        progress = study.run(trials=30)
    finally:
        evaluator.close()
    assert progress.evaluated == 30
    with sessions() as session:
        rows = storage.measurements_for_study(session, study.name)
        best = storage.best_for(session, evaluator.device.name, 4096, 4096, 4096)
    assert len(rows) == 30 and len({r.config_name for r in rows}) == 30
    ok = [r for r in rows if r.status == "ok"]
    assert ok, [r.reason for r in rows]
    assert all(r.rel_error is not None and r.rel_error < 1e-4 for r in ok)
    assert all(r.cublas_ms and r.ms and r.provenance.get("device") for r in ok)
    assert best is not None and best[1].phase == "final"
    # The best is the fastest finalist re-measured beside cuBLAS: one of the three fastest
    # screened candidates (or the study's first answer), with its rounds stored.
    fastest = sorted(ok, key=lambda r: r.ms or 0.0)[:3]
    assert best[1].config_name in {r.config_name for r in fastest} | {rows[0].config_name}
    # Finalists take FINAL_MIN_ROUNDS, more only while their medians still move.
    assert FINAL_MIN_ROUNDS <= len(best[1].provenance["ms_rounds"]) <= FINAL_ROUNDS
    print(
        f"RESULT best {best[1].config_name} {best[1].tflops:.1f} TFLOP/s ratio {best[1].ratio:.2f}"
    )


def test_probes_measure_plausible_rates() -> None:
    from tuner.gpu.worker import GpuEvaluator

    evaluator = GpuEvaluator()
    try:
        rates = evaluator.probe()
    finally:
        evaluator.close()
    assert rates is not None, "a probe failed"
    assert 1.0 < rates.ffma_tflops < 200.0 and 0.05 < rates.dram_tb_s < 20.0
    assert 0.5 < rates.launch_us < 100.0
    if evaluator.device.arch == "sm_90":
        assert rates.fp64_tensor_tflops > 0.5 * rates.ffma_tflops
    print(f"RESULT rates {rates}")
