"""A standing worker walks the spaces of common problems before it says it is ready
(``tuner.run.warm_spaces``): its first study of such a problem checks no config against the
device again."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import tuner.kernels.space as space
import tuner.run.warm_spaces as warm
from tests.tuner.cli.running import cli
from tests.tuner.fakes import RuleEvaluator
from tuner.core.shape import Shape
from tuner.kernels.resources import DeviceLimits, table_device
from tuner.run import runner
from tuner.run.runner import families_for

# Problems a worker may be given, none of them one of the common shapes themselves.
LATER = (
    Shape(3000, 5000, 1000),
    Shape(512, 11008, 4096),
    Shape(128, 256, 32768),
    Shape(4096, 4096, 4096, "bfloat16", "NT"),
    Shape(1, 4096, 4096, "bfloat16", "NT"),
    Shape(2048, 1024, 5632, "float16", "NN"),
)


def _fresh_device(name: str) -> DeviceLimits:
    """An sm_90 device no other test has checked configs against (the checks are kept per
    device)."""
    return dataclasses.replace(table_device("sm_90"), name=name)


def _checks(device: DeviceLimits, shape: Shape, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many configs the spaces of ``shape``'s default families check against ``device``."""
    calls = 0
    check = space.static_check

    def counted(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        return check(*args)

    monkeypatch.setattr(space, "static_check", counted)
    for family in families_for(shape):
        space.Space(family, shape, device).candidates()
    monkeypatch.setattr(space, "static_check", check)
    return calls


@pytest.fixture(scope="module")
def warmed() -> DeviceLimits:
    """A device the warm-up has walked the common spaces for (once: seconds)."""
    device = _fresh_device("warmed")
    assert warm.warm_rules() > 0
    assert warm.warm_spaces(device) > 0
    return device


@pytest.mark.parametrize("shape", LATER, ids=str)
def test_after_the_warm_up_a_common_problem_checks_nothing_again(
    shape: Shape, warmed: DeviceLimits, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold = _fresh_device(f"cold {shape}")
    assert _checks(cold, shape, monkeypatch) > 0  # without the warm-up, the study checks
    assert _checks(warmed, shape, monkeypatch) == 0


def test_the_worker_warms_its_gpus_spaces_before_it_is_ready(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu = RuleEvaluator(_fresh_device("worker's GPU"))
    events: list[str] = []

    def start(purpose: str, budget_ms: float, *args: Any, **kwargs: Any) -> RuleEvaluator:
        events.append("started")
        return gpu

    def spaces(device: DeviceLimits) -> int:
        assert device is gpu.device
        events.append("warmed")
        return 1

    monkeypatch.setattr(runner, "start_gpu", start)
    monkeypatch.setattr(warm, "warm_spaces", spaces)
    monkeypatch.setattr("tuner.gpu.selection.cuda_device_count", lambda purpose: 1)
    code, out, err = cli(capsys, "worker", "--db", f"sqlite:///{tmp_path / 'queue.db'}")
    assert code == 0, err
    assert events == ["started", "warmed"]
    assert "ready on" in out and "worker done" in out
