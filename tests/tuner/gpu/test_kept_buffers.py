"""tuner.gpu.kept_buffers without a GPU (CuPy replaced by a stand-in that says which stream is
current and whether it is being captured): made once per stream, refused under capture."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest

import tuner.gpu.kept_buffers as kept
from tuner.core.errors import InputError


class Stream:
    def __init__(self, ptr: int, capturing: bool = False) -> None:
        self.ptr = ptr
        self.capturing = capturing

    def is_capturing(self) -> bool:
        return self.capturing


@pytest.fixture
def current(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """The stand-in CuPy's current stream (``current.stream``), on device 0."""
    state = SimpleNamespace(stream=Stream(1))
    cuda = SimpleNamespace(
        get_current_stream=lambda: state.stream, Device=lambda: SimpleNamespace(id=0)
    )
    monkeypatch.setitem(sys.modules, "cupy", SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(kept, "_buffers", type(kept._buffers)())
    return state


def test_buffers_are_made_once_per_stream(current: SimpleNamespace) -> None:
    made: list[int] = []

    def make() -> dict[str, Any]:
        made.append(current.stream.ptr)
        return {"a": len(made)}

    first = kept.kept_buffers("key", make)
    assert kept.kept_buffers("key", make) is first
    current.stream = Stream(2)
    assert kept.kept_buffers("key", make) is not first
    assert made == [1, 2]


def test_a_first_use_under_capture_is_refused(current: SimpleNamespace) -> None:
    made: list[int] = []

    def make() -> dict[str, Any]:
        made.append(1)
        return {}

    current.stream = Stream(3, capturing=True)
    with pytest.raises(InputError, match="on the capturing stream before capturing"):
        kept.kept_buffers("key", make)
    assert made == []
    current.stream = Stream(3, capturing=False)
    kept.kept_buffers("key", make)  # warmed up outside the capture...
    current.stream = Stream(3, capturing=True)
    kept.kept_buffers("key", make)  # ...a captured call finds them made
    assert made == [1]
