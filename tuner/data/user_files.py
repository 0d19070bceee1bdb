"""Files a user names on the command line (shape CSVs, exports): read and written as UTF-8, with
one-line errors.

A missing file, a directory, a file that is not UTF-8 or a folder that cannot be written to is
bad input, not a crash: every failure becomes an :class:`~tuner.core.errors.InputError` naming the
path and what was wrong with it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tuner.core.errors import InputError


def read_text(path: Path, what: str) -> str:
    """The UTF-8 text of ``path``; ``what`` names the file in errors ("shape file"). A leading
    byte-order mark, which spreadsheets write when they save CSV as UTF-8, is dropped."""
    if path.is_dir():
        raise InputError(f"{what} {str(path)!r} is a directory; give a file")
    if not path.is_file():
        raise InputError(f"{what} {str(path)!r} does not exist")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{what} {str(path)!r} is not UTF-8 text (byte {exc.start}: {exc.reason}); "
            "save it as UTF-8"
        ) from None
    except OSError as exc:
        raise InputError(f"cannot read {what} {str(path)!r}: {exc.strerror}") from None


def read_json(path: Path, what: str) -> Any:
    """The JSON document in ``path`` (UTF-8)."""
    text = read_text(path, what)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} {str(path)!r} is not JSON: {exc}") from None
    except RecursionError:
        raise InputError(
            f"{what} {str(path)!r} nests JSON arrays or objects too deeply to read"
        ) from None


def check_writable(path: Path, what: str) -> None:
    """Refuse a path that cannot be written, without touching it: check before long work."""
    if path.is_dir():
        raise InputError(f"{what} {str(path)!r} is a directory; give a file name")
    folder = path.parent
    if not folder.is_dir():
        raise InputError(
            f"cannot write {what} {str(path)!r}: folder {str(folder)!r} does not exist"
        )
    target = path if path.exists() else folder
    if not os.access(target, os.W_OK):
        raise InputError(f"cannot write {what} {str(path)!r}: {str(target)!r} is not writable")


def write_text(path: Path, text: str, what: str) -> None:
    """Write ``text`` to ``path`` as UTF-8, replacing the file; its folder must exist."""
    check_writable(path, what)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {what} {str(path)!r}: {exc.strerror}") from None
