"""Whether a SQLite database is still the file a server opened, with its write-ahead log.

A process that has the file open keeps writing to it after it is deleted, replaced (renamed
over) or moved away: the writes succeed and land in a file nobody will open again. So a
long-running process records the file's identity (device and inode) when it starts, and
compares before it writes and when asked about its health.

Two operator mistakes need more than that comparison:

- The file moved away. A new connection opened by path would create an empty file in its
  place, and SQLite, finding the old ``-wal`` beside an empty database, deletes it: what the
  log held of acknowledged writes is gone, even once the file is moved back. So once the file
  is not the recorded one, :meth:`SqliteFile.guard` refuses to open any connection, and every
  connection is opened ``mode=rw`` (never creating a file).
- The ``-wal`` file deleted. Open connections keep using the unlinked log, so writes succeed
  and read back, and are lost if anything opens the database anew. Which log the process has
  open is read from ``/proc/self/fd`` (Linux; elsewhere only the database file is checked).
  Nothing acknowledged before is lost: the last connection to close writes the log it holds
  into the database, so a clean stop keeps it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, event

_OPEN_FILES = Path("/proc/self/fd")
_UNLINKED = " (deleted)"  # how Linux names an open file that no longer has a path


@dataclass(frozen=True)
class SqliteFile:
    """The identity of the file behind a SQLite engine, as it was when recorded."""

    path: Path
    device: int
    inode: int

    @classmethod
    def of(cls, engine: Engine) -> SqliteFile | None:
        """The engine's file now; None for PostgreSQL, in-memory and URI databases."""
        url = engine.url
        if url.get_backend_name() != "sqlite" or url.query.get("uri") == "true":
            return None
        if not url.database or url.database == ":memory:":
            return None
        path = Path(url.database).resolve()
        status = path.stat()
        return cls(path, status.st_dev, status.st_ino)

    @property
    def wal(self) -> Path:
        return Path(f"{self.path}-wal")

    def problem(self) -> str | None:
        """Why the file, or the write-ahead log this process has open, is no longer the one it
        writes to, or None when both still are."""
        return self._file_problem() or self._wal_problem()

    def guard(self, engine: Engine) -> None:
        """Make ``engine`` open connections only to this very file, and never create one.

        A refused connection raises ``sqlite3.OperationalError`` with :meth:`problem`'s
        message, which the API answers as a 503."""
        event.listen(engine, "do_connect", self._connect)

    def _connect(
        self, _dialect: Any, _record: Any, cargs: list[Any], cparams: dict[str, Any]
    ) -> None:
        problem = self.problem()
        if problem is not None:
            raise sqlite3.OperationalError(problem)
        cargs[:1] = [f"file:{quote(str(self.path))}?mode=rw"]
        cparams["uri"] = True

    def _file_problem(self) -> str | None:
        try:
            status = self.path.stat()
        except FileNotFoundError:
            moved_to = self._open_name()
            if moved_to is not None:
                return (
                    f"SQLite database {self.path} was moved to {moved_to} while the server ran; "
                    "writes and new connections are refused (one would create an empty file "
                    "there and drop the moved file's log): move it back, or restart the server "
                    "on the new path"
                )
            return (
                f"SQLite database {self.path} was deleted while the server ran; writes are "
                "refused (they would be lost): restore the file or restart the server"
            )
        except OSError as exc:
            return f"SQLite database {self.path} cannot be checked: {os.strerror(exc.errno or 0)}"
        if (status.st_dev, status.st_ino) != (self.device, self.inode):
            return (
                f"SQLite database {self.path} was replaced by another file while the server "
                "ran; writes are refused (they would go to the old file): restart the server"
            )
        return None

    def _wal_problem(self) -> str | None:
        wal = str(self.wal)
        for target, status in _open_files():
            if target == wal + _UNLINKED:
                return (
                    f"the write-ahead log {wal} of SQLite database {self.path} was deleted while "
                    "the server ran; writes are refused (they would be lost): stop the server "
                    "cleanly, which writes what the log held into the database, and start it "
                    "again"
                )
            if target == wal and not _same_file(status, self.wal):
                return (
                    f"the write-ahead log {wal} of SQLite database {self.path} was replaced by "
                    "another file while the server ran; writes are refused: restart the server"
                )
        return None

    def _open_name(self) -> str | None:
        """The path this process's open copy of the recorded file has now (after a move)."""
        for target, status in _open_files():
            same = (status.st_dev, status.st_ino) == (self.device, self.inode)
            if same and not target.endswith(_UNLINKED):
                return target
        return None


def _open_files() -> Iterator[tuple[str, os.stat_result]]:
    """(path, status) of every file this process has open, where the system says."""
    try:
        entries = list(_OPEN_FILES.iterdir())
    except OSError:
        return
    for entry in entries:
        try:
            yield os.readlink(entry), entry.stat()  # stat follows the link to the open file
        except OSError:
            continue  # closed meanwhile (the listing's own descriptor among them)


def _same_file(status: os.stat_result, path: Path) -> bool:
    try:
        now = path.stat()
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (status.st_dev, status.st_ino)
