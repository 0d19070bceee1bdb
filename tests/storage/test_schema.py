"""Conformance: migrations build the models' schema, and an old schema is refused clearly."""

from __future__ import annotations

import json
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, func, inspect, select, text

import storage.schema
from storage import (
    UPGRADE_COMMAND,
    Base,
    DeviceIn,
    StorageError,
    check_schema,
    current_revision,
    downgrade,
    head_revision,
    make_engine,
    upgrade,
)


def test_upgrade_from_empty_reaches_head(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        assert current_revision(engine) is None
        upgrade(db_url)  # by URL: the CLI path
        assert current_revision(engine) == head_revision()
        check_schema(engine)
        tables = set(inspect(engine).get_table_names())
        assert {"device", "shape", "measurement", "best_config", "claim", "device_rates"} <= tables
        upgrade(engine)  # already at head: a no-op, not an error
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()


def test_models_and_migration_agree(engine: Engine) -> None:
    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection,
            opts={
                "compare_type": True,
                "compare_server_default": True,
                "version_table": storage.schema.VERSION_TABLE,
            },
        )
        assert compare_metadata(context, Base.metadata) == []


def test_measurement_index_exists(engine: Engine) -> None:
    indexes = {ix["name"]: ix["column_names"] for ix in inspect(engine).get_indexes("measurement")}
    assert indexes["ix_measurement_device_id_shape_id_status"] == [
        "device_id",
        "shape_id",
        "status",
    ]


def test_check_schema_refuses_old_schema(engine: Engine) -> None:
    downgrade(engine, "base")
    with pytest.raises(StorageError) as info:
        check_schema(engine)
    message = str(info.value)
    assert f"`{UPGRADE_COMMAND}`" in message
    assert "\n" not in message
    upgrade(engine)
    check_schema(engine)


def test_check_schema_refuses_older_revision(engine: Engine) -> None:
    downgrade(engine, "0001")  # the schema before claims existed
    with pytest.raises(StorageError) as info:
        check_schema(engine)
    assert f"revision 0001, older than this code's {head_revision()}" in str(info.value)
    assert str(info.value).endswith(f"run `{UPGRADE_COMMAND}`")


def _write_device(engine: Engine) -> None:
    """A device row, as an older schema's code wrote it."""
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO device (name, arch, sm_count) VALUES ('H100', 'sm_90', 132)")
        )


def _write_measurement(engine: Engine, study: str | None = None) -> int:
    """A device, a shape and an ok measurement of them, in the columns every revision since
    0001 has; the measurement's id."""
    _write_device(engine)
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO shape (m, n, k) VALUES (64, 64, 64)"))
        return int(
            connection.execute(
                text(
                    "INSERT INTO measurement (device_id, shape_id, family, config_name, params, "
                    "status, ms, study, provenance) VALUES (1, 1, 'warptile', 'cfg', "
                    "'{\"BM\": 64}', 'ok', 1.0, :study, '{}') RETURNING id"
                ),
                {"study": study},
            ).scalar_one()
        )


def _count(engine: Engine, table: str) -> int:
    with engine.connect() as connection:
        return int(connection.execute(text(f"SELECT count(*) FROM {table}")).scalar() or 0)


def test_upgrade_from_0001_keeps_data_and_adds_claims(engine: Engine) -> None:
    """The upgrade path: rows written under revision 0001 survive the move to head."""
    downgrade(engine, "0001")
    _write_device(engine)
    upgrade(engine)
    check_schema(engine)
    factory = storage.make_session_factory(engine)
    with factory.begin() as session:
        assert storage.claim_candidate(session, "s", "cfg", "w1")
        assert not storage.claim_candidate(session, "s", "cfg", "w2")
        assert storage.claim_candidate(session, "s", "other", "w2")
    assert (_count(engine, "device"), _count(engine, "claim")) == (1, 2)


def test_upgrade_from_0002_keeps_data_and_adds_device_rates(engine: Engine) -> None:
    """The upgrade path: a device and a claim written under revision 0002 survive the move to
    head, and the device can then get rates; downgrading drops the rates only."""
    downgrade(engine, "0002")
    assert "device_rates" not in inspect(engine).get_table_names()
    _write_device(engine)
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO claim (study, config_name, worker) VALUES ('s', 'cfg', 'w1')")
        )
    upgrade(engine)
    check_schema(engine)
    with storage.make_session_factory(engine).begin() as session:
        rates = storage.RatesIn(ffma_tflops=60.0, fp64_tensor_tflops=58.0)
        stored = storage.record_device_rates(session, DeviceIn("H100", "sm_90", 132), rates)
        assert stored.device.id == 1  # the device row from before the upgrade, not a new one
    assert (_count(engine, "device"), _count(engine, "claim")) == (1, 1)
    assert _count(engine, "device_rates") == 1
    downgrade(engine, "0002")
    assert "device_rates" not in inspect(engine).get_table_names()
    assert _count(engine, "device") == 1


def test_the_revision_chain_read_from_the_scripts_is_alembics(engine: Engine) -> None:
    """check_schema reads the chain from the scripts' text (no Alembic import on a quick
    command); Alembic, which migrates, must see the same chain, head and stamp."""
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory.from_config(storage.schema.alembic_config())
    assert head_revision() == scripts.get_current_head()
    assert storage.schema.known_revisions() == {
        script.revision: script.down_revision for script in scripts.walk_revisions()
    }
    with engine.connect() as connection:
        stamped = MigrationContext.configure(
            connection, opts={"version_table": storage.schema.VERSION_TABLE}
        ).get_current_revision()
    assert stamped is not None
    assert current_revision(engine) == stamped


def test_check_schema_refuses_unknown_revision(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("UPDATE gemmtune_alembic_version SET version_num = 'fffffffffff'"))
    with pytest.raises(StorageError, match="newer version"):
        check_schema(engine)


def test_optuna_storage_shares_the_database(engine: Engine) -> None:
    """Optuna migrates its own tables with its own Alembic; both schemas must coexist."""
    import optuna

    url = engine.url.render_as_string(hide_password=False)
    study = optuna.create_study(study_name="shared", storage=url)
    study.optimize(lambda trial: trial.suggest_float("x", 0, 1), n_trials=2)
    check_schema(engine)
    upgrade(engine)  # a no-op that must not touch Optuna's tables
    assert len(optuna.load_study(study_name="shared", storage=url).trials) == 2


def test_upgrade_from_0005_renames_row_major_to_nn(engine: Engine) -> None:
    """A shape stored as ``row-major`` (every shape before layouts) is ``NN`` after the upgrade,
    with its measurements, and the default for new rows is ``NN``; downgrading renames back."""
    downgrade(engine, "0005")
    _write_device(engine)
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO shape (m, n, k) VALUES (7, 8, 9)"))
        connection.execute(
            text(
                "INSERT INTO shape (m, n, k, dtype, layout) "
                "VALUES (1, 2, 3, 'float32', 'row-major')"
            )
        )
    upgrade(engine)
    check_schema(engine)
    with engine.begin() as connection:
        rows = connection.execute(text("SELECT m, layout FROM shape ORDER BY m")).all()
        assert [tuple(row) for row in rows] == [(1, "NN"), (7, "NN")]
        connection.execute(text("INSERT INTO shape (m, n, k) VALUES (5, 5, 5)"))
        fresh = connection.execute(text("SELECT layout FROM shape WHERE m = 5")).scalar()
        assert fresh == "NN"
    with storage.make_session_factory(engine)() as session:
        assert storage.find_shape(session, storage.ShapeIn(1, 2, 3, "float32", "row-major"))
    downgrade(engine, "0005")
    with engine.connect() as connection:
        layouts = connection.execute(text("SELECT DISTINCT layout FROM shape")).scalars().all()
        assert layouts == ["row-major"]


def test_downgrade_below_0006_refuses_other_layouts(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO shape (m, n, k, dtype, layout) VALUES (1, 2, 3, 'bfloat16', 'NT')")
        )
    with pytest.raises(RuntimeError, match="layouts NT, TN or TT"):
        downgrade(engine, "0005")


def _progress_plan(engine: Engine, *, at_head: bool = True) -> str:
    """How the database would run a study page's progress query (its plan, as text); below
    head, a count of the study's rows (the query's phase column came later)."""
    query: Any = storage.progress_query("some study")
    if not at_head:
        query = select(func.count()).where(storage.Measurement.study == "some study")
    with engine.connect() as connection:
        compiled = query.compile(connection, compile_kwargs={"literal_binds": True})
        if connection.dialect.name == "sqlite":
            rows = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}").all()
            return " ".join(str(row[-1]) for row in rows)
        # A few rows: the planner would rightly scan them; ask whether it can use an index.
        connection.exec_driver_sql("SET LOCAL enable_seqscan = off")
        return " ".join(row[0] for row in connection.exec_driver_sql(f"EXPLAIN {compiled}"))


def test_upgrade_from_0006_indexes_the_study_of_a_measurement(engine: Engine) -> None:
    """A study's progress query reads its rows through an index after the upgrade, not every
    measurement; rows written before it keep their study; downgrading drops the index only."""
    downgrade(engine, "0006")
    assert "ix_measurement_study_id" not in _index_names(engine)
    assert "ix_measurement_study_id" not in _progress_plan(engine, at_head=False)
    _write_measurement(engine, study="s")  # as that revision's code wrote it
    upgrade(engine)
    check_schema(engine)
    assert "ix_measurement_study_id" in _progress_plan(engine)
    with storage.make_session_factory(engine)() as session:
        assert storage.study_progress(session, "s").trials == 1
    downgrade(engine, "0006")
    assert "ix_measurement_study_id" not in _index_names(engine)
    assert _count(engine, "measurement") == 1


def _index_names(engine: Engine) -> set[str]:
    return {str(ix["name"]) for ix in inspect(engine).get_indexes("measurement")}


def _accuracies(engine: Engine) -> list[tuple[str, str]]:
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT 'measurement', accuracy FROM measurement "
                "UNION ALL SELECT 'best_config', accuracy FROM best_config ORDER BY 1"
            )
        )
        return [(str(table), str(accuracy)) for table, accuracy in rows]


def _best_key(engine: Engine) -> list[list[str]]:
    """The columns of best_config's unique constraints."""
    constraints = inspect(engine).get_unique_constraints("best_config")
    return sorted([str(c) for c in uc["column_names"]] for uc in constraints)


def test_upgrade_from_0007_makes_every_row_exact(engine: Engine) -> None:
    """A measurement and its best config stored under 0007 are of class ``exact`` after the
    upgrade, and the best config is then kept per class: an emulated one joins it, a slower
    strict one does not replace it; downgrading keeps the rows and restores the old key."""
    downgrade(engine, "0007")
    assert _best_key(engine) == [["device_id", "shape_id"]]
    measurement_id = _write_measurement(engine)
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO best_config (device_id, shape_id, measurement_id) VALUES (1, 1, :m)"),
            {"m": measurement_id},
        )
    upgrade(engine)
    check_schema(engine)
    assert _accuracies(engine) == [("best_config", "exact"), ("measurement", "exact")]
    assert _best_key(engine) == [["device_id", "shape_id", "accuracy"]]
    device, shape = DeviceIn("H100", "sm_90", 132), storage.ShapeIn(64, 64, 64)
    with storage.make_session_factory(engine).begin() as session:
        slower = storage.MeasurementIn("warptile", "slower", {"BM": 64}, ms=2.0)
        storage.record_measurement(session, device, shape, slower)
        emulated = storage.MeasurementIn("warptile", "e", {"BM": 64}, ms=0.5, accuracy="bf16x3")
        storage.record_measurement(session, device, shape, emulated)
    with storage.make_session_factory(engine)() as session:
        bests = {(b.accuracy, b.measurement_id) for b in storage.best_configs(session)}
        assert ("exact", measurement_id) in bests and len(bests) == 2
    with engine.begin() as connection:
        connection.execute(text("DELETE FROM best_config WHERE accuracy <> 'exact'"))
        connection.execute(text("DELETE FROM measurement WHERE accuracy <> 'exact'"))
    downgrade(engine, "0007")
    assert _best_key(engine) == [["device_id", "shape_id"]]
    assert "accuracy" not in {c["name"] for c in inspect(engine).get_columns("measurement")}
    assert (_count(engine, "measurement"), _count(engine, "best_config")) == (2, 1)


@pytest.mark.parametrize("is_best", [True, False])
def test_downgrade_below_0008_refuses_other_accuracy_classes(engine: Engine, is_best: bool) -> None:
    with storage.make_session_factory(engine).begin() as session:
        emulated = storage.MeasurementIn("warptile", "e", {"BM": 64}, ms=0.5, accuracy="bf16x3")
        storage.record_measurement(
            session, DeviceIn("H100", "sm_90", 132), storage.ShapeIn(64, 64, 64), emulated
        )
    if not is_best:  # a non-exact measurement that is no best config is refused too
        with engine.begin() as connection:
            connection.execute(text("DELETE FROM best_config"))
    with pytest.raises(RuntimeError, match=r"accuracy classes other than 'exact' \(bf16x3\)"):
        downgrade(engine, "0007")
    assert current_revision(engine) == head_revision()  # nothing of the downgrade happened
    assert _accuracies(engine)[-1] == ("measurement", "bf16x3")


def _write_0008_rows(engine: Engine, rows: list[tuple[str, str | None, str]]) -> None:
    """Measurements (config name, study, provenance as JSON text) of one device and shape, in
    the columns revision 0008 has."""
    _write_device(engine)
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO shape (m, n, k) VALUES (64, 64, 64)"))
        for i, (name, study, provenance) in enumerate(rows):
            connection.execute(
                text(
                    "INSERT INTO measurement (device_id, shape_id, family, config_name, params, "
                    "status, ms, study, provenance) VALUES (1, 1, 'warptile', :name, "
                    "'{\"BM\": 64}', 'ok', :ms, :study, :provenance)"
                ),
                {"name": name, "ms": 1.0 + i, "study": study, "provenance": provenance},
            )


def _policy(engine: Engine) -> dict[str, tuple[str | None, str, bool, dict[str, object]]]:
    """Config name -> (study, phase, trusted, provenance) of every measurement."""
    with storage.make_session_factory(engine)() as session:
        rows = session.scalars(select(storage.Measurement))
        return {r.config_name: (r.study, r.phase, r.trusted, r.provenance) for r in rows}


def test_upgrade_from_0008_fills_phase_and_trust_from_study_names_and_provenance(
    engine: Engine,
) -> None:
    """A finalist is ``final`` in its own study after the upgrade, whether its study name or its
    provenance said so; ``"trusted": false`` makes a row untrusted; the keys read leave the
    provenance, the rest of it stays. Downgrading writes the conventions back."""
    downgrade(engine, "0008")
    _write_0008_rows(
        engine,
        [
            ("screened", "s", "{}"),
            ("finalist", "s|finalists", '{"phase": "final", "rounds": 5}'),
            ("final_by_provenance", "t", '{"phase": "final"}'),
            ("final_by_name", "u|finalists", "{}"),
            ("untrusted", None, '{"trusted": false, "worker": "w"}'),
            ("trusted_upload", None, '{"trusted": true}'),
            ("other_phase", "v", '{"phase": "warm-up"}'),
        ],
    )
    upgrade(engine)
    check_schema(engine)
    assert _policy(engine) == {
        "screened": ("s", "screening", True, {}),
        "finalist": ("s", "final", True, {"rounds": 5}),
        "final_by_provenance": ("t", "final", True, {}),
        "final_by_name": ("u", "final", True, {}),
        "untrusted": (None, "screening", False, {"worker": "w"}),
        "trusted_upload": (None, "screening", True, {}),
        "other_phase": ("v", "screening", True, {"phase": "warm-up"}),
    }
    with storage.make_session_factory(engine)() as session:
        assert [r.config_name for r in storage.measurements_for_study(session, "s")] == ["screened"]
    downgrade(engine, "0008")
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT config_name, study, provenance FROM measurement ORDER BY id")
        ).all()
    # PostgreSQL's driver decodes a json column; SQLite's returns its text.
    decoded = [(n, s, json.loads(p) if isinstance(p, str) else p) for n, s, p in rows]
    assert decoded == [
        ("screened", "s", {}),
        ("finalist", "s|finalists", {"phase": "final", "rounds": 5}),
        ("final_by_provenance", "t|finalists", {"phase": "final"}),
        ("final_by_name", "u|finalists", {"phase": "final"}),
        ("untrusted", None, {"worker": "w", "trusted": False}),
        ("trusted_upload", None, {}),
        ("other_phase", "v", {"phase": "warm-up"}),
    ]


def test_the_best_config_rule_reads_the_migrated_columns(engine: Engine) -> None:
    """A finalist stored under 0008 stays the best after the upgrade against a faster screening
    time, and an untrusted one never becomes it."""
    downgrade(engine, "0008")
    _write_0008_rows(engine, [("finalist", "s|finalists", '{"phase": "final"}')])
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO best_config (device_id, shape_id, measurement_id) VALUES (1, 1, 1)")
        )
    upgrade(engine)
    device, shape = DeviceIn("H100", "sm_90", 132), storage.ShapeIn(64, 64, 64)
    with storage.make_session_factory(engine).begin() as session:
        for name, trusted in (("screened", True), ("untrusted_screened", False)):
            faster = storage.MeasurementIn(
                "warptile", name, {"BM": 64}, ms=0.1, trusted=trusted, phase="screening"
            )
            storage.record_measurement(session, device, shape, faster)
        untrusted = storage.MeasurementIn(
            "warptile", "untrusted", {"BM": 64}, ms=0.1, phase="final", trusted=False
        )
        storage.record_measurement(session, device, shape, untrusted)
    with storage.make_session_factory(engine)() as session:
        (best,) = storage.best_configs(session)
        assert best.measurement.config_name == "finalist"
