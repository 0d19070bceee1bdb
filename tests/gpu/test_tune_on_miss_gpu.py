"""Tune on miss on the GPU (issue 44, item 3): the served app queues a shape it answered
``default``, a real ``gemmtune worker`` process tunes it on the GPU, and the next answer for
that shape is ``exact``, naming the config the worker stored as best."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu


def test_a_missed_shape_is_tuned_on_the_gpu_and_answered_exact(tmp_path: Path) -> None:
    from tests.api.test_tune_on_miss import tune_a_miss

    worker = ["-m", "tuner.cli", "worker", "--trials", "12", "--db"]
    tune_a_miss(tmp_path, {"m": 768, "n": 640, "k": 512}, worker, timeout_s=400)
