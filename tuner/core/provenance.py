"""What a measurement's (or a device's rates') ``provenance`` may hold: the one rule for every
way in (API uploads, ``gemmtune import``, the preload, the tuner's own writes).

Provenance is free-form JSON written by whoever stored the row, so it must be JSON that both
backends store and every reader can send back out:

* no NaN or Infinity (PostgreSQL's ``json`` type refuses them; SQLite would store them and the
  export would then not import into PostgreSQL);
* no lone UTF-16 surrogates (``"\\ud800"``: not text in UTF-8, so no response could be encoded)
  and no NUL characters (PostgreSQL text cannot hold one);
* bounded: at most :data:`MAX_DEPTH` levels of nesting, :data:`MAX_KEYS` keys per object and
  :data:`MAX_BYTES` bytes serialized, so one row can neither exhaust a reader's recursion nor
  bloat every page it is listed on;
* objects with string keys; values of the JSON types only (``None``, booleans, integers within
  64 bits, finite floats, strings, lists, objects).

:func:`provenance_problem` says what is wrong (naming the path inside the provenance), or None;
:func:`check_provenance` raises it. The walk is iterative, so a value nested far deeper than the
limit is refused without recursing into it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

MAX_DEPTH = 8  # the top-level object is depth 1
MAX_KEYS = 64  # per object
MAX_BYTES = 16 * 1024  # UTF-8 bytes of the compact JSON
INT_BOUND = 2**64  # integers in (-2^64, 2^64): every JSON reader and both backends keep them

# Shown in place of a stored provenance that breaks these rules (a row written before they
# were enforced, or around them): the reason is text, so every reader can send it out.
UNREADABLE_KEY = "unreadable_provenance"


Where = tuple[str | int, ...]  # keys and list indexes from the top-level object down


class ProvenanceError(ValueError):
    """A provenance that may not be stored: ``where`` inside it, and what is allowed there."""

    def __init__(self, name: str, where: Where, allowed: str) -> None:
        # Keys as shown (escaped and cut): the path travels in messages and error locations.
        self.where = tuple(p if isinstance(p, int) else _label(p) for p in where)
        self.allowed = allowed
        super().__init__(f"`{dotted(name, self.where)}` {allowed}")


def dotted(name: str, where: Where) -> str:
    """``provenance.gpu.clocks[2]``: a path as messages show it (keys escaped and cut)."""
    return name + "".join(
        f"[{part}]" if isinstance(part, int) else f".{_label(part)}" for part in where
    )


def provenance_problem(value: object, name: str = "provenance") -> ProvenanceError | None:
    """Why ``value`` may not be stored as a provenance (naming ``name`` and the path inside
    it, e.g. ```provenance.gpu.clock` must be a finite number, got nan``), or None."""
    if not isinstance(value, Mapping):
        return ProvenanceError(name, (), f"must be a JSON object, got {type(value).__name__}")
    if _obeys(value):
        return None
    return _explained(value, name)


def _obeys(value: Mapping[Any, Any]) -> bool:
    """Whether ``value`` surely obeys the rules: the quick test every stored row's provenance
    takes on each read (a few microseconds for what the tuner writes). False may still be a
    provenance that obeys them (a key holding the text ``\\u0000``): :func:`_explained`
    decides then, walking it again to name the problem."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return False
        if type(item) is dict:
            if len(item) > MAX_KEYS or any(type(key) is not str for key in item):
                return False
            children: Any = item.values()
        elif type(item) is list or type(item) is tuple:
            children = item
        else:
            return False
        for child in children:
            kind = type(child)
            if kind is float:
                if not math.isfinite(child):
                    return False
            elif kind is int:
                if not -INT_BOUND < child < INT_BOUND:
                    return False
            elif kind is dict or kind is list or kind is tuple:
                stack.append((child, depth + 1))
            elif not (kind is str or kind is bool or child is None):
                return False
    try:  # strings: lone surrogates fail to encode; NUL is written as the escape \u0000
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return len(text.encode()) <= MAX_BYTES and "\\u0000" not in text
    except (TypeError, ValueError):  # UnicodeEncodeError is a ValueError
        return False


def _explained(value: Mapping[Any, Any], name: str) -> ProvenanceError | None:
    """The first problem of ``value`` with its path, walking every value (or None)."""
    stack: list[tuple[Where, object]] = [((), value)]
    while stack:
        where, item = stack.pop()
        allowed = _scalar_problem(item)
        if allowed is None and isinstance(item, (Mapping, list, tuple)):
            allowed = _container_problem(item, len(where) + 1)
            if allowed is None and isinstance(item, Mapping):
                stack.extend(((*where, key), child) for key, child in item.items())
            elif allowed is None:
                stack.extend(((*where, i), child) for i, child in enumerate(item))
        if allowed is not None:
            return ProvenanceError(name, where, allowed)
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    if size > MAX_BYTES:
        return ProvenanceError(name, (), f"must be at most {MAX_BYTES} bytes as JSON, got {size}")
    return None


def check_provenance(value: object, name: str = "provenance") -> None:
    """Raise :class:`ProvenanceError` if ``value`` breaks a rule (:func:`provenance_problem`)."""
    problem = provenance_problem(value, name)
    if problem is not None:
        raise problem


def readable_provenance(value: object) -> dict[str, Any]:
    """A stored provenance as a reader may send it: itself (a copy) when it obeys the rules,
    else one key, :data:`UNREADABLE_KEY`, saying why it is not shown. A row stored before the
    rules (or around them) then never breaks a page, an answer or an export."""
    if value is None:
        return {}
    problem = provenance_problem(value)
    if problem is None:
        assert isinstance(value, Mapping)
        return dict(value)
    return {UNREADABLE_KEY: f"not shown: {problem}"}


def _container_problem(
    item: Mapping[Any, Any] | list[Any] | tuple[Any, ...], depth: int
) -> str | None:
    if depth > MAX_DEPTH:
        return f"nests deeper than {MAX_DEPTH} levels"
    if not isinstance(item, Mapping):
        return None
    if len(item) > MAX_KEYS:
        return f"must have at most {MAX_KEYS} keys, got {len(item)}"
    for key in item:
        if not isinstance(key, str):
            return f"keys must be strings, got {_short(key)}"
        allowed = _text_problem(key)
        if allowed is not None:
            return f"key {_label(key)}: {allowed}"
    return None


def _label(key: str) -> str:
    """A key as it is shown in a path: itself when short and printable ASCII, else escaped and
    cut (a message must stay one short line of text any response can carry)."""
    if len(key) <= 40 and key.isascii() and key.isprintable():
        return key
    return _short(key)


def _scalar_problem(item: object) -> str | None:
    """What is wrong with a scalar (None for a container: :func:`_container_problem`)."""
    if item is None or isinstance(item, (bool, Mapping, list, tuple)):
        return None
    if isinstance(item, int):
        if -INT_BOUND < item < INT_BOUND:
            return None
        return f"must be an integer within +-2^64, got one of {item.bit_length()} bits"
    if isinstance(item, float):
        return None if math.isfinite(item) else f"must be a finite number, got {item!r}"
    if isinstance(item, str):
        return _text_problem(item)
    return f"must be a JSON value, got {type(item).__name__}"


def _text_problem(text: str) -> str | None:
    """A string JSON and both backends store: valid UTF-8 (no lone surrogates), no NUL."""
    if "\x00" in text:
        return "must not contain NUL characters"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"must be valid Unicode text, got a lone surrogate {text[exc.start : exc.end]!a}"
    return None


def _short(value: object) -> str:
    shown = ascii(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."
