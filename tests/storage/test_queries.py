"""Conformance: the read path finds best configs, nearest shapes and filtered pages."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from storage import (
    RatesIn,
    ShapeIn,
    StudyShape,
    best_configs,
    best_configs_fingerprint,
    best_for,
    count_measurements,
    list_devices,
    list_measurements,
    measurements_for_study,
    ping,
    record_device_rates,
    record_measurement,
    study_summaries,
)
from tuner.core.phases import Phase

from .factories import A100, H100, SQUARE, measurement

SMALL = ShapeIn(1024, 1024, 1024)
SKINNY = ShapeIn(512, 2048, 256)


@pytest.fixture
def populated(session: Session) -> Session:
    """H100: SQUARE best 1.0 ms (of 2 ok + 1 failed), SMALL 0.1, SKINNY 0.05; A100: SQUARE 0.9."""
    record_measurement(session, H100, SQUARE, measurement(ms=1.5, config_name="sq_slow"))
    record_measurement(session, H100, SQUARE, measurement(ms=1.0, config_name="sq_fast"))
    record_measurement(
        session, H100, SQUARE, measurement(ms=None, status="compile_failed", config_name="sq_bad")
    )
    record_measurement(session, H100, SMALL, measurement(ms=0.1, config_name="small"))
    record_measurement(
        session, H100, SKINNY, measurement(ms=0.05, family="blocktile_2d", config_name="skinny")
    )
    record_measurement(session, A100, SQUARE, measurement(ms=0.9, config_name="a100_sq"))
    session.commit()
    return session


def test_best_for_exact_shape(populated: Session) -> None:
    found = best_for(populated, H100.name, 4096, 4096, 4096)
    assert found is not None
    best, row = found
    assert row.config_name == "sq_fast" and row.ms == 1.0
    assert best.measurement_id == row.id and best.device.name == H100.name
    anywhere = best_for(populated, None, 4096, 4096, 4096)
    assert anywhere is not None and anywhere[1].config_name == "a100_sq"
    assert best_for(populated, H100.name, 4096, 4096, 4095) is None
    assert best_for(populated, H100.name, 4096, 4096, 4096, dtype="float16") is None
    assert best_for(populated, "no such gpu", 4096, 4096, 4096) is None


def test_best_configs_lists_per_device(populated: Session) -> None:
    assert len(best_configs(populated)) == 4
    h100 = best_configs(populated, device=H100.name)
    assert sorted(b.measurement.config_name for b in h100) == ["skinny", "small", "sq_fast"]
    assert best_configs(populated, device="no such gpu") == []


def test_list_measurements_filters(populated: Session) -> None:
    rows, total = list_measurements(populated)
    assert total == 6 and len(rows) == 6
    rows, total = list_measurements(populated, device=A100.name)
    assert total == 1 and rows[0].config_name == "a100_sq"
    rows, total = list_measurements(populated, family="blocktile_2d")
    assert total == 1 and rows[0].config_name == "skinny"
    rows, total = list_measurements(populated, status="compile_failed")
    assert [r.config_name for r in rows] == ["sq_bad"] and total == 1
    _, total = list_measurements(populated, m_min=1024, m_max=1024)
    assert total == 1
    _, total = list_measurements(populated, n_min=2048)
    assert total == 5  # four 4096-wide rows plus the skinny one
    _, total = list_measurements(populated, k_max=1024, device=H100.name)
    assert total == 2
    _, total = list_measurements(populated, device=H100.name, status="ok", k_min=4096)
    assert total == 2


def test_list_measurements_pages(populated: Session) -> None:
    pages = [list_measurements(populated, limit=4, offset=offset) for offset in (0, 4, 8)]
    assert [len(rows) for rows, _ in pages] == [4, 2, 0]
    assert all(total == 6 for _, total in pages)
    ids = [row.id for rows, _ in pages for row in rows]
    assert len(set(ids)) == 6
    assert ids == sorted(ids, reverse=True)  # newest first
    with pytest.raises(ValueError, match="`limit`"):
        list_measurements(populated, limit=0)
    with pytest.raises(ValueError, match="`offset`"):
        list_measurements(populated, offset=-1)


def test_list_devices(populated: Session) -> None:
    devices = list_devices(populated)
    assert [(d.name, d.arch, d.sm_count) for d in devices] == [
        (A100.name, "sm_80", 108),
        (H100.name, "sm_90", 132),
    ]


def test_measurements_for_study_in_trial_order(session: Session) -> None:
    for trial in (2, 0, 1):
        record_measurement(
            session,
            H100,
            SQUARE,
            measurement(
                ms=1.0 + trial, study="study-a", trial_number=trial, config_name=f"t{trial}"
            ),
        )
    record_measurement(session, H100, SQUARE, measurement(study="study-b", trial_number=0))
    session.commit()
    rows = measurements_for_study(session, "study-a")
    assert [r.trial_number for r in rows] == [0, 1, 2]
    assert [r.config_name for r in rows] == ["t0", "t1", "t2"]
    assert measurements_for_study(session, "none") == []


def test_fingerprint_changes_with_bests_devices_and_rates(session: Session) -> None:
    marks = [best_configs_fingerprint(session)]
    assert marks[0][0] == 0  # no best config yet

    def changed() -> bool:
        session.commit()
        marks.append(best_configs_fingerprint(session))
        return marks[-1] != marks[-2]

    record_measurement(session, H100, SQUARE, measurement(ms=2.0))
    assert changed()  # a new best
    record_measurement(session, H100, SQUARE, measurement(ms=3.0))
    assert not changed()  # slower: the best stays, and so does the fingerprint
    record_measurement(session, H100, SQUARE, measurement(ms=1.0))
    assert changed()  # a best replaced
    record_measurement(session, A100, SQUARE, measurement(ms=None, status="timeout"))
    assert changed()  # a device seen, with no best
    record_device_rates(session, A100, RatesIn(ffma_tflops=19.5))
    assert changed()
    assert not changed()


def test_study_summaries_and_measurement_count(session: Session) -> None:
    for trial, (ms, status) in enumerate(((2.0, "ok"), (None, "timeout"), (1.5, "ok"))):
        record_measurement(
            session,
            H100,
            SQUARE,
            measurement(ms=ms, status=status, study="b-study", trial_number=trial),
        )
    record_measurement(session, H100, SQUARE, measurement(ms=None, status="pruned", study="a"))
    record_measurement(session, H100, SQUARE, measurement(ms=0.5))  # in no study
    session.commit()
    assert [(s.name, s.trials, s.ok, s.best_ms) for s in study_summaries(session)] == [
        ("a", 1, 0, None),
        ("b-study", 3, 2, 1.5),
    ]
    assert count_measurements(session) == 5


def test_a_studys_phases_are_summarised_apart_with_what_they_measured(session: Session) -> None:
    """Screening and final rows of one study are two summaries, screening first; each names its
    device and shape when its rows share one, and its families in the order first measured."""
    pipelined = {"family": "pipelined", "config_name": "p"}
    for trial, extra in enumerate(({}, pipelined, {})):
        record_measurement(
            session, H100, SQUARE, measurement(study="s", trial_number=trial, **extra)
        )
    record_measurement(session, H100, SQUARE, measurement(ms=0.9, study="s", phase="final"))
    record_measurement(session, A100, SQUARE, measurement(study="mixed"))
    record_measurement(session, H100, SQUARE, measurement(study="mixed"))
    session.commit()
    cube = StudyShape(4096, 4096, 4096, "float32", "NN")
    assert [
        (s.name, s.phase, s.trials, s.best_ms, s.device, s.shape, s.families)
        for s in study_summaries(session)
    ] == [
        ("mixed", Phase.SCREENING, 2, 1.0, None, cube, ("warptile",)),
        ("s", Phase.SCREENING, 3, 1.0, H100.name, cube, ("warptile", "pipelined")),
        ("s", Phase.FINAL, 1, 0.9, H100.name, cube, ("warptile",)),
    ]
    assert [r.phase for r in measurements_for_study(session, "s", phase=Phase.FINAL)] == ["final"]


def test_ping_names_the_backend(session: Session, db_url: str) -> None:
    assert ping(session) == db_url.split(":", 1)[0].split("+", 1)[0]


def test_keyset_pages_walk_every_row_once(populated: Session) -> None:
    walked: list[int] = []
    before = None
    while True:
        rows, total = list_measurements(populated, limit=4, before_id=before)
        assert total == 6  # the filters' total, whatever the page
        walked += [row.id for row in rows]
        if len(rows) < 4:
            break
        before = rows[-1].id
    by_offset = [row.id for row in list_measurements(populated, limit=6)[0]]
    assert walked == by_offset == sorted(by_offset, reverse=True)
    rows, _ = list_measurements(populated, status="ok", before_id=by_offset[2])
    assert {row.id for row in rows} < set(by_offset[3:]) | {0}


def test_a_streamed_page_reads_only_as_far_as_it_is_read(session: Session) -> None:
    """A page is fetched in chunks of STREAM_CHUNK rows: a reader that stops after three rows
    has loaded one chunk, not the page's 300 (what keeps a byte-bounded results page from
    reading rows it then throws away)."""
    from storage import stream_measurements
    from storage.models import Measurement
    from storage.queries import STREAM_CHUNK

    for i in range(300):
        record_measurement(
            session, H100, SQUARE, measurement(ms=1.0 + i / 1000, config_name=f"c{i}")
        )
    session.commit()
    session.expunge_all()
    rows, total = stream_measurements(session, limit=300)
    first = [next(rows) for _ in range(3)]
    assert total == 300 and [r.config_name for r in first] == ["c299", "c298", "c297"]
    loaded = [o for o in session.identity_map.values() if isinstance(o, Measurement)]
    assert len(loaded) <= STREAM_CHUNK < 300
    assert len(list(rows)) == 297  # the rest is still there for a reader that goes on
