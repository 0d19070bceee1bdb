"""benchmarks/half_targets.py on small bench files: issue 41's targets per column, aligned
shapes against the default call, ragged ones against the padded call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.lab_scripts import lab_script, run_lab_script


def row(m: int, n: int, k: int, ours: float, call: float, **extra: Any) -> dict[str, Any]:
    return {"m": m, "n": n, "k": k, "dtype": "bfloat16", "layout": "NT",
            "out_dtype": "bfloat16", "status": "ok", "ms": ours, "cublas_ms": call,
            "vendor_ms": extra.pop("vendor", call), **extra}  # fmt: skip


def bench(*rows: dict[str, Any]) -> dict[str, Any]:
    return {
        "suite": "shapes.csv",
        "device": "NVIDIA H100",
        "date": "2026-11-29",
        "shapes": list(rows),
    }


def test_aligned_targets_read_the_default_call_and_ragged_ones_the_padded_call() -> None:
    script = lab_script("half_targets")
    figures = script.column_figures(
        bench(
            row(4096, 4096, 4096, 1.0, 0.98),  # 0.98: under 1.0
            row(8192, 8192, 8192, 1.0, 1.10),
            row(128, 4096, 4096, 1.0, 1.05, vendor=0.97),
            row(3000, 5000, 700, 1.0, 2.5, vendor_launches={"cublas_pad8": 1.2}),
            row(1023, 4096, 4096, 1.0, 1.5),  # neither kind: M is no row length in NT
            {**row(64, 64, 64, 1.0, 9.0), "status": "failed"},  # not timed: left out
        )
    )
    targets = figures["targets"]
    assert figures["column"] == "bfloat16 NT -> bfloat16" and figures["aligned_shapes"] == 3
    assert targets["geomean_call"]["value"] == pytest.approx((0.98 * 1.10 * 1.05) ** (1 / 3))
    assert targets["geomean_call"]["met"]
    assert targets["lowest_call"] == {"value": 0.98, "threshold": 0.95, "met": True}
    assert not targets["square_4096_call"]["met"] and targets["square_8192_call"]["met"]
    assert targets["ragged_geomean_padded"]["value"] == pytest.approx(1.2)
    assert figures["ragged_shapes"] == 1
    assert figures["aligned_lowest_vendor"] == pytest.approx(0.97)


def test_a_column_without_squares_or_ragged_shapes_has_no_such_targets() -> None:
    figures = lab_script("half_targets").column_figures(bench(row(128, 4096, 4096, 1.0, 0.9)))
    assert set(figures["targets"]) == {"geomean_call", "lowest_call"}
    assert not figures["targets"]["lowest_call"]["met"]


def test_a_file_with_nothing_timed_is_an_error() -> None:
    with pytest.raises(ValueError, match="no shape was timed"):
        lab_script("half_targets").column_figures(
            bench({**row(8, 8, 8, 1.0, 1.0), "status": "failed"})
        )


def test_the_command_prints_a_row_per_file_and_marks_what_is_missed(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(bench(row(4096, 4096, 4096, 1.0, 0.9))))
    out = tmp_path / "targets.json"
    done = run_lab_script("half_targets", str(path), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "| bfloat16 NT -> bfloat16 | shapes.csv | 1 | 0.900* | 0.900* | 0.900* |" in done.stdout
    assert json.loads(out.read_text())["columns"][0]["file"] == "bench.json"
