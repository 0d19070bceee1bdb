"""Fixtures shared by the tuner tests."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

import tuner.gpu.worker as gpu_worker
from tests.tuner.fake_gpu import FakeCompiler, fake_worker
from tuner.gpu.worker import GpuEvaluator


@pytest.fixture
def pretend_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return object() if name == "cupy" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.fixture
def fake_gpu_evaluator(
    pretend_cupy: None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[GpuEvaluator]:
    monkeypatch.setattr(gpu_worker, "_worker_main", fake_worker)
    monkeypatch.setattr(gpu_worker, "NvrtcCompiler", FakeCompiler)
    monkeypatch.setattr(FakeCompiler, "failing", set())
    monkeypatch.setattr(FakeCompiler, "spilling", set())
    monkeypatch.setattr(FakeCompiler, "compiled", [])
    ev = GpuEvaluator(run_timeout_s=1.0, compile_workers=2)
    yield ev
    ev.close()
