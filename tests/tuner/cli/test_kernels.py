"""The CLI through its console entry point, as a user runs it."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest


def run(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("gemmtune")
    cmd = [exe] if exe else [sys.executable, "-m", "tuner.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=300, check=False)


def test_space_prints_counts_and_configs() -> None:
    result = run("space", "--family", "warptile", "--shape", "4096x4096x4096", "--device", "sm_90")
    assert result.returncode == 0, result.stderr
    assert "raw 5832 -> valid" in result.stdout
    assert "warptile_bm64_bn64" in result.stdout


def test_space_takes_a_dtype_and_layout_and_says_which_families_compute_them() -> None:
    args = ("--shape", "4096x4096x4096", "--dtype", "bfloat16", "--layout", "NT", "-d", "sm_90")
    half = run("space", "--family", "hmma", *args)
    assert half.returncode == 0, half.stderr
    assert "for 4096x4096x4096 bfloat16 NT" in half.stdout and "fits 0" not in half.stdout
    fp32 = run("space", "--family", "warptile", *args)
    assert fp32.returncode == 0, fp32.stderr
    words = " ".join(fp32.stdout.split())  # rich wraps long lines
    assert "fits 0" in words and "float32 inputs in layouts NN, not bfloat16 NT" in words
    old = run("space", "--family", "warptile", "-s", "64x64x64", "--layout", "row-major")
    assert old.returncode == 0 and "fits 0" not in old.stdout, old.stderr


def test_the_vendor_family_lists_its_ranks_and_has_nothing_to_render() -> None:
    args = ("--family", "cublaslt", "--shape", "4097x4097x4097", "--dtype", "bfloat16")
    space = run("space", *args, "--compile", "--limit", "3")
    assert space.returncode == 0, space.stderr
    assert "raw 8 -> valid 8" in " ".join(space.stdout.split())
    assert [line for line in space.stdout.splitlines() if line.startswith("cublaslt_rk")] == [
        "cublaslt_rk0",
        "cublaslt_rk1",
        "cublaslt_rk2",
    ]
    assert "nothing to compile" in space.stdout
    rendered = run("render", "--config", "cublaslt_rk0_pad8")
    assert rendered.returncode == 2 and "has no CUDA source" in rendered.stderr


def test_render_prints_cuda_source() -> None:
    result = run("render", "--config", "BM=32,BN=32,BK=32", "--family", "smem_tiling")
    assert result.returncode == 0, result.stderr
    assert (
        'extern "C" __global__' in result.stdout and "smem_tiling_bm32_bn32_bk32(" in result.stdout
    )


def test_compile_prints_resources() -> None:
    result = run(
        "compile",
        "--config",
        "vectorized_bm64_bn64_bk16_tm4_tn4",
        "--device",
        "sm_90",
        "--compiler",
        "nvcc",
    )
    assert result.returncode == 0, result.stderr + result.stdout
    for word in (
        "registers/thread",
        "shared memory",
        "spills",
        "occupancy",
        "verdict            ok",
    ):
        assert word in result.stdout


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("space", "-f", "warptile", "-s", "0x4096x4096"), "`M`"),
        (("space", "-f", "warptile", "-s", "-1x4096x4096"), "M in shape"),
        (("space", "-f", "warptile", "-s", "axbxc"), "'a'"),
        (("space", "-f", "warptile", "-s", "4096x"), "'4096x'"),
        (("space", "-f", "nosuch", "-s", "1x1x1"), "'nosuch'"),
        (("space", "-f", "warptile", "-s", "1x1x1", "--device", "sm_75"), "'sm_75'"),
        (("render", "-c", "smem_tiling_bm64_bn64_bk8"), "at most 1024"),
        (("render", "-c", "warptile_bm12"), "missing"),
        (("compile", "-c", "bogus_bm1"), "'bogus_bm1'"),
        (("space", "-f", "warptile"), "--shape"),
        (("space", "-f", "warptile", "-s", "1x1x1", "--limit", "x"), "--limit"),
        (("space", "-f", "hmma", "-s", "8x8x8", "--dtype", "fp16"), "got 'fp16'"),
        (("space", "-f", "hmma", "-s", "8x8x8", "--dtype", "fp16"), "float16, bfloat16"),
        (("space", "-f", "hmma", "-s", "8x8x8", "--layout", "CN"), "NN, NT, TN, TT"),
        (("space", "-f", "hmma", "-s", "8x8x8", "--layout", "CN"), "got 'CN'"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(args: tuple[str, ...], named: str) -> None:
    result = run(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], result.stderr
    assert "Traceback" not in result.stderr
