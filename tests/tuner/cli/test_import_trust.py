"""``gemmtune import`` on both backends: the same bad file is refused with the same one line
naming its row and field, and the same good file gives the same database (rows, provenance,
trust of rows and devices), on SQLite as on PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

import storage
from tests.conftest import NewDatabase
from tests.tuner.cli.running import cli, one_error_line
from tuner.core.provenance import UNREADABLE_KEY
from tuner.kernels.families import accuracy_of, parse_config

pytestmark = pytest.mark.faults  # the abuse suite: docs/service.md

H100 = {"name": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "sm_count": 132}
WARPTILE = "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128"
HMMA = "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt0_ly0"
DMMA = "dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1"


def entry(name: str = WARPTILE, hour: int = 10, **changes: Any) -> dict[str, Any]:
    config = parse_config(name)
    values: dict[str, Any] = {
        "device": dict(H100),
        "shape": {"m": 4096, "n": 4096, "k": 4096, "dtype": "float32", "layout": "NN"},
        "family": config.family,
        "config_name": name,
        "params": config.as_dict(),
        "status": "ok",
        "ms": 3.0,
        "accuracy": accuracy_of(config.family),
        "provenance": {"worker": "gpu0", "rounds": [3.0, 3.1]},
        "trusted": True,
        "created_at": f"2026-11-23T{hour:02d}:00:00+00:00",
    }
    values.update(changes)
    return values


def write_file(folder: Path, measurements: list[dict[str, Any]]) -> Path:
    dump = folder / "dump.json"
    document = {"format": "gemmtune-export", "version": 1, "measurements": measurements}
    dump.write_text(json.dumps(document))  # NaN as NaN, lone surrogates as \\ud800 escapes
    return dump


def nested(depth: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    inner = top
    for _ in range(depth - 1):
        inner["a"] = {}
        inner = inner["a"]
    return top


def stored(url: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """What a database holds, backend-neutral: each measurement's key values, and each
    device with its trust."""
    engine = storage.make_engine(url)
    try:
        with storage.make_session_factory(engine)() as session:
            rows, _ = storage.list_measurements(session, limit=1000)
            devices = [
                (d.name, d.arch, d.sm_count, d.trusted) for d in storage.list_devices(session)
            ]
            values = [
                (
                    row.device.name,
                    row.device.arch,
                    row.shape.dtype,
                    row.config_name,
                    row.ms,
                    row.trusted,
                    row.accuracy,
                    json.dumps(storage.measurement_values(row)["provenance"], sort_keys=True),
                    row.created_at.isoformat(),
                )
                for row in rows
            ]
    finally:
        engine.dispose()
    return sorted(values), devices


def half(hour: int) -> dict[str, Any]:
    shape = {"m": 4096, "n": 4096, "k": 4096, "dtype": "float16", "layout": "NN"}
    return entry(HMMA, hour, shape=shape, ms=0.5)


def test_a_good_file_gives_the_same_database_on_each_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], new_database: NewDatabase
) -> None:
    url = new_database()
    other = {"name": "NVIDIA H200", "arch": "sm_90", "sm_count": 132}
    measurements = [
        entry(),
        entry(DMMA, 11, ms=2.35, provenance={"deep": nested(7), "text": "Ünïcode"}),
        half(12),
        entry(hour=13, device=other, trusted=False, ms=2.0),  # an upload nobody vouched for
    ]
    code, _, err = cli(capsys, "import", str(write_file(tmp_path, measurements)), "--db", url)
    assert code == 0, err
    values, devices = stored(url)
    assert devices == [
        ("NVIDIA H100 80GB HBM3", "sm_90", 132, True),
        ("NVIDIA H200", "sm_90", 132, False),  # only untrusted rows: it resolves no answer
    ]
    assert [(v[0], v[2], v[3], v[5], v[6]) for v in values] == [
        ("NVIDIA H100 80GB HBM3", "float16", HMMA, True, accuracy_of("hmma")),
        ("NVIDIA H100 80GB HBM3", "float32", DMMA, True, accuracy_of("dmma_pipelined")),
        ("NVIDIA H100 80GB HBM3", "float32", WARPTILE, True, "exact"),
        ("NVIDIA H200", "float32", WARPTILE, False, "exact"),
    ]
    deep = next(v for v in values if v[3] == DMMA)
    assert json.loads(deep[7]) == {"deep": nested(7), "text": "Ünïcode"}
    # Importing it again changes nothing, on either backend.
    code, out, _ = cli(capsys, "import", str(write_file(tmp_path, measurements)), "--db", url)
    assert code == 0 and "imported 0 measurements" in out
    assert stored(url) == (values, devices)


KNOWN_AS = "'NVIDIA H100 80GB HBM3' is known as sm_90 with 132 SMs, not sm_86"
HALF_WARPTILE = {**half(11), **{k: entry()[k] for k in ("family", "config_name", "params")}}
BAD_FILES: dict[str, tuple[dict[str, Any], str]] = {
    "nan": (
        entry(hour=11, provenance={"clock": float("nan")}),
        "`provenance.clock` must be a finite number, got nan",
    ),
    "infinity": (
        entry(hour=11, provenance={"r": [float("inf")]}),
        "`provenance.r[0]` must be a finite number, got inf",
    ),
    "surrogate": (
        entry(hour=11, provenance={"w": "x\ud800"}),
        "`provenance.w` must be valid Unicode text",
    ),
    "deep": (entry(hour=11, provenance=nested(256)), "nests deeper than 8 levels"),
    "keys": (entry(hour=11, provenance={str(i): i for i in range(65)}), "at most 64 keys"),
    "reason surrogate": (
        entry(hour=11, status="timeout", ms=None, reason="x\udc00"),
        "`reason` must be valid Unicode text",
    ),
    "other arch": (entry(hour=11, device={**H100, "arch": "sm_86"}), f".device: {KNOWN_AS}"),
    "too many SMs": (
        entry(hour=11, device={**H100, "name": "X", "sm_count": 100_000}),
        "`device.sm_count` must be at most 1024",
    ),
    "hmma for float32": (
        entry(HMMA, 11),
        "`family` must compute the shape: hmma computes float16/bfloat16",
    ),
    "warptile for float16": (
        HALF_WARPTILE,
        "`family` must compute the shape: warptile computes float32",
    ),
    "wrong class": (
        entry(hour=11, accuracy="bf16x3"),
        "`accuracy` must be 'exact', the class of family warptile",
    ),
}


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_a_bad_file_is_one_line_naming_its_row_and_nothing_is_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], new_database: NewDatabase, kind: str
) -> None:
    url = new_database()
    bad, needle = BAD_FILES[kind]
    dump = write_file(tmp_path, [entry(), bad])
    code, _, err = cli(capsys, "import", str(dump), "--db", url)
    assert code == 2, err
    one_error_line(err, "measurements[1]", needle, "nothing imported")
    assert stored(url) == ([], [])


def test_a_file_nested_too_deep_to_parse_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], new_database: NewDatabase
) -> None:
    url = new_database()
    dump = tmp_path / "deep.json"
    depth = 200_000
    dump.write_text(
        '{"format": "gemmtune-export", "version": 1, "measurements": '
        + "[" * depth
        + "]" * depth
        + "}"
    )
    code, _, err = cli(capsys, "import", str(dump), "--db", url)
    assert code == 2, err
    one_error_line(err, str(dump), "nests JSON arrays or objects too deeply")


def test_an_export_holding_a_stored_nan_imports_into_either_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], new_database: NewDatabase
) -> None:
    """SQLite stored NaN in a provenance before the rule (PostgreSQL never could): its export
    shows that provenance as one key saying why, so it is strict JSON and imports anywhere."""
    source = f"sqlite:///{tmp_path / 'source.db'}"
    code, _, err = cli(
        capsys, "import", str(write_file(tmp_path, [entry(), entry(hour=11)])), "--db", source
    )
    assert code == 0, err
    engine = storage.make_engine(source)
    with storage.make_session_factory(engine).begin() as session:
        session.execute(update(storage.Measurement).values(provenance={"clock": float("nan")}))
    engine.dispose()
    exported = tmp_path / "export.json"
    code, _, err = cli(capsys, "export", str(exported), "--db", source)
    assert code == 0, err
    text = exported.read_text()
    json.loads(text, parse_constant=lambda token: pytest.fail(f"{token} in the export"))

    target = new_database()
    code, _, err = cli(capsys, "import", str(exported), "--db", target)
    assert code == 0, err
    values, _ = stored(target)
    assert len(values) == 2
    for value in values:
        assert "must be a finite number, got nan" in json.loads(value[7])[UNREADABLE_KEY]


def test_a_file_contradicting_a_stored_device_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], new_database: NewDatabase
) -> None:
    """The database knows the H100 from an earlier import; a later file of untrusted rows
    under its name with another SM count is refused, and one already stored stays a no-op."""
    url = new_database()
    first = write_file(tmp_path, [entry()])
    assert cli(capsys, "import", str(first), "--db", url)[0] == 0
    before = stored(url)
    spoof = entry(hour=12, device={**H100, "sm_count": 114}, trusted=False)
    code, _, err = cli(capsys, "import", str(write_file(tmp_path, [entry(), spoof])), "--db", url)
    assert code == 2
    one_error_line(err, "measurements[1].device", "not sm_90 with 114 SMs", "nothing imported")
    assert stored(url) == before
