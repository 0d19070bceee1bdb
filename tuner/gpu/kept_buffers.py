"""Scratch arrays kept between launches: made zeroed once per device, stream, thread and key,
so a repeated launch allocates nothing and what it never writes stays zero.

A study or a bench works on one shape at a time, ``tuner.client`` callers on a few: the
oldest set goes beyond :data:`KEPT_BUFFERS`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

KEPT_BUFFERS = 4

_buffers: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
_lock = threading.Lock()


def kept_buffers(key: Hashable, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The arrays ``make`` returned for ``key`` on the current device, stream and thread
    (``make`` runs on first use only; its arrays must start zeroed)."""
    import cupy

    full = (cupy.cuda.Device().id, cupy.cuda.get_current_stream().ptr, threading.get_ident(), key)
    with _lock:
        kept = _buffers.get(full)
        if kept is None:
            while len(_buffers) >= KEPT_BUFFERS:
                _buffers.popitem(last=False)
            kept = _buffers[full] = make()
        _buffers.move_to_end(full)
        return kept
