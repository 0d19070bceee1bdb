"""``gemmtune bench`` on the GPU: two small shapes are tuned into a fresh database, verified and
re-measured against cuBLAS; a second run reuses the stored configs instead of tuning again."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gpu

SUITE = "# class,M,N,K\nsquare,1024,1024,1024\nskinny,128,1024,1024\n"
PROVENANCE = (
    "device", "sm_count", "compute_capability", "driver", "cuda_runtime", "nvrtc", "cupy",
    "tuner", "date",
)  # fmt: skip


def bench(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from tuner.cli import main

    capsys.readouterr()
    try:
        main(["bench", *args])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def check_row(row: dict[str, Any], tuned: bool) -> None:
    from tuner.gpu.measure import tolerance

    assert row["status"] == "ok", row
    assert row["tuned"] is tuned and row["candidates_evaluated"] == 4
    assert row["config"].startswith("warptile_")
    assert 0.0 <= row["rel_error"] <= tolerance(row["k"])
    assert len(row["rounds"]["ms"]) == len(row["rounds"]["cublas_ms"]) == 3
    assert row["ms"] == statistics.median(row["rounds"]["ms"])
    assert row["cublas_ms"] == statistics.median(row["rounds"]["cublas_ms"])
    # The baseline: the fastest vendor launch, cuBLASLt's algorithms or the default call.
    assert row["cublas_ratio"] == pytest.approx(row["cublas_ms"] / row["ms"])
    assert row["vendor_ms"] <= row["cublas_ms"]
    assert row["ratio"] == pytest.approx(row["vendor_ms"] / row["ms"])
    launches = row["vendor_launches"]
    assert [name for name in launches] == [f"cublaslt_rk{rank}" for rank in range(4)]
    measured = [ms for ms in launches.values() if isinstance(ms, float)]
    assert measured, launches  # the heuristic's first choice at least ran and was verified
    assert row["vendor_ms"] == min([row["cublas_ms"], *measured])
    if row["vendor_launch"] != "cublas":
        assert len(row["vendor_algo"]) == 8
    flops = 2 * row["m"] * row["n"] * row["k"]
    assert row["tflops"] == pytest.approx(flops / (row["ms"] * 1e9))
    assert row["cublas_tflops"] == pytest.approx(flops / (row["cublas_ms"] * 1e9))
    roof = row["roofline"]
    if roof is not None:  # a device with known roofs (the H100)
        assert roof["flops"] == flops and roof["limit"] in ("compute", "memory")
        assert 0 < roof["pct_of_bound"] <= 110 and 0 < roof["cublas_pct_of_bound"] <= 110


def test_bench_tunes_then_reuses_two_small_shapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "suite.csv"
    suite.write_text(SUITE)
    common = (
        "--suite", str(suite), "--db", f"sqlite:///{tmp_path / 'bench.db'}",
        "--family", "warptile", "--trials", "4", "--rounds", "3", "--budget-ms", "20",
        "--seed", "0",
    )  # fmt: skip
    first = tmp_path / "first.json"
    code, out, err = bench(capsys, *common, "--out", str(first))
    assert code == 0, err
    doc = json.loads(first.read_text())
    rows = doc["shapes"]
    assert [(r["class"], r["m"], r["n"], r["k"]) for r in rows] == [
        ("square", 1024, 1024, 1024),
        ("skinny", 128, 1024, 1024),
    ]
    for row in rows:
        check_row(row, tuned=True)
    assert all(key in doc["provenance"] for key in PROVENANCE), doc["provenance"]
    assert doc["method"]["rounds"] == 3
    summary = doc["summary"]
    assert summary["measured"] == 2 and summary["geomean_ratio"] > 0
    assert set(summary["by_class"]) == {"square", "skinny"}
    assert out == first.with_suffix(".md").read_text()
    assert first.with_suffix(".svg").read_text().startswith("<svg")

    second = tmp_path / "second.json"
    code, _, err = bench(capsys, *common, "--out", str(second))
    assert code == 0, err
    again = json.loads(second.read_text())["shapes"]
    for before, row in zip(rows, again, strict=True):
        check_row(row, tuned=False)
        assert row["config"] == before["config"]
    print(
        "RESULT "
        + "; ".join(f"{r['m']}x{r['n']}x{r['k']} x{r['ratio']:.2f} {r['config']}" for r in again)
    )
