"""The one policy for bad content in a results file: stop, and say where.

Results files are written by our own tools (``gemmtune sweep``, ``gemmtune bench``), so a
line that does not parse, or a field that is missing or of the wrong type, means a file was cut
short, edited by hand or written by another format's tool. Skipping it would quietly change
what a replay answers, where a study starts, or what a server serves; so every reader raises
:class:`ResultsFileError` naming the file, the line (or row) and the field, and nothing is used
from that file. Blank lines are not content and are passed over.

What the format allows but a reader cannot use (a config name of an older tuner, a failed row)
is not bad content: each reader says what it does with such rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tuner.core.errors import InputError


class ResultsFileError(InputError):
    """A results file holds content its format does not allow."""

    def __init__(self, path: Path, where: str, problem: str) -> None:
        super().__init__(f"{path} {where}: {problem}; fix or remove the file")


class BadField(ValueError):
    """One field of a JSON object is missing or of the wrong type (the reader adds where)."""


def json_object(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise BadField(f"{what} must be a JSON object, got {_short(value)}")
    return value


def text(obj: Mapping[str, Any], name: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not value:
        raise BadField(f"`{name}` must be a non-empty string, got {_short(value)}")
    return value


def optional_text(obj: Mapping[str, Any], name: str) -> str | None:
    return None if obj.get(name) is None else text(obj, name)


def integer(obj: Mapping[str, Any], name: str) -> int:
    value = obj.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadField(f"`{name}` must be an integer, got {_short(value)}")
    return value


def optional_integer(obj: Mapping[str, Any], name: str) -> int | None:
    return None if obj.get(name) is None else integer(obj, name)


def number(obj: Mapping[str, Any], name: str) -> float:
    value = obj.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadField(f"`{name}` must be a finite number, got {_short(value)}")
    return float(value)


def optional_number(obj: Mapping[str, Any], name: str) -> float | None:
    return None if obj.get(name) is None else number(obj, name)


def mapping(obj: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = obj.get(name)
    if not isinstance(value, dict):
        raise BadField(f"`{name}` must be a JSON object, got {_short(value)}")
    return value


def _short(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."
