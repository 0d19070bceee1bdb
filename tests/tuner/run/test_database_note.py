"""More than two workers on one SQLite file are told, before they start, that they will wait for
each other's writes and that PostgreSQL serves them better."""

from __future__ import annotations

import pytest

from tuner.run.worker_processes import SQLITE_WORKERS, database_note


def test_more_workers_than_sqlite_serves_well_get_a_note(tmp_path):
    note = database_note(f"sqlite:///{tmp_path / 'g.db'}", SQLITE_WORKERS + 2)
    assert note is not None
    assert f"{SQLITE_WORKERS + 2} workers" in note and "postgresql+psycopg://" in note


def test_the_default_database_is_sqlite_and_gets_the_note(monkeypatch):
    monkeypatch.delenv("GEMMTUNE_DATABASE_URL", raising=False)
    assert database_note(None, 4) is not None


@pytest.mark.parametrize("workers", [1, SQLITE_WORKERS])
def test_few_workers_on_sqlite_get_none(tmp_path, workers):
    assert database_note(f"sqlite:///{tmp_path / 'g.db'}", workers) is None


def test_postgresql_gets_none_however_many_workers(monkeypatch):
    url = "postgresql+psycopg://tuner@db.example/gemmtune"
    assert database_note(url, 8) is None
    monkeypatch.setenv("GEMMTUNE_DATABASE_URL", url)
    assert database_note(None, 8) is None
