"""A lock per study shared by every process and machine that writes to one database.

Several workers add the trials of one study to its Optuna copy. A worker adds a trial only if
the study has none for that config yet, and the check and the write must be one step, or two
workers finishing together each add the same trial (issue found with three worker processes: 35
trials for 24 measurements). The lock makes the two one step:

* PostgreSQL: a session advisory lock on its own connection, keyed by the study (the two-key
  form, apart from the one-key locks claims take per study and from the schema lock);
* a SQLite file: an exclusive ``flock`` on a file beside the database, one for all its studies
  (writes to a SQLite file take turns anyway, and every process sharing it is on its machine);
* an in-memory SQLite database: a lock of this process (nothing else can open it).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, func, select

# The first key of this lock's advisory locks ("gtnf"); the second is the study's hash.
TRIAL_LOCK_CLASS = 0x67746E66
LOCK_FILE_SUFFIX = ".study-locks"

_local_locks: dict[str, threading.Lock] = {}
_local_locks_guard = threading.Lock()


@contextmanager
def study_lock(engine: Engine, study: str) -> Iterator[None]:
    """Hold the lock of ``study`` in ``engine``'s database while the block runs."""
    url = engine.url
    if url.get_backend_name() == "postgresql":
        with _advisory_lock(engine, study):
            yield
    elif url.database and url.database != ":memory:" and url.query.get("uri") != "true":
        database = Path(url.database).resolve()
        with _file_lock(database.with_name(database.name + LOCK_FILE_SUFFIX)):
            yield
    else:
        with _local_locks_guard:
            lock = _local_locks.setdefault(study, threading.Lock())
        with lock:
            yield


@contextmanager
def _advisory_lock(engine: Engine, study: str) -> Iterator[None]:
    key = (TRIAL_LOCK_CLASS, func.hashtext(study))
    with engine.connect() as connection:
        connection.execute(select(func.pg_advisory_lock(*key)))
        try:
            yield
        finally:
            connection.execute(select(func.pg_advisory_unlock(*key)))
            connection.commit()


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    import fcntl  # POSIX: the machines that run CUDA GPUs

    # One open file description per holder: two threads of one process exclude each other too.
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
