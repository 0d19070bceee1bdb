"""``gemmtune import`` refuses a file with one bad record, naming it, and stores nothing of it
(the rules of API uploads: :mod:`tuner.data.intake`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import storage
from tests.tuner.cli.test_tune import cli, one_error_line
from tuner.kernels.families import parse_config

NAME = "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128"


def entry(**changes: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "device": {"name": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "sm_count": 132},
        "shape": {"m": 4096, "n": 4096, "k": 4096},
        "family": "warptile",
        "config_name": NAME,
        "params": parse_config(NAME).as_dict(),
        "status": "ok",
        "ms": 3.0,
        "created_at": "2026-11-23T10:00:00+00:00",
    }
    values.update(changes)
    return values


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"family": "turbo"}, "measurements[1]: `family` must be one of"),
        ({"config_name": "turbo_bm64"}, "measurements[1]: `config_name` must name a valid"),
        ({"ms": 1e-6}, "measurements[1]: `ms` must be >= 0.001"),
        ({"shape": {"m": 2**40, "n": 1, "k": 1}}, "measurements[1]: `shape.m` must be an"),
        ({"reason": "a\x00b", "status": "timeout", "ms": None}, "`reason` must not contain NUL"),
    ],
)
def test_import_of_a_bad_record_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, Any], needle: str
) -> None:
    url = f"sqlite:///{tmp_path / 'target.db'}"
    dump = tmp_path / "dump.json"
    measurements = [entry(), entry(created_at="2026-11-23T11:00:00+00:00", **changes)]
    dump.write_text(
        json.dumps({"format": "gemmtune-export", "version": 1, "measurements": measurements})
    )
    code, _, err = cli(capsys, "import", str(dump), "--db", url)
    assert code == 2
    one_error_line(err, needle, "nothing imported")
    engine = storage.make_engine(url)
    with storage.make_session_factory(engine)() as session:
        assert storage.count_measurements(session) == 0
    engine.dispose()
