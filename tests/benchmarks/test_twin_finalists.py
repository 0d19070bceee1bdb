"""benchmarks/twin_finalists.py without a GPU: it pairs each stored stream-K twin with the
finalist it comes from, on the same shape and device, ignores screening rows and failures, marks
the twin that is its shape's best, and refuses a file that is not an export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.lab_scripts import lab_script, run_lab_script

twin_rows = lab_script("twin_finalists").twin_rows
GRID = "dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1"
TWIN = "dmma_streamk_bm64_bn128_bk32_wm32_wn64_mk4_s3_smb2"


def _row(
    name: str, tflops: float, shape: tuple[int, int, int], *, final: bool = True, **prov: Any
) -> dict[str, Any]:
    m, n, k = shape
    study = "H100|study"
    return {
        "device": {"name": "H100"},
        "shape": {"m": m, "n": n, "k": k},
        "config_name": name,
        "status": "ok",
        "tflops": tflops,
        "study": study,
        "phase": "final" if final else "screening",
        "provenance": prov,
    }


def test_twins_pair_with_their_sources_per_shape() -> None:
    big, small = (4096, 4096, 4096), (1008, 1012, 1020)
    rows = twin_rows(
        [
            _row(GRID, 58.0, big),
            _row(TWIN, 60.0, big, twin_of=GRID),
            _row(GRID, 40.0, small),
            _row(TWIN, 36.0, small, twin_of=GRID),
            _row(TWIN, 99.0, small, final=False),  # screening: not a final measurement
            _row("other_config", 39.0, small),
        ]
    )
    assert [(r["shape"], r["twin_is_best"]) for r in rows] == [
        ("1008x1012x1020", False),
        ("4096x4096x4096", True),
    ]
    small_row, big_row = rows
    assert (big_row["source_tflops"], big_row["twin_tflops"]) == (58.0, 60.0)
    assert abs(big_row["gain"] - (60.0 / 58.0 - 1)) < 1e-4
    assert small_row["gain"] < 0


def test_an_export_written_before_phases_marks_finals_by_study_name() -> None:
    old = [_row(GRID, 58.0, (64, 64, 64)), _row(TWIN, 60.0, (64, 64, 64), twin_of=GRID)]
    for row in old:
        del row["phase"]
        row["study"] += "|finalists"
    assert [r["twin"] for r in twin_rows(old)] == [TWIN]


def test_a_twin_without_its_source_has_no_row() -> None:
    assert twin_rows([_row(TWIN, 60.0, (64, 64, 64), twin_of=GRID)]) == []


def test_a_file_that_is_not_an_export_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rows": []}))
    run = run_lab_script("twin_finalists", str(bad))
    assert run.returncode != 0 and "not a gemmtune export" in run.stderr
