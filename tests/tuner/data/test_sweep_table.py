"""Sweep tables: what the writer writes the reader reads back; bad lines stop the read with
file, line and field named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuner.core.errors import InputError
from tuner.core.result import Result
from tuner.core.shape import Shape
from tuner.data import (
    ResultsFileError,
    SweepHeader,
    SweepRow,
    SweepTableWriter,
    read_sweep_table,
)
from tuner.kernels.families import parse_config

GPU = "NVIDIA H100 80GB HBM3"
PROVENANCE = {"device": GPU, "sm_count": 132, "compute_capability": "9.0", "cupy": "14.2.0"}
WARP = "warptile_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128"
HEADER = {"kind": "header", "device": GPU, "arch": "sm_90", "provenance": PROVENANCE}
OK = {"kind": "result", "shape": "64x64x64", "config_name": WARP, "family": "warptile",
      "status": "ok", "ms": 0.5}  # fmt: skip


def test_what_the_writer_writes_the_reader_reads(tmp_path: Path) -> None:
    header = SweepHeader(GPU, "sm_90", PROVENANCE, "2026-11-22T07:51:25+00:00", {"budget_ms": 25})
    config = parse_config(WARP)
    ran = Result(WARP, "warptile", config.as_dict(), "ok", ms=0.5, cublas_ms=0.4, registers=95)
    failed = Result.failed(config, "wrong_result", "relative error 1e-2")
    shape = Shape(1000, 1000, 1000)
    path = tmp_path / "h100-sweep-x.jsonl"
    with SweepTableWriter(path, header) as table:
        table.add(SweepRow.from_result(ran, shape))
        table.add(SweepRow.from_result(failed, shape))
    read = read_sweep_table(path)
    assert read.header == header and read.header.gpu.sm_count == 132
    assert [(r.shape, r.status, r.ms, r.cublas_ms, r.registers) for r in read.rows] == [
        (shape, "ok", 0.5, 0.4, 95),
        (shape, "wrong_result", None, None, None),
    ]
    assert read.rows[1].reason == "relative error 1e-2" and read.rows[1].ok_ms is None
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["budget_ms"] == 25 and lines[1]["kind"] == "result"


def test_blank_lines_are_not_content(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(f"{json.dumps(HEADER)}\n\n{json.dumps(OK)}\n\n")
    assert [r.config_name for r in read_sweep_table(path).rows] == [WARP]


@pytest.mark.parametrize(
    ("lines", "where", "problem"),
    [
        ([OK], "line 1", "starts with its header, got `kind` 'result'"),
        ([HEADER, HEADER], "line 2", "`kind` must be 'result' after the header, got 'header'"),
        ([{**HEADER, "provenance": {}}], "line 1", "provenance: `sm_count` must be an integer"),
        ([HEADER, "{not json"], "line 2", "Expecting property name"),
        ([HEADER, [1, 2]], "line 2", "a line must be a JSON object, got [1, 2]"),
        ([HEADER, {**OK, "config_name": None}], "line 2", "`config_name` must be a non-empty"),
        ([HEADER, {**OK, "ms": "fast"}], "line 2", "`ms` must be a finite number, got 'fast'"),
        ([HEADER, {**OK, "registers": 9.5}], "line 2", "`registers` must be an integer"),
        ([HEADER, {**OK, "status": "great"}], "line 2", "`status` must be one of ok, invalid"),
        ([HEADER, {**OK, "ms": None}], "line 2", "an ok result needs its `ms`"),
        ([HEADER, {**OK, "shape": "64x"}], "line 2", "`shape`: shape must look like MxNxK"),
    ],
    ids=["no-header", "two-headers", "no-sm-count", "not-json", "not-an-object", "no-config",
         "ms-text", "registers-float", "unknown-status", "ok-without-ms", "bad-shape"],
)  # fmt: skip
def test_a_bad_line_is_named(tmp_path: Path, lines: list[object], where: str, problem: str) -> None:
    path = tmp_path / "bad.jsonl"
    text = (line if isinstance(line, str) else json.dumps(line) for line in lines)
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(ResultsFileError) as error:
        read_sweep_table(path)
    assert str(error.value).startswith(f"{path} {where}: ")
    assert problem in str(error.value) and str(error.value).endswith("fix or remove the file")


def test_an_empty_or_missing_table(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ResultsFileError, match=r"empty\.jsonl line 1: the file is empty"):
        read_sweep_table(tmp_path / "empty.jsonl")
    with pytest.raises(InputError, match=r"sweep table '.*missing\.jsonl' does not exist"):
        read_sweep_table(tmp_path / "missing.jsonl")


def test_a_directory_or_a_table_not_in_utf8_is_named(tmp_path: Path) -> None:
    """One line each, not a traceback and not "does not exist" for a folder that does."""
    with pytest.raises(InputError, match=r"sweep table '.*' is a directory; give a file"):
        read_sweep_table(tmp_path)
    (tmp_path / "latin1.jsonl").write_bytes(b'{"kind": "header", "device": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"latin1\.jsonl' is not UTF-8 text \(byte 33"):
        read_sweep_table(tmp_path / "latin1.jsonl")
