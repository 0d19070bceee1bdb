"""benchmarks/study_overhead.py without a GPU: one study with its evaluator that answers at once
runs end to end through ``tune`` (the script had stopped running when the study came to ask
its evaluator what kind it is)."""

from __future__ import annotations

from pathlib import Path

from tests.lab_scripts import lab_script
from tuner.core.shape import Shape

study_overhead = lab_script("study_overhead")


def test_one_study_runs_and_times_each_candidate(tmp_path: Path) -> None:
    row = study_overhead.one_study(Shape(1024, 1024, 512), 6, tmp_path)
    assert row["evaluated"] == 6
    assert len(row["candidates"]) == len(set(row["candidates"])) == 6
    assert row["seconds_loop"] > 0 and row["ms_per_candidate_cpu"] >= 0
