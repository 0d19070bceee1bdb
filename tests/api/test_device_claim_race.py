"""Two trusted uploads of a device name nobody has stored yet, with different claims, at the
same moment: exactly one is stored, the other is refused naming the device, on both backends;
and an import whose device a trusted upload claimed otherwise while it staged is refused.

Each upload checks the claim and then writes. Without a lock per name both checks can run
before either write, and both pass; the hook below makes the two uploads meet right after
their checks would have read (``storage.known_devices``), so that interleaving is what happens
whenever nothing holds the second upload back.
"""

from __future__ import annotations

import threading
from contextlib import suppress
from typing import Any

import pytest

import storage
from api import schemas
from api.uploads import store_upload
from tests.api.conftest import SLOW
from tests.api.test_results import upload
from tests.tuner.cli.test_import_trust import entry
from tuner.data.intake import RejectedRecords
from tuner.kernels.families import parse_config

pytestmark = pytest.mark.faults  # the abuse suite: docs/service.md

NEW_NAME = "NVIDIA H800 PCIe"
MEET_TIMEOUT_S = 1.0  # how long an upload waits for the other at the meeting point


def claim(arch: str, sm_count: int) -> schemas.ResultsUpload:
    body = upload(0.4)
    body["device"] = {"name": NEW_NAME, "arch": arch, "sm_count": sm_count}
    return schemas.ResultsUpload.model_validate(body)


def test_simultaneous_trusted_claims_of_a_new_name_store_one_device(
    seeded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = storage.make_engine(seeded)
    sessions = storage.make_session_factory(engine)
    meeting = threading.Barrier(2, timeout=MEET_TIMEOUT_S)
    read_claims = storage.known_devices

    def known_then_meet(*args: Any) -> Any:
        known = read_claims(*args)
        # A lock held by the other upload keeps it from ever coming: then go on alone.
        with suppress(threading.BrokenBarrierError):
            meeting.wait()
        return known

    monkeypatch.setattr(storage, "known_devices", known_then_meet)
    outcomes: dict[str, object] = {}

    def send(arch: str, sm_count: int) -> None:
        try:
            outcomes[arch] = store_upload(claim(arch, sm_count), sessions, True, None)
        except RejectedRecords as exc:
            outcomes[arch] = exc

    writers = [
        threading.Thread(target=send, args=("sm_90", 114)),
        threading.Thread(target=send, args=("sm_89", 128)),
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=60)
    refused = [o for o in outcomes.values() if isinstance(o, RejectedRecords)]
    stored = [o for o in outcomes.values() if isinstance(o, list)]
    assert len(refused) == 1 and len(stored) == 1, outcomes
    assert refused[0].problems[0].path == ("device",)
    assert f"{NEW_NAME!r} is known as" in str(refused[0])
    with sessions() as session:
        devices = storage.trusted_devices_named(session, {NEW_NAME})
        assert len(devices) == 1
        assert storage.count_measurements(session) == 8 + 2  # the seed and one upload
    engine.dispose()


def test_an_import_refuses_a_claim_stored_while_it_staged(db_url: str) -> None:
    """An import checks its devices before it stages its rows; a trusted upload that stores
    another GPU under the same name meanwhile makes the merge refuse the file, whole."""
    engine = storage.make_engine(db_url)
    storage.upgrade(engine)
    sessions = storage.make_session_factory(engine)
    rival = storage.DeviceIn(NEW_NAME, "sm_89", 128)
    document = {
        "format": "gemmtune-export",
        "version": 1,
        "measurements": [entry(device={"name": NEW_NAME, "arch": "sm_90", "sm_count": 114})],
    }

    def meanwhile(staged: int, total: int) -> None:
        with sessions.begin() as session:  # what store_upload writes for a trusted upload
            storage.record_measurement(session, rival, storage.ShapeIn(64, 64, 64), rival_row())

    with pytest.raises(storage.StorageError, match=r"is known as sm_89 with 128 SMs, not sm_90"):
        storage.import_json(sessions, document, progress=meanwhile)
    with sessions() as session:
        devices = storage.trusted_devices_named(session, {NEW_NAME})
        assert [(d.arch, d.sm_count) for d in devices] == [("sm_89", 128)]
        assert storage.count_measurements(session) == 1  # the upload's; none of the file
    engine.dispose()


def rival_row() -> storage.MeasurementIn:
    return storage.MeasurementIn(
        family="warptile", config_name=SLOW, params=parse_config(SLOW).as_dict(), ms=0.5
    )
