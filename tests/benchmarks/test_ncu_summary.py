"""benchmarks/ncu_summary.py on the committed Nsight Compute exports (details and raw pages)."""

from __future__ import annotations

from pathlib import Path

from tests.lab_scripts import LAB, lab_script

NCU = LAB / "results" / "ncu"


def _summarize(path: Path) -> list[str]:
    module = lab_script("ncu_summary")
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
    assert "smsp__issue_active.avg.per_cycle_active = 0.78" in streamk  # the last launch
    assert "launch__registers_per_thread = 249" in streamk
    assert "short_scoreboard = 0.28" in streamk and "gmma" not in streamk  # zeros left out


def test_details_export_still_reads_the_metric_rows() -> None:
    lines = _summarize(NCU / "h100-ncu-4096x4096x4096.csv.gz")
    assert not lines[0].endswith("(raw)")
    assert any("Duration" in line and "Registers Per Thread" in line for line in lines)


def test_raw_export_reports_the_last_launch_not_the_verification_one() -> None:
    # The first launch of each kernel verifies it (beta = 3: C is read, 0.81 warps per issue
    # waiting on global memory); the profiled launches after it run with beta = 0.
    lines = _summarize(NCU / "raw" / "h100-ncu-raw-streamk-8192x8192x256.csv.gz")
    streamk = lines[4]
    assert "gpu__time_duration.sum = 1,029,888" in streamk
    assert "smsp__issue_active.avg.per_cycle_active = 0.71" in streamk
    assert "long_scoreboard" not in streamk


def test_source_export_splits_samples_between_the_k_loop_and_the_rest() -> None:
    lines = _summarize(NCU / "source" / "h100-ncu-source-streamk-smb2-8192x8192x256.csv.gz")
    assert lines[0].endswith("(source)")
    assert lines[1].strip() == "streamk_bm128_bn128_bk16_wm32_wn64_wni2_tm8_tn4_t256_smb2_stg0"
    assert "instructions executed = 625,171,168; in the k loop 0.982" in lines[2]
    assert "warp samples = 91,309; in the k loop 0.927" in lines[2]
    assert lines[3].startswith("    samples by reason: not_selected 0.424; selected 0.211")
    assert "long_sb 0.009" in lines[4]


def test_raw_export_reports_how_operands_reach_shared_memory_where_collected() -> None:
    # The odd-shape profiles (issue 20) collected the copy metrics: one config of the 2048^3
    # suite shape on 2047^3 issues four times the LDGSTS of the aligned twin.
    odd = _summarize(NCU / "raw" / "h100-ncu-raw-odd-2047x2047x2047.csv.gz")
    twin = _summarize(NCU / "raw" / "h100-ncu-raw-odd-2048x2048x2048.csv.gz")
    name = "dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1"
    assert odd[odd.index(f"  {name}") + 1].count("smsp__inst_executed_op_ldgsts.sum = 6,291,456")
    assert twin[twin.index(f"  {name}") + 1].count("smsp__inst_executed_op_ldgsts.sum = 1,572,864")
    older = _summarize(NCU / "raw" / "h100-ncu-raw-streamk-4096x4096x4096.csv.gz")
    assert not any("ldgsts" in line for line in older)  # not collected there: left out


def test_every_launch_lists_a_padded_launchs_copies_and_product_in_order() -> None:
    path = NCU / "raw" / "h100-ncu-raw-odd-now-4097x4097x255.csv.gz"
    module = lab_script("ncu_summary")
    every: list[str] = module.summarize(path, every_launch=True)
    once = _summarize(path)
    names = [line.strip() for line in every[1::2]]
    assert len(names) > len(once[1::2])  # a kernel launched several times has several lines
    first_copy = next(i for i, name in enumerate(names) if name.startswith("copy_rows_4"))
    assert names[first_copy + 1].startswith("copy_rows_4")  # A's and B's copies, then
    assert names[first_copy + 2].startswith("dmma_pipelined_")  # the product
    assert "grid (65, 65, 1)" in names[first_copy + 2]
