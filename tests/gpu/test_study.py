"""A real 30-trial study on the GPU stores every result and a verified best config."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu


def test_thirty_trial_study_on_4096_cubed_stores_its_results(tmp_path: Path) -> None:
    import storage
    from storage import open_database
    from tuner.gpu_worker import GpuEvaluator
    from tuner.shape import Shape
    from tuner.sql_recorder import SqlRecorder
    from tuner.study import Study

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
    assert best is not None
    assert best[1].ms == min(r.ms for r in ok if r.ms is not None)
    print(
        f"RESULT best {best[1].config_name} {best[1].tflops:.1f} TFLOP/s ratio {best[1].ratio:.2f}"
    )
