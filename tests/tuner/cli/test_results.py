"""``gemmtune best``: the API's answer (exact, nearest, default; whose data) on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

import storage
from tests.tuner.cli.running import cli, one_error_line
from tuner.answers.default_rule import DEFAULT_SMALL
from tuner.cli import main
from tuner.kernels.families import parse_config

H100 = storage.DeviceIn("NVIDIA H100 80GB HBM3", "sm_90", 132)
A100 = storage.DeviceIn("NVIDIA A100-SXM4-40GB", "sm_80", 108)
FAST = "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128"
DMMA = "dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1"


def record(
    sessions: object, device: storage.DeviceIn, shape: tuple[int, int, int], name: str, ms: float
) -> None:
    config = parse_config(name)
    m = storage.MeasurementIn(config.family, name, config.as_dict(), ms=ms, cublas_ms=2 * ms)
    with sessions.begin() as session:  # type: ignore[attr-defined]
        storage.record_measurement(session, device, storage.ShapeIn(*shape), m)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """H100: 1024^3 on warptile, 4096^3 on dmma_pipelined; A100: 4096^3 on warptile."""
    url = f"sqlite:///{tmp_path_factory.mktemp('best') / 'best.db'}"
    sessions = storage.open_database(url)
    record(sessions, H100, (1024, 1024, 1024), FAST, 0.05)
    record(sessions, H100, (4096, 4096, 4096), DMMA, 2.4)
    record(sessions, A100, (4096, 4096, 4096), FAST, 9.0)
    return url


def best(capsys: pytest.CaptureFixture[str], db: str, *args: str) -> tuple[int, list[str], str]:
    """``gemmtune best --db DB ARGS``: exit code, stdout lines, stderr."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["best", "--db", db, *args])
    captured = capsys.readouterr()
    code = exited.value.code if isinstance(exited.value.code, int) else 1
    return code, captured.out.splitlines(), captured.err


def test_exact_answer_says_where_it_came_from(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code, lines, _ = best(capsys, db, "--shape", "4096x4096x4096")
    assert code == 0 and lines[0] == DMMA  # no device: the fastest of any
    assert lines[1:4] == [
        "  source: exact (any device), distance 0.000",
        "  measured on 4096x4096x4096 on NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)",
        "  2.4000 ms, 57.3 TFLOP/s, cuBLAS 28.6 TFLOP/s, ratio 2.00",
    ]
    assert lines[4] == "  tuned for 4096x4096x4096 on NVIDIA H100 80GB HBM3; no device named: " + (
        "the fastest of every device's configs"
    )


def test_a_device_gets_its_own_or_its_kinds_answer(
    capsys: pytest.CaptureFixture[str], db: str
) -> None:
    code, lines, _ = best(capsys, db, "--shape", "4096x4096x4096", "--device", A100.name)
    assert code == 0 and lines[0] == FAST and "exact (same device)" in lines[1]
    h200 = ("--device", "NVIDIA H200", "--arch", "sm_90", "--sm-count", "132")
    code, lines, _ = best(capsys, db, "--shape", "1000x1000x1000", *h200)
    assert code == 0 and lines[0] == FAST
    assert lines[1:3] == [
        "  source: nearest (same kind), distance 0.041",
        "  measured on 1024x1024x1024 on NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)",
    ]


def test_an_fp64_slow_gpu_never_gets_dmma(capsys: pytest.CaptureFixture[str], db: str) -> None:
    # No data of its kind (sm_89, 128 SMs): the default, not the H100's dmma_pipelined.
    rtx = ("--device", "NVIDIA GeForce RTX 4090", "--arch", "sm_89", "--sm-count", "128")
    code, lines, _ = best(capsys, db, "--shape", "4096x4096x4096", *rtx)
    assert code == 0 and lines[0] != DMMA
    assert lines[1] == "  source: default"
    assert "nothing tuned on NVIDIA GeForce RTX 4090 or a GPU of its kind" in lines[2]


def test_an_untuned_database_answers_with_the_default(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    storage.open_database(url)  # the schema, nothing tuned
    code, lines, _ = best(capsys, url, "--shape", "77x77x77")
    assert code == 0 and lines[:2] == [DEFAULT_SMALL, "  source: default"]


@pytest.mark.parametrize(
    "command",
    [
        ("best", "--shape", "64x64x64"),
        ("results",),
        ("results", "--format", "json"),
        ("export", "-"),
    ],
)
def test_reading_commands_never_create_a_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: tuple[str, ...]
) -> None:
    typo = tmp_path / "gemtune.db"
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main([*command, "--db", f"sqlite:///{typo}"])
    captured = capsys.readouterr()
    assert exited.value.code == 2 and captured.out == ""
    assert captured.err.count("\n") == 1 and f"no SQLite database at {typo}" in captured.err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--device", "NVIDIA H20O"), "'NVIDIA H20O' is not a known device"),
        (("--arch", "sm_90"), "--arch and --sm-count describe a GPU"),
        (("--device", "X", "--arch", "ampere"), "`arch` must look like sm_90"),
        (("--device", "X", "--sm-count", "0"), "`sm_count` must be an integer >= 1, got 0"),
    ],
)
def test_bad_device_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], db: str, args: tuple[str, ...], needle: str
) -> None:
    code, lines, err = best(capsys, db, "--shape", "64x64x64", *args)
    assert code == 2 and lines == []
    assert err.count("\n") == 1 and err.startswith("gemmtune: error: ") and needle in err
    if "known device" in needle:
        assert f"known devices: '{A100.name}', '{H100.name}'" in err


def test_a_shape_far_from_every_tuned_one_says_far_and_how_far(
    capsys: pytest.CaptureFixture[str], db: str
) -> None:
    code, lines, _ = best(capsys, db, "--shape", "3x5x7")
    assert code == 0 and lines[0] == DEFAULT_SMALL
    assert lines[1].startswith("  source: far, distance 9.")
    assert "1024x1024x1024" in lines[2] and "too far" in lines[2]


def test_results_for_an_unknown_device_names_the_known_ones(
    capsys: pytest.CaptureFixture[str], db: str
) -> None:
    code, out, err = cli(capsys, "results", "--device", "NVIDIA H20O", "--db", db)
    assert code == 2 and out == ""
    one_error_line(err, "`--device` 'NVIDIA H20O' is not a known device", repr(H100.name))
    code, out, _ = cli(capsys, "results", "--device", H100.name, "--db", db)
    assert code == 0 and FAST in out and DMMA in out and A100.name not in out
