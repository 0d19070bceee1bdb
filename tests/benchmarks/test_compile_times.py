"""benchmarks/compile_times.py without a GPU: what a run's compiles add up to."""

from __future__ import annotations

from tests.lab_scripts import lab_script

compile_times = lab_script("compile_times")


def _row(family: str, wall: float, cpu: float, fallback_s: float | None = None) -> dict:
    row = {"family": family, "status": "ok", "build_wall_s": wall, "build_cpu_s": cpu}
    row["fallback"] = fallback_s is not None
    if fallback_s is not None:
        row["fallback_s"] = fallback_s
    return row


def test_a_run_counts_its_compiles_waits_and_fallbacks() -> None:
    rows = [
        _row("dmma", 0.5, 0.5),
        _row("dmma", 0.7, 0.7),
        _row("pipelined", 2.0, 1.0, fallback_s=0.4),  # half of it waiting, then a context
        {"family": "warptile", "status": "compile_failed", "reason": "nvrtc failed"},
    ]
    summary = compile_times.summary(rows, wall=2.0)
    assert summary["compiles"] == 4 and summary["failed"] == 1
    assert summary["per_second"] == 2.0
    assert summary["build_wall_median_s"] == 0.7 and summary["build_wall_max_s"] == 2.0
    assert summary["cpu_over_wall_median"] == 1.0  # the median compile used its CPU throughout
    assert summary["fallbacks"] == 1 and summary["fallback_s_max"] == 0.4
    assert summary["by_family_median_s"] == {"dmma": 0.6, "pipelined": 2.0}
