"""The stream gate on the GPU (``tuner.gpu.stream_gate``): work enqueued behind it waits for the
host, then runs back to back, so a host that dawdles between launches does not reach the
events; a gate never opened lets the stream go after its timeout."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytestmark = pytest.mark.gpu

HOST_PAUSE_S = 0.005  # the host's pause inside each timed repeat: 5 ms


def _small_launch() -> tuple[Any, Any]:
    import cupy as cp

    a = cp.random.default_rng(1).standard_normal((256, 256), dtype=cp.float32)
    return a, cp.empty_like(a)


def _timed_with_a_pause() -> Any:
    """Five repeats of: a copy, a pause on the host, the copy again (``time_launches``)."""
    from tuner.gpu.measure import time_launches

    a, out = _small_launch()

    def run() -> None:
        out[...] = a
        time.sleep(HOST_PAUSE_S)
        out[...] = a

    return time_launches(run, budget_ms=1.0, warmup=1, min_repeats=5, max_repeats=5)


def test_a_host_pause_between_launches_is_not_timed() -> None:
    """The events around the two copies measure microseconds, not the pause."""
    timing = _timed_with_a_pause()
    assert timing.repeats == 5
    assert timing.max_ms < 1000 * HOST_PAUSE_S / 5  # well under the pause


def test_without_the_gate_the_same_pause_is_timed() -> None:
    """The control: the same repeat between events on an ungated stream counts the pause (so
    the test above can fail)."""
    import cupy as cp

    a, out = _small_launch()
    begin, end = cp.cuda.Event(), cp.cuda.Event()
    begin.record()
    out[...] = a
    time.sleep(HOST_PAUSE_S)
    out[...] = a
    end.record()
    end.synchronize()
    assert cp.cuda.get_elapsed_time(begin, end) >= 1000 * HOST_PAUSE_S * 0.9


def test_a_gate_that_is_not_opened_lets_the_stream_go_after_its_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import cupy as cp

    import tuner.gpu.stream_gate as stream_gate

    monkeypatch.setattr(stream_gate, "GATE_TIMEOUT_NS", 50_000_000)  # 50 ms
    a, out = _small_launch()
    with stream_gate.held_stream():
        out[...] = a
        started = time.perf_counter()
        cp.cuda.get_current_stream().synchronize()  # the gate is still closed here
        waited = time.perf_counter() - started
    assert bool(cp.all(out == a))
    assert 0.03 < waited < 5.0


def test_the_gate_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """With GEMMTUNE_STREAM_GATE=0 the timing counts the host's pause again."""
    from tuner.gpu.stream_gate import GATE_ENV_VAR

    monkeypatch.setenv(GATE_ENV_VAR, "0")
    timing = _timed_with_a_pause()
    assert timing.median_ms >= 1000 * HOST_PAUSE_S * 0.9
