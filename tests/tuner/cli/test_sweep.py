"""``gemmtune sweep`` on the command line: arguments checked before the GPU, one-line errors,
and a whole sweep on a fake GPU."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from tests.tuner.cli.running import cli, one_error_line
from tests.tuner.fakes import RuleEvaluator
from tests.tuner.run.test_sweep import H100, PROVENANCE
from tuner.data import read_sweep_table
from tuner.run import runner  # the commands import start_gpu from here when they run


class ClosingGpu(RuleEvaluator):
    """The fake GPU, remembering whether the command closed it."""

    closed = False

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def no_gpu_wanted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Arguments must be refused before the command asks for a GPU."""

    def refuse(purpose: str, budget_ms: float) -> Any:
        raise AssertionError(f"{purpose} started a GPU for arguments it should have refused")

    monkeypatch.setattr(runner, "start_gpu", refuse)


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--family", "tiled"), ("unknown family 'tiled'",)),
        (("--family", "smem_tiling", "--where", "BM"), ("--where 'BM' must look like NAME=INT",)),
        (("--family", "smem_tiling", "--shape", "4096x0x1"), ("`N` must be", "got 0")),
        (("--family", "smem_tiling", "--resume", "gone.jsonl"), ("gone.jsonl does not exist",)),
    ],
)
def test_bad_arguments_are_one_line_before_the_gpu(
    args: tuple[str, ...],
    needles: tuple[str, ...],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    no_gpu_wanted: None,
) -> None:
    monkeypatch.chdir(tmp_path)
    shape = () if "--shape" in args else ("--shape", "256x256x256")
    code, out, err = cli(capsys, "sweep", *args, *shape, "--out", "t.jsonl")
    assert code == 2 and out == ""
    one_error_line(err, *needles)
    assert list(tmp_path.iterdir()) == []


def test_family_shape_and_out_are_required(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "sweep", "--shape", "256x256x256", "--out", "t.jsonl")
    assert code == 2
    one_error_line(err, "--family")


def test_without_cupy_sweep_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec

    def no_cupy(name: str, package: str | None = None) -> Any:
        return None if name == "cupy" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", no_cupy)
    out_table = tmp_path / "t.jsonl"
    args = ("--family", "smem_tiling", "--shape", "256x256x256", "--out", str(out_table))
    code, out, err = cli(capsys, "sweep", *args)
    assert code == 2 and out == ""
    one_error_line(err, "gemmtune sweep needs a CUDA GPU")
    assert not out_table.exists()


def test_a_sweep_on_a_fake_gpu_writes_its_table_and_closes_the_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu = ClosingGpu(H100)
    gpu.provenance = dict(PROVENANCE)
    started: list[tuple[str, float]] = []

    def start(purpose: str, budget_ms: float) -> ClosingGpu:
        started.append((purpose, budget_ms))
        return gpu

    monkeypatch.setattr(runner, "start_gpu", start)
    out_table = tmp_path / "slice.jsonl"
    code, out, err = cli(
        capsys, "sweep", "-f", "smem_tiling", "--shape", "256x256x256", "--shape", "1000x1000x1000",
        "--where", "BM=16", "--where", "BN=32", "--budget-ms", "10", "--out", str(out_table),
    )  # fmt: skip
    assert code == 0, err
    assert started == [("gemmtune sweep", 10.0)] and gpu.closed
    table = read_sweep_table(out_table)
    assert table.rows and {r.config_name.split("_bk")[0] for r in table.rows} == {
        "smem_tiling_bm16_bn32"
    }
    assert table.header.details == {"budget_ms": 10.0, "where": {"BM": [16], "BN": [32]}}
    assert out.splitlines()[-1] == f"wrote {len(table.rows)} rows to {out_table}"
