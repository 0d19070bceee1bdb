"""Device rows carry trust (schema revision 0010): a trusted writer vouches for a device on
every write path, an untrusted one never does, and only trusted devices reach the answers'
index and its fingerprint. Both backends."""

from __future__ import annotations

from dataclasses import asdict

from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session

import storage
from storage import DeviceIn, MeasurementIn, ShapeIn, downgrade, upgrade
from tuner.answers.index import BestIndex

NAME = "warptile_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128"
PARAMS = {"BM": 64, "BN": 64, "BK": 8, "WM": 32, "WN": 32, "WNITER": 1, "TM": 4, "TN": 4,
          "THREADS": 128}  # fmt: skip
H100 = DeviceIn("NVIDIA H100 80GB HBM3", "sm_90", 132)
SPOOF = DeviceIn("NVIDIA H100 80GB HBM3", "sm_86", 132)
CUBE = ShapeIn(1024, 1024, 1024)


def record(trusted: bool, ms: float = 1.0, **extra: object) -> MeasurementIn:
    return MeasurementIn(
        family="warptile", config_name=NAME, params=PARAMS, ms=ms, trusted=trusted, **extra
    )  # type: ignore[arg-type]


def trust_of(session: Session) -> dict[tuple[str, str, int], bool]:
    rows = session.scalars(select(storage.Device))
    return {(d.name, d.arch, d.sm_count): d.trusted for d in rows}


def test_every_write_path_vouches_for_trusted_devices_only(engine: Engine) -> None:
    sessions = storage.make_session_factory(engine)
    other = DeviceIn("NVIDIA A100-SXM4-40GB", "sm_80", 108)
    probed = DeviceIn("NVIDIA L4", "sm_89", 58)
    with sessions.begin() as session:
        storage.record_measurement(session, H100, CUBE, record(trusted=True))
        storage.record_measurement(session, SPOOF, CUBE, record(trusted=False))
        storage.record_measurements(session, [(other, CUBE, record(trusted=False))])
        storage.record_device_rates(session, probed, storage.RatesIn(ffma_tflops=30.0))
    with sessions() as session:
        assert trust_of(session) == {
            ("NVIDIA H100 80GB HBM3", "sm_90", 132): True,
            ("NVIDIA H100 80GB HBM3", "sm_86", 132): False,
            ("NVIDIA A100-SXM4-40GB", "sm_80", 108): False,
            ("NVIDIA L4", "sm_89", 58): True,
        }
        known = [(d.name, d.arch) for d in storage.list_devices(session, trusted_only=True)]
        assert known == [("NVIDIA H100 80GB HBM3", "sm_90"), ("NVIDIA L4", "sm_89")]
    # A trusted row later vouches for a device untrusted rows created; never the reverse.
    with sessions.begin() as session:
        storage.record_measurements(session, [(other, CUBE, record(trusted=True, ms=2.0))])
        storage.record_measurement(session, H100, CUBE, record(trusted=False, ms=3.0))
    with sessions() as session:
        assert trust_of(session)[("NVIDIA A100-SXM4-40GB", "sm_80", 108)] is True
        assert trust_of(session)[("NVIDIA H100 80GB HBM3", "sm_90", 132)] is True


def test_an_import_vouches_for_the_devices_of_its_trusted_rows(engine: Engine) -> None:
    sessions = storage.make_session_factory(engine)
    entries = [
        {"device": asdict(H100), "trusted": True, "hour": 10},
        {"device": {**asdict(H100), "name": "NVIDIA H200"}, "trusted": False, "hour": 11},
    ]
    data = {
        "format": "gemmtune-export",
        "version": 1,
        "measurements": [
            {
                "device": e["device"],
                "shape": {"m": 64, "n": 64, "k": 64},
                "family": "warptile",
                "config_name": NAME,
                "params": PARAMS,
                "status": "ok",
                "ms": 1.0,
                "trusted": e["trusted"],
                "created_at": f"2026-11-23T{e['hour']}:00:00+00:00",
            }
            for e in entries
        ],
    }
    assert storage.import_json(sessions, data) == 2
    with sessions() as session:
        assert trust_of(session) == {
            ("NVIDIA H100 80GB HBM3", "sm_90", 132): True,
            ("NVIDIA H200", "sm_90", 132): False,
        }


def test_the_index_sees_a_device_once_it_is_vouched_for(engine: Engine) -> None:
    """The fingerprint counts trusted devices, so a device vouched for after it was created
    (a lower id than the newest) still reaches a running index."""
    sessions = storage.make_session_factory(engine)
    late = DeviceIn("NVIDIA L40S", "sm_89", 142)
    with sessions.begin() as session:
        storage.record_measurement(session, late, CUBE, record(trusted=False))
        storage.record_measurement(session, H100, CUBE, record(trusted=True))
    index = BestIndex(sessions)
    assert {d.name for d in index.snapshot().devices} == {H100.name}
    with sessions.begin() as session:
        storage.record_measurement(session, late, ShapeIn(64, 64, 64), record(trusted=True))
    index.refresh()
    assert {d.name for d in index.snapshot().devices} == {H100.name, late.name}
    with sessions() as session:
        assert storage.best_configs_fingerprint(session) == index.snapshot().mark()


def test_upgrade_from_0009_marks_devices_only_untrusted_rows_named(engine: Engine) -> None:
    downgrade(engine, "0009")
    with engine.begin() as connection:
        for device_id, name in enumerate(("trusted", "spoof", "probed", "listed", "mixed"), 1):
            connection.execute(
                text("INSERT INTO device (id, name, arch, sm_count) VALUES (:i, :n, 'sm_90', 1)"),
                {"i": device_id, "n": name},
            )
        connection.execute(text("INSERT INTO shape (id, m, n, k) VALUES (1, 8, 8, 8)"))
        for row_id, (device_id, trusted) in enumerate(
            ((1, True), (2, False), (3, False), (5, False), (5, True)), 1
        ):
            connection.execute(
                text(
                    "INSERT INTO measurement (id, device_id, shape_id, family, config_name, "
                    "params, status, provenance, trusted) VALUES (:i, :d, 1, 'warptile', 'x', "
                    "'{}', 'ok', '{}', :t)"
                ),
                {"i": row_id, "d": device_id, "t": trusted},
            )
        connection.execute(
            text(
                "INSERT INTO device_rates (device_id, ffma_tflops, provenance) VALUES (3, 1, '{}')"
            )
        )
    upgrade(engine)
    storage.check_schema(engine)
    with storage.make_session_factory(engine)() as session:
        assert {name: trusted for (name, _, _), trusted in trust_of(session).items()} == {
            "trusted": True,
            "spoof": False,  # every row of it untrusted: it resolves nothing
            "probed": True,  # the probes measured it
            "listed": True,  # no measurement: registered by an import's device list
            "mixed": True,
        }
    downgrade(engine, "0009")
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM device")).scalar_one() == 5
