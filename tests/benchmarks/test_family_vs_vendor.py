"""benchmarks/family_vs_vendor.py on a small tuning database: each problem's fastest screened
config of the family beside the fastest vendor launch of the same study, grouped."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage import ShapeIn, open_database, record_measurement
from tests.lab_scripts import lab_script
from tests.storage.factories import H100, measurement
from tuner.core.phases import Phase


def _store(url: str, shape: ShapeIn, family: str, *times: float) -> None:
    sessions = open_database(url)
    with sessions.begin() as session:
        for i, ms in enumerate(times):
            record_measurement(
                session, H100, shape,
                measurement(ms=ms, family=family, config_name=f"{family}_{i}",
                            phase=Phase.SCREENING.value),
            )  # fmt: skip


def test_each_problem_is_the_vendors_best_over_the_familys_best(tmp_path: Path) -> None:
    script = lab_script("family_vs_vendor")
    url = f"sqlite:///{tmp_path / 'tuned.db'}"
    big = ShapeIn(8192, 8192, 4096, "bfloat16", "NT")  # 64 x 32 tiles of 128x256: 15.5 rounds
    thin = ShapeIn(16, 8192, 4096, "bfloat16", "NT")
    only_ours = ShapeIn(4096, 4096, 4096, "bfloat16", "NT")
    _store(url, big, "tma_ws", 2.0, 1.6)
    _store(url, big, "cublaslt", 1.7, 1.9)
    _store(url, big, "cublas", 1.8)
    _store(url, thin, "tma_ws", 0.05)
    _store(url, thin, "cublas", 0.04)
    _store(url, only_ours, "tma_ws", 1.0)  # no vendor launch in its study: left out
    problems, sms = script.best_times(url)
    result = script.compare(problems, sms, "tma_ws", (128, 256))
    by_m = {row["m"]: row for row in result["rows"]}
    assert set(by_m) == {8192, 16}
    assert by_m[8192]["vendor_over_family"] == pytest.approx(1.7 / 1.6)
    assert by_m[16]["vendor_over_family"] == pytest.approx(0.04 / 0.05)
    summary = result["summary"]
    assert summary["aligned, >= 2 rounds"]["family_faster"] == 1
    assert summary["aligned, M <= 16"] == {
        "problems": 1, "geomean": 0.8, "median": 0.8, "min": 0.8, "max": 0.8, "family_faster": 0,
    }  # fmt: skip
