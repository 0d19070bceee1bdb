"""Suite files: ``gemmtune bench``'s document written and read by one module; a bad row stops
the read (and the write) with file, row and field named."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.data import (
    MeasuredOn,
    ResultsFileError,
    read_suite_file,
    suite_document,
    write_suite_file,
)

GPU = "NVIDIA H200"
PROVENANCE = {"device": GPU, "sm_count": 132, "compute_capability": "9.0"}
CONFIG = "warptile_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128"
OK: dict[str, Any] = {"class": "odd", "m": 1000, "n": 1000, "k": 1000, "status": "ok",
                      "config": CONFIG, "ms": 0.06, "cublas_ms": 0.07, "ratio": 1.17,
                      "roofline": {"limit": "compute"}}  # fmt: skip
NONE: dict[str, Any] = {"class": "tiny", "m": 1, "n": 2, "k": 3, "status": "no_config",
                        "config": None, "reason": "no candidate ran"}  # fmt: skip


def document(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return suite_document(
        device=GPU,
        provenance=PROVENANCE,
        suite="tuner/data/suites/shapes.csv",
        method={"rounds": 5},
        roofline=None,
        summary={"geomean_ratio": 1.17},
        rows=rows,
    )


def test_what_the_writer_writes_the_reader_reads(tmp_path: Path) -> None:
    path = tmp_path / "out" / "h200-suite.json"
    write_suite_file(path, document([OK, NONE]))
    suite = read_suite_file(path)
    assert suite.gpu == MeasuredOn(GPU, "sm_90", 132)
    assert [(r.label, r.shape, r.status, r.config, r.ms, r.ratio) for r in suite.rows] == [
        ("odd", Shape(1000, 1000, 1000), "ok", CONFIG, 0.06, 1.17),
        ("tiny", Shape(1, 2, 3), "no_config", None, None, None),
    ]
    assert suite.document["shapes"][0]["roofline"] == {"limit": "compute"}  # kept as written
    assert suite.document["method"] == {"rounds": 5}
    assert suite.provenance["date"] == suite.document["date"]  # stamped when made


@pytest.mark.parametrize(
    ("change", "where", "problem"),
    [
        ({"status": "fine"}, "shapes[1]", "`status` must be one of ok, invalid"),
        ({"config": None}, "shapes[1]", "an ok row needs its `config` and `ms`"),
        ({"m": 0}, "shapes[1]", "`m` must be an integer in 1..2147483647, got 0"),
        ({"k": "64"}, "shapes[1]", "`k` must be an integer, got '64'"),
        ({"ratio": "x"}, "shapes[1]", "`ratio` must be a finite number, got 'x'"),
    ],
)
def test_a_bad_row_is_named_and_never_written(
    tmp_path: Path, change: dict[str, Any], where: str, problem: str
) -> None:
    path = tmp_path / "h100-suite.json"
    bad = document([NONE, {**OK, **change}])
    with pytest.raises(ResultsFileError, match=rf"h100-suite\.json {re.escape(where)}: "):
        write_suite_file(path, bad)
    assert not path.exists()
    path.write_text(json.dumps(bad))
    with pytest.raises(ResultsFileError) as error:
        read_suite_file(path)
    assert f"{path} {where}: {problem}" in str(error.value)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[1]", "(top level): a suite file must be a JSON object, got [1]"),
        ('{"device": "G", "provenance": {}}', "(top level): provenance: `sm_count` must be"),
        ('{"device": "G", "provenance": {"sm_count": 1}}', "`compute_capability` must be"),
        (json.dumps({"device": GPU, "provenance": PROVENANCE}), "`shapes` must be a list"),
        ('{"device": 3}', "(top level): `device` must be a non-empty string, got 3"),
        ('{"device": "G",\n "shapes": [}', "line 2: Expecting value"),
    ],
)
def test_a_file_of_another_format_is_named(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "x-suite.json"
    path.write_text(text)
    with pytest.raises(ResultsFileError) as error:
        read_suite_file(path)
    assert problem in str(error.value) and str(path) in str(error.value)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"suite file .* does not exist"):
        read_suite_file(tmp_path / "nope.json")


def test_a_directory_or_a_file_not_in_utf8_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"suite file '.*' is a directory; give a file"):
        read_suite_file(tmp_path)
    (tmp_path / "utf16.json").write_text('{"device": "H100"}', encoding="utf-16")
    with pytest.raises(InputError, match=r"utf16\.json' is not UTF-8 text"):
        read_suite_file(tmp_path / "utf16.json")
