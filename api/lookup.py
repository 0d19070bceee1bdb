"""Moved: the answers live in :mod:`tuner.answers.best` (rules) and :mod:`tuner.answers.index` (the
in-memory index), TFLOP/s in :func:`storage.tflops`.

Only ``tflops`` is still re-exported here, for ``api/preload.py`` until it imports it from
``storage``; nothing else should import this module.
"""

from __future__ import annotations

from storage.values import tflops

__all__ = ["tflops"]
