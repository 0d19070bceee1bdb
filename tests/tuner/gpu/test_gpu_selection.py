"""``--gpus``: all, a count, or device indices, read against the devices CUDA makes visible
(their count faked here: no GPU in CI)."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import pytest

from tuner.core.errors import InputError
from tuner.gpu.selection import (
    DEFAULT_GPUS,
    REPLAY_GPUS,
    choose_gpus,
    cuda_device_count,
    parse_gpus,
)


class FakeDriver:
    """What ``libcuda.so.1`` answers: ``cuInit``'s status, then ``count`` devices (what CUDA
    counts after applying ``CUDA_VISIBLE_DEVICES``)."""

    def __init__(self, count: int, init_status: int = 0) -> None:
        self.count, self.init_status = count, init_status
        self.calls: list[str] = []

    def cuInit(self, flags: int) -> int:
        self.calls.append("cuInit")
        return self.init_status

    def cuDeviceGetCount(self, count: Any) -> int:
        self.calls.append("cuDeviceGetCount")
        count._obj.value = self.count
        return 0

    def cuGetErrorName(self, status: int, name: Any) -> int:
        name._obj.value = {999: b"CUDA_ERROR_UNKNOWN"}.get(status)
        return 0 if status == 999 else 1


def fake_gpu_host(monkeypatch: pytest.MonkeyPatch, count: int, init_status: int = 0) -> FakeDriver:
    """CuPy installed (as the workers need it) and a driver that reports ``count`` devices."""
    driver = FakeDriver(count, init_status)
    monkeypatch.setattr("tuner.gpu.selection.driver_library", lambda: driver)
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return object() if name == "cupy" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    return driver


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
    fake_gpu_host(monkeypatch, 0)  # would be an error if it were asked
    assert choose_gpus(None, "gpu") == DEFAULT_GPUS == (0,)


def test_a_replay_stands_for_a_host_of_replay_gpus() -> None:
    assert choose_gpus("all", "replay") == tuple(range(REPLAY_GPUS))
    assert choose_gpus("3", "replay") == (0, 1, 2)
    with pytest.raises(InputError, match=f"a count in 1..{REPLAY_GPUS}"):
        choose_gpus(str(REPLAY_GPUS + 1), "replay")


def test_cuda_visible_devices_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    """Physical GPUs 2 and 3 visible: CUDA numbers them 0 and 1, and so does --gpus."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    fake_gpu_host(monkeypatch, 2)
    assert choose_gpus("all", "gpu") == (0, 1)
    assert choose_gpus("1,", "gpu") == (1,)
    with pytest.raises(InputError) as caught:
        choose_gpus("2,", "gpu")
    message = str(caught.value)
    assert "indices in 0..1" in message and "CUDA_VISIBLE_DEVICES=2,3" in message
    assert "got '2,'" in message


def test_no_visible_device_is_one_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    fake_gpu_host(monkeypatch, 0)
    with pytest.raises(InputError, match=r"no CUDA device found \(CUDA_VISIBLE_DEVICES=\)"):
        choose_gpus("all", "gpu")


def test_the_count_comes_from_the_driver_without_importing_cupy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    driver = fake_gpu_host(monkeypatch, 3)
    monkeypatch.setitem(sys.modules, "cupy", None)  # importing it would raise
    assert cuda_device_count("tune") == 3
    assert driver.calls == ["cuInit", "cuDeviceGetCount"]


def test_a_driver_that_does_not_start_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    fake_gpu_host(monkeypatch, 1, init_status=999)
    with pytest.raises(InputError, match=r"tune needs .*did not start: CUDA_ERROR_UNKNOWN \(999\)"):
        cuda_device_count("tune")
    fake_gpu_host(monkeypatch, 1, init_status=12345)
    with pytest.raises(InputError, match=r"did not start: CUresult 12345"):
        cuda_device_count("tune")


def test_no_driver_library_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_gpu_host(monkeypatch, 1)

    def missing() -> Any:
        raise OSError("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr("tuner.gpu.selection.driver_library", missing)
    with pytest.raises(InputError, match=r"--gpus needs a CUDA GPU with CuPy: no NVIDIA driver"):
        choose_gpus("all", "gpu")


def test_the_driver_says_no_device_as_a_count_of_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    fake_gpu_host(monkeypatch, 5, init_status=100)  # CUDA_ERROR_NO_DEVICE
    with pytest.raises(InputError, match=r"no CUDA device found$"):
        cuda_device_count("tune")
