"""Whether a SQLite database is still the file a server opened.

A process that has the file open keeps writing to it after it is deleted or replaced (renamed
over): the writes succeed and land in a file nobody will open again. So a long-running process
records the file's identity (device and inode) when it starts, and compares before it writes
and when asked about its health.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine


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

    def problem(self) -> str | None:
        """Why the file is no longer the one recorded, or None when it still is."""
        try:
            status = self.path.stat()
        except FileNotFoundError:
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
