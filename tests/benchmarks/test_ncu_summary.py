"""benchmarks/ncu_summary.py on the committed Nsight Compute exports (details and raw pages)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NCU = ROOT / "benchmarks" / "results" / "ncu"


def _summarize(path: Path) -> list[str]:
    spec = importlib.util.spec_from_file_location("ncu_summary", ROOT / "benchmarks/ncu_summary.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines: list[str] = module.summarize(path)
    return lines


def test_raw_export_gives_each_kernel_once_with_issue_rate_and_stalls() -> None:
    lines = _summarize(NCU / "raw" / "h100-ncu-raw-streamk-4096x4096x4096.csv.gz")
    assert lines[0].endswith("(raw)")
    names = [line.strip() for line in lines[1::2]]
    assert names == [
        "warptile_bm128_bn256_bk16_wm32_wn128_wni2_tm8_tn4_t256",
        "streamk_bm128_bn256_bk16_wm32_wn128_wni2_tm8_tn4_t256_smb1",
    ]
    streamk = lines[4]
    assert "smsp__issue_active.avg.per_cycle_active = 0.77" in streamk
    assert "launch__registers_per_thread = 249" in streamk
    assert "short_scoreboard = 0.28" in streamk and "gmma" not in streamk  # zeros left out


def test_details_export_still_reads_the_metric_rows() -> None:
    lines = _summarize(NCU / "h100-ncu-4096x4096x4096.csv.gz")
    assert not lines[0].endswith("(raw)")
    assert any("Duration" in line and "Registers Per Thread" in line for line in lines)
