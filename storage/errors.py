"""The one error storage raises for environment problems, so callers can catch a single type.

Bad *values* passed to the input dataclasses raise ``ValueError``; ``StorageError`` means the
database itself is unusable (unreachable, read-only, wrong schema, bad URL, malformed import).
Its message is always one line that names the problem and, where there is one, the fix.
"""

from __future__ import annotations


class StorageError(Exception):
    """The database cannot be used as asked; ``str(error)`` is a single actionable line."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))
