"""Tables in an 80-column terminal keep every config name and shape whole."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import storage
from tuner.cli._tables import Column, table_lines
from tuner.core.shape import parse_shape
from tuner.gpu.device import resolve_device
from tuner.kernels.families import get_family, parse_config
from tuner.kernels.space import Space

LONG = "streamk_bm128_bn128_bk16_wm32_wn64_wni2_tm8_tn4_t256_smb2_stg0"
DMMA = "dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1"
H100 = storage.DeviceIn("NVIDIA H100 80GB HBM3", "sm_90", 132)
RTX = storage.DeviceIn("NVIDIA GeForce RTX 4090", "sm_89", 128)
STORED = [
    (H100, (4096, 11008, 4096), LONG),
    (H100, (16, 4096, 4096), DMMA),
    (RTX, (1000, 1000, 1000), LONG),
]


def run(columns: int, *args: str) -> list[str]:
    """``gemmtune ARGS`` in a terminal ``columns`` wide (rich reads $COLUMNS): stdout lines."""
    env = {**os.environ, "COLUMNS": str(columns)}
    result = subprocess.run(
        [sys.executable, "-m", "tuner.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def holds_whole(lines: list[str], word: str) -> bool:
    return any(word in line.split() for line in lines)


def test_names_too_long_for_the_width_get_their_own_line() -> None:
    columns = [Column("shape"), Column("ms", numeric=True)]
    rows = [["4096x11008x4096", "6.4550"], ["16x4096x4096", "0.0460"]]
    lines = table_lines(columns, rows, 80, Column("config"), [LONG, DMMA])
    assert max(map(len, lines)) <= 80
    assert [line.strip() for line in lines[2::2]] == [LONG, DMMA]  # under their rows
    assert lines[1].split() == rows[0] and lines[3].split() == rows[1]
    wide = table_lines(columns, rows, 120, Column("config"), [LONG, DMMA])
    assert len(wide) == 3 and wide[1].split() == [LONG, *rows[0]]  # fits: one line per row


def test_space_in_80_columns() -> None:
    args = ("space", "-f", "streamk", "-s", "4096x11008x4096", "--device", "sm_90", "--limit", "6")
    lines = run(80, *args)
    assert max(map(len, lines)) <= 80
    space = Space(get_family("streamk"), parse_shape("4096x11008x4096"), resolve_device("sm_90"))
    checks, _ = space.evaluate()
    for check in checks[:6]:
        assert holds_whole(lines, check.config.name), check.config.name


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'results.db'}"
    sessions = storage.open_database(url)
    for device, shape, name in STORED:
        config = parse_config(name)
        m = storage.MeasurementIn(config.family, name, config.as_dict(), ms=1.0, cublas_ms=1.2)
        with sessions.begin() as session:
            storage.record_measurement(session, device, storage.ShapeIn(*shape), m)
    return url


@pytest.mark.parametrize("columns", [80, 160])
def test_results_in_80_and_160_columns(db: str, columns: int) -> None:
    lines = run(columns, "results", "--db", db)
    assert max(map(len, lines)) <= columns
    for device, shape, name in STORED:
        assert holds_whole(lines, name) and holds_whole(lines, "x".join(map(str, shape)))
        assert device.name in lines  # a heading line per device
    if columns == 160:  # room for the name in its column
        assert any(line.split()[:2] == [LONG, "4096x11008x4096"] for line in lines)
