"""Conformance: device rates are recorded per probe run and read back newest first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.orm import Session

from storage import (
    DeviceIn,
    RatesIn,
    device_rates,
    latest_device_rates,
    list_devices,
    record_device_rates,
)

from .factories import A100, H100

WHEN = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def test_rates_are_stored_with_their_device_and_provenance(session: Session) -> None:
    rates = RatesIn(
        ffma_tflops=63.7,
        fp64_tensor_tflops=60.1,
        dram_tb_s=3.35,
        launch_us=2.5,
        measured_at=WHEN,
        provenance={"probe": "ffma_ceiling", "driver": 13000},
    )
    record_device_rates(session, H100, rates)
    session.commit()
    row = device_rates(session, H100.name)
    assert row is not None
    assert (row.ffma_tflops, row.fp64_tensor_tflops, row.dram_tb_s, row.launch_us) == (
        63.7, 60.1, 3.35, 2.5
    )  # fmt: skip
    assert row.measured_at == WHEN
    assert row.provenance == {"probe": "ffma_ceiling", "driver": 13000}
    assert (row.device.name, row.device.arch, row.device.sm_count) == (H100.name, "sm_90", 132)
    assert [d.name for d in list_devices(session)] == [H100.name]  # the device was created


def test_the_newest_run_is_read_and_the_older_kept(session: Session) -> None:
    record_device_rates(session, H100, RatesIn(ffma_tflops=60.0, measured_at=WHEN))
    record_device_rates(
        session, H100, RatesIn(ffma_tflops=62.0, measured_at=WHEN + timedelta(hours=1))
    )
    # Recorded last but measured earlier: not the newest.
    record_device_rates(
        session, H100, RatesIn(ffma_tflops=50.0, measured_at=WHEN - timedelta(days=1))
    )
    record_device_rates(session, A100, RatesIn(fp64_tensor_tflops=19.0, measured_at=WHEN))
    session.commit()
    newest = device_rates(session, H100.name)
    assert newest is not None and newest.ffma_tflops == 62.0
    latest = latest_device_rates(session)
    assert [(r.device.name, r.ffma_tflops, r.fp64_tensor_tflops) for r in latest] == [
        (A100.name, None, 19.0),
        (H100.name, 62.0, None),
    ]


def test_unknown_device_has_no_rates(session: Session) -> None:
    record_device_rates(session, H100, RatesIn(ffma_tflops=60.0))
    session.commit()
    assert device_rates(session, "no such GPU") is None
    assert device_rates(session, H100.name) is not None  # measured_at defaults to now


def test_rates_of_two_slices_of_one_gpu_name_stay_apart(session: Session) -> None:
    slice_ = DeviceIn(H100.name, "sm_90", 66)  # a MIG slice: the same name, fewer SMs
    record_device_rates(session, H100, RatesIn(ffma_tflops=60.0, measured_at=WHEN))
    record_device_rates(session, slice_, RatesIn(ffma_tflops=30.0, measured_at=WHEN))
    session.commit()
    assert sorted(r.device.sm_count for r in latest_device_rates(session)) == [66, 132]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({}, "give at least one rate"),
        ({"ffma_tflops": 0.0}, "`ffma_tflops` must be > 0, got 0.0"),
        ({"dram_tb_s": float("inf")}, "`dram_tb_s` must be a finite number"),
        ({"launch_us": "2"}, "`launch_us` must be a finite number, got '2'"),
        ({"ffma_tflops": 1.0, "measured_at": "today"}, "`measured_at` must be a datetime"),
        ({"ffma_tflops": 1.0, "provenance": {1: "x"}}, "`provenance` keys must be strings"),
    ],
)
def test_bad_rates_name_the_field(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        RatesIn(**values)
