"""``--gpus``: all, a count, or device indices, read against the devices CUDA makes visible
(their count faked here: no GPU in CI)."""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any

import pytest

from tuner.core.errors import InputError
from tuner.gpu.selection import DEFAULT_GPUS, REPLAY_GPUS, choose_gpus, parse_gpus


def fake_cupy(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """A ``cupy`` whose runtime reports ``count`` devices (what CUDA would say after applying
    ``CUDA_VISIBLE_DEVICES``)."""
    module: Any = types.ModuleType("cupy")
    module.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: count))
    monkeypatch.setitem(sys.modules, "cupy", module)
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return object() if name == "cupy" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.mark.parametrize(
    ("value", "count", "devices"),
    [
        ("all", 4, (0, 1, 2, 3)),
        ("ALL", 2, (0, 1)),
        ("1", 4, (0,)),
        ("3", 4, (0, 1, 2)),
        ("4", 4, (0, 1, 2, 3)),
        ("2,0", 4, (2, 0)),
        (" 1 , 3 ", 4, (1, 3)),
        ("1,", 4, (1,)),
        ("0,", 1, (0,)),
    ],
)
def test_all_a_count_or_indices(value: str, count: int, devices: tuple[int, ...]) -> None:
    assert parse_gpus(value, count) == devices


@pytest.mark.parametrize(
    "value", ["0", "5", "-1", "", ",", "1,1", "0,4", "a", "1.5", "all,1", "²", "0,,1"]
)
def test_bad_values_name_themselves_and_what_is_allowed(value: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_gpus(value, 4)
    message = str(caught.value)
    assert f"got {value!r}" in message
    assert "all, a count in 1..4" in message and "indices in 0..3" in message


def test_without_the_option_one_gpu_and_no_device_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cupy(monkeypatch, 0)  # would be an error if it were asked
    assert choose_gpus(None, "gpu") == DEFAULT_GPUS == (0,)


def test_a_replay_stands_for_a_host_of_replay_gpus() -> None:
    assert choose_gpus("all", "replay") == tuple(range(REPLAY_GPUS))
    assert choose_gpus("3", "replay") == (0, 1, 2)
    with pytest.raises(InputError, match=f"a count in 1..{REPLAY_GPUS}"):
        choose_gpus(str(REPLAY_GPUS + 1), "replay")


def test_cuda_visible_devices_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    """Physical GPUs 2 and 3 visible: CUDA numbers them 0 and 1, and so does --gpus."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    fake_cupy(monkeypatch, 2)
    assert choose_gpus("all", "gpu") == (0, 1)
    assert choose_gpus("1,", "gpu") == (1,)
    with pytest.raises(InputError) as caught:
        choose_gpus("2,", "gpu")
    message = str(caught.value)
    assert "indices in 0..1" in message and "CUDA_VISIBLE_DEVICES=2,3" in message
    assert "got '2,'" in message


def test_no_visible_device_is_one_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    fake_cupy(monkeypatch, 0)
    with pytest.raises(InputError, match=r"no CUDA device found \(CUDA_VISIBLE_DEVICES=\)"):
        choose_gpus("all", "gpu")
