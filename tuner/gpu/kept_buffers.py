"""Scratch arrays kept between launches: made zeroed once per device, stream, thread and key,
so a repeated launch allocates nothing and what it never writes stays zero.

A study or a bench works on one shape at a time, ``tuner.client`` callers on a few: the
oldest set goes beyond :data:`KEPT_BUFFERS`. A set is made on a stream's first use, which a CUDA
graph capture cannot hold (it allocates): that first use is refused while the stream is captured.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from tuner.core.errors import InputError

KEPT_BUFFERS = 4

_buffers: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
_lock = threading.Lock()


def kept_buffers(key: Hashable, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The arrays ``make`` returned for ``key`` on the current device, stream and thread
    (``make`` runs on first use only; its arrays must start zeroed)."""
    import cupy

    stream = cupy.cuda.get_current_stream()
    full = (cupy.cuda.Device().id, stream.ptr, threading.get_ident(), key)
    with _lock:
        kept = _buffers.get(full)
        if kept is None:
            if stream.is_capturing():
                raise InputError(
                    "this config copies its operands through scratch buffers made on a "
                    "stream's first call, which CUDA graph capture cannot hold: call it once "
                    "with this shape on the capturing stream before capturing"
                )
            while len(_buffers) >= KEPT_BUFFERS:
                _buffers.popitem(last=False)
            kept = _buffers[full] = make()
        _buffers.move_to_end(full)
        return kept
