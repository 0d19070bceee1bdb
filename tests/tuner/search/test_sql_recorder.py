"""The one conversion each way between a study's Result and storage's measurement record."""

from __future__ import annotations

import storage
from storage import open_database
from tests.conftest import NewDatabase
from tuner.core.result import Result
from tuner.core.shape import Shape
from tuner.kernels.families import parse_config
from tuner.search.replay import ReplayEvaluator
from tuner.search.sql_recorder import RESULT_FIELDS, SqlRecorder, measurement_in

CONFIG = parse_config("warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128")


def full_result() -> Result:
    """Every field set, each to a value no other field has."""
    return Result(
        CONFIG.name,
        CONFIG.family,
        CONFIG.as_dict(),
        "ok",
        reason="kept for the test",
        ms=0.5,
        tflops=11.0,
        cublas_ms=0.6,
        cublas_tflops=9.0,
        ratio=1.25,  # given, so not derived from the times (that would be 1.2)
        rel_error=3e-7,
        registers=168,
        smem_bytes=32768,
        occupancy=0.25,
        provenance={"device": "replayed", "nvrtc": "13.0"},
    )


def test_a_result_is_a_measurement_record_without_study_and_trial() -> None:
    assert set(RESULT_FIELDS) <= set(storage.MEASUREMENT_FIELDS)
    record = measurement_in(full_result(), "study-1", 7)
    assert (record.study, record.trial_number, record.created_at) == ("study-1", 7, None)
    assert (record.ratio, record.registers, record.rel_error) == (1.25, 168, 3e-7)


def test_a_record_carries_its_familys_accuracy_class() -> None:
    assert measurement_in(full_result()).accuracy == "exact"
    emulated = parse_config("wgmma_bf16x3_bm128_bn256_bk64_wgm2_s4_sw8_dt1_ly0")
    result = Result(emulated.name, emulated.family, emulated.as_dict(), "ok", ms=1.0)
    assert measurement_in(result).accuracy == "bf16x3"


def test_every_field_survives_the_database(new_database: NewDatabase) -> None:
    sessions = open_database(new_database())
    recorder = SqlRecorder(sessions)
    result = full_result()
    recorder.record(result, ReplayEvaluator().device, Shape(64, 64, 64), "s", 0)
    assert recorder.evaluated("s") == {CONFIG.name: result}
    sessions.kw["bind"].dispose()
