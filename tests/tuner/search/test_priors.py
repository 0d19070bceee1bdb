"""Committed suites and sweep tables as a new study's first candidates (tuner.search.priors)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tuner.core.shape import Shape
from tuner.data import RESULTS_ENV_VAR, MeasuredOn, ResultsFileError, results_dir
from tuner.kernels.resources import table_device
from tuner.search.priors import committed_starts, suite_bests, sweep_bests

GPU = "NVIDIA H100 80GB HBM3"  # the replay table's device
H100 = replace(table_device("sm_90"), name=GPU)
TABLE = results_dir() / "h100-sweep.jsonl"  # the committed one, wherever a test points priors
WT_A = "warptile_bm128_bn256_bk16_wm64_wn64_wni2_tm8_tn4_t256"
WT_B = "warptile_bm64_bn64_bk16_wm32_wn32_wni1_tm8_tn4_t128"
WT_C = "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128"
STREAMK = "streamk_bm128_bn128_bk16_wm32_wn64_wni2_tm8_tn4_t256_smb2_stg0"


def _row(m: int, n: int, k: int, config: str, status: str = "ok") -> dict[str, Any]:
    return {"class": "x", "m": m, "n": n, "k": k, "config": config, "status": status, "ms": 1.0}


def _suite(
    folder: Path,
    name: str,
    device: str,
    rows: list[dict[str, Any]],
    cc: str = "9.0",
    sms: int = 132,
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-suite.json"
    provenance = {"device": device, "compute_capability": cc, "sm_count": sms}
    path.write_text(json.dumps({"device": device, "provenance": provenance, "shapes": rows}))
    return path


def test_suite_bests_keeps_ok_rows_of_known_configs(tmp_path: Path) -> None:
    path = _suite(
        tmp_path,
        "h100",
        GPU,
        [
            _row(4096, 4096, 4096, WT_A),
            _row(1000, 1000, 1000, WT_B, status="wrong_result"),
            _row(64, 64, 64, "warptile_bm999"),  # not a config of this tuner
            {"m": 8, "n": 8, "k": 8, "status": "no_config", "config": None},
            _row(128, 4096, 4096, STREAMK),
        ],
    )
    bests = suite_bests(path)
    assert bests.gpu == MeasuredOn(GPU, "sm_90", 132)
    assert bests.rows == [((4096, 4096, 4096), WT_A), ((128, 4096, 4096), STREAMK)]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("{not json", "line 1"),
        ("[1, 2]", "(top level)"),
        ('{"device": "G", "provenance": {"sm_count": 1, "compute_capability": "9.0"}}', "(top"),
        ('{"device": "G", "shapes": []}', "(top level): `provenance`"),
    ],
)
def test_a_file_of_another_format_stops_with_its_name(
    tmp_path: Path, text: str, where: str
) -> None:
    """Committed files are ours: one that does not parse is named, never silently ignored."""
    path = tmp_path / "odd-suite.json"
    path.write_text(text)
    with pytest.raises(ResultsFileError, match=rf"odd-suite\.json {re.escape(where)}"):
        committed_starts(H100, Shape(64, 64, 64), tmp_path)


DMMA_A = "dmma_bm64_bn64_bk16_wm32_wn32_mk8_sk1_mb4_wd1"
DMMA_B = "dmma_bm64_bn128_bk16_wm32_wn32_mk8_sk1_mb2_wd1"


def _sweep(
    folder: Path,
    name: str,
    device: str,
    rows: list[tuple[str, str, str, float]],
    cc: str = "9.0",
    sms: int = 132,
) -> Path:
    """A sweep table: (shape, config, status, ms) rows after a header naming the GPU."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.jsonl"
    provenance = {"device": device, "compute_capability": cc, "sm_count": sms}
    arch = "sm_" + cc.replace(".", "")
    lines = [{"kind": "header", "device": device, "arch": arch, "provenance": provenance}]
    for shape, config, status, ms in rows:
        family = config.split("_bm")[0]
        lines.append(
            {"kind": "result", "shape": shape, "config_name": config, "family": family,
             "status": status, "ms": ms}
        )  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_sweep_bests_keep_each_familys_fastest_ok_row_per_shape(tmp_path: Path) -> None:
    path = _sweep(
        tmp_path,
        "h100-sweep-x",
        GPU,
        [
            ("8192x8192x256", DMMA_B, "ok", 0.74),
            ("8192x8192x256", DMMA_A, "ok", 0.72),
            ("8192x8192x256", "dmma_bm32_bn32_bk8_wm16_wn16_mk4_sk1_mb1_wd1", "wrong_result", 0.1),
            ("8192x8192x256", WT_A, "ok", 0.75),
            ("8192x8192x256", "dmma_bm64_bn64_bk16_wm32_wn32_mk8_sk1", "ok", 0.5),  # old name
            ("1000x1000x1000", WT_B, "ok", 0.06),
        ],
    )
    bests = sweep_bests(path)
    assert bests.gpu == MeasuredOn(GPU, "sm_90", 132)
    assert sorted(zip(bests.rows, bests.ms, strict=True)) == [
        (((1000, 1000, 1000), WT_B), 0.06),
        (((8192, 8192, 256), DMMA_A), 0.72),
        (((8192, 8192, 256), WT_A), 0.75),
    ]


def test_a_bad_line_in_a_sweep_table_stops_with_file_and_line(tmp_path: Path) -> None:
    path = _sweep(tmp_path, "h100-sweep-x", GPU, [("1000x1000x1000", WT_B, "ok", 0.06)])
    with path.open("a") as table:
        table.write("not json\n")
    with pytest.raises(ResultsFileError, match=r"h100-sweep-x\.jsonl line 3: Expecting value"):
        committed_starts(H100, Shape(1000, 1000, 1000), tmp_path)


def test_a_suites_config_goes_before_the_sweeps_and_those_by_time(tmp_path: Path) -> None:
    _suite(tmp_path, "h100", GPU, [_row(8192, 8192, 256, STREAMK)])
    _sweep(tmp_path, "h100-sweep-a", GPU, [("8192x8192x256", DMMA_B, "ok", 0.74)])
    _sweep(tmp_path, "h100-sweep-b", GPU, [("8192x8192x256", DMMA_A, "ok", 0.72)])
    _sweep(tmp_path, "a100-sweep", "NVIDIA A100", [("8192x8192x256", WT_C, "ok", 0.1)], "8.0", 108)
    starts = committed_starts(H100, Shape(8192, 8192, 256), tmp_path)
    assert starts == [(0.0, STREAMK), (0.0, DMMA_A), (0.0, DMMA_B)]


def test_committed_starts_are_the_same_shape_then_the_nearest(tmp_path: Path) -> None:
    _suite(
        tmp_path,
        "h100",
        GPU,
        [
            _row(8192, 8192, 8192, WT_C),
            _row(1000, 1000, 1000, WT_B),
            _row(4096, 4096, 4096, WT_A),
            _row(2048, 2048, 2048, WT_A),  # WT_A again, farther: listed once, at 4096^3
        ],
    )
    _suite(tmp_path, "a100", "NVIDIA A100-SXM4-80GB", [_row(4096, 4096, 4096, STREAMK)], "8.0", 108)
    starts = committed_starts(H100, Shape(4096, 4096, 4096), tmp_path)
    assert [name for _, name in starts] == [WT_A, WT_C, WT_B]
    assert starts[0][0] == 0.0 and 0.0 < starts[1][0] < starts[2][0]
    assert committed_starts(H100, Shape(4096, 4096, 4096), tmp_path / "missing") == []


def test_another_gpu_of_the_same_chip_starts_there_too(tmp_path: Path) -> None:
    """An H200 (sm_90, 132 SMs) starts from the H100 SXM's bests; a GPU of another SM count or
    architecture does not; at the same distance the file of its own name comes first."""
    _suite(tmp_path, "h100", GPU, [_row(4096, 4096, 4096, WT_A)])
    h200 = replace(H100, name="NVIDIA H200")
    assert committed_starts(h200, Shape(4096, 4096, 4096), tmp_path) == [(0.0, WT_A)]
    for other in (replace(H100, name="H100 PCIe", sm_count=114), replace(h200, arch="sm_89")):
        assert committed_starts(other, Shape(4096, 4096, 4096), tmp_path) == []
    _suite(tmp_path, "h200", "NVIDIA H200", [_row(4096, 4096, 4096, WT_C)])
    assert [n for _, n in committed_starts(h200, Shape(4096, 4096, 4096), tmp_path)] == [
        WT_C,
        WT_A,
    ]


def test_the_repository_suite_is_read_for_its_own_gpu() -> None:
    """The committed h100-suite.json (what `gemmtune bench` wrote on the lent H100): a study of
    one of its shapes on that GPU starts from the config the file lists for that shape."""
    document = json.loads((results_dir() / "h100-suite.json").read_text())
    row = next(r for r in document["shapes"] if r["status"] == "ok")
    device = replace(H100, name=document["device"])
    starts = committed_starts(device, Shape(row["m"], row["n"], row["k"]))
    assert starts[0] == (0.0, row["config"])


@pytest.fixture
def committed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A results folder of this test's own in place of the repository's
    (``$GEMMTUNE_RESULTS_DIR``, which the studies' priors honour)."""
    folder = tmp_path / "results"
    monkeypatch.setenv(RESULTS_ENV_VAR, str(folder))
    return folder
