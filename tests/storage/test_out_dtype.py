"""The type of C in storage: revision 0012 reads every older shape as writing float32 C, the
type is part of a shape's key, and export files carry it (files without it mean float32)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

import storage
from storage import downgrade, upgrade
from storage.records import get_or_create_shape
from tests.storage.factories import H100, measurement


def test_upgrade_from_0009_reads_every_shape_as_writing_float32_c(engine: Engine) -> None:
    downgrade(engine, "0011")
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO shape (m, n, k, dtype, layout) VALUES (64, 64, 64, 'bfloat16', 'NT')")
        )
    upgrade(engine)
    storage.check_schema(engine)
    with storage.make_session_factory(engine)() as session:
        old = storage.find_shape(session, storage.ShapeIn(64, 64, 64, "bfloat16", "NT"))
        assert old is not None and old.out_dtype == "float32"
        # The same problem writing bfloat16 C is another row, beside the old one.
        half = get_or_create_shape(
            session, storage.ShapeIn(64, 64, 64, "bfloat16", "NT", "bfloat16")
        )
        session.commit()
        assert half.id != old.id and half.out_dtype == "bfloat16"


def test_downgrade_below_0012_refuses_shapes_writing_half_c(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO shape (m, n, k, dtype, layout, out_dtype) "
                "VALUES (1, 2, 3, 'float16', 'NN', 'float16')"
            )
        )
    with pytest.raises(RuntimeError, match="writing float16 or bfloat16 C"):
        downgrade(engine, "0011")


def test_downgrade_below_0012_keeps_float32_shapes(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO shape (m, n, k, dtype) VALUES (1, 2, 3, 'float16')"))
    downgrade(engine, "0011")
    with engine.connect() as connection:
        assert connection.execute(text("SELECT dtype FROM shape")).scalars().all() == ["float16"]


def _store(session: Session, out_dtype: str, ms: float) -> None:
    shape = storage.ShapeIn(256, 256, 256, "bfloat16", "NN", out_dtype)
    storage.record_measurement(session, H100, shape, measurement(ms=ms))
    session.commit()


def test_best_for_keeps_each_type_of_c_apart(session: Session) -> None:
    _store(session, "float32", 1.0)
    _store(session, "bfloat16", 2.0)
    args = (session, H100.name, 256, 256, 256, "bfloat16", "NN")
    found_32 = storage.best_for(*args)  # no out_dtype: a stored row's float32
    found_16 = storage.best_for(*args, out_dtype="bfloat16")
    assert found_32 is not None and found_32[1].ms == 1.0
    assert found_16 is not None and found_16[1].ms == 2.0
    assert storage.best_for(*args, out_dtype="float16") is None


def test_export_carries_the_type_of_c_and_a_file_without_it_means_float32(
    session: Session, new_database: Callable[[], str]
) -> None:
    _store(session, "bfloat16", 2.0)
    data = json.loads(json.dumps(storage.export_json(session)))
    assert [entry["shape"]["out_dtype"] for entry in data["measurements"]] == ["bfloat16"]
    old = json.loads(json.dumps(data))
    for entry in old["measurements"]:
        del entry["shape"]["out_dtype"]  # as a file written before C had a type
    target = storage.make_engine(new_database())
    try:
        upgrade(target)
        factory = storage.make_session_factory(target)
        assert storage.import_json(factory, data) == 1
        assert storage.import_json(factory, old) == 1  # another shape: float32 C
        with factory() as other:
            keys = sorted(b.shape.out_dtype for b in storage.best_configs(other))
            assert keys == ["bfloat16", "float32"]
    finally:
        target.dispose()
