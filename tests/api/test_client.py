"""``tuner.client.best``: the same answer over HTTP and straight from the database, for the GPU
it runs on (no GPU here: CuPy absent, or a fake one)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

import storage
import tuner.client as client
import tuner.gpu.device
import tuner.kernels.resources
from tests.api.conftest import FAST, H100, LiveServer, seed
from tuner.answers.answer import Answer
from tuner.answers.default_rule import DEFAULT_SMALL
from tuner.answers.device_kind import DeviceSpec
from tuner.client import CURRENT, best
from tuner.core.errors import InputError

H200 = DeviceSpec("NVIDIA H200", "sm_90", 132)
RTX = DeviceSpec("NVIDIA GeForce RTX 4090", "sm_89", 128)


@pytest.fixture
def no_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[DeviceSpec]:
    """CuPy present with one device, an RTX 4090 (no GPU or CuPy needed)."""
    cuda = SimpleNamespace(
        runtime=SimpleNamespace(getDeviceCount=lambda: 1), Device=lambda: SimpleNamespace(id=0)
    )
    monkeypatch.setitem(sys.modules, "cupy", SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(tuner.gpu.device.importlib.util, "find_spec", lambda name: object())
    limits = tuner.kernels.resources.DeviceLimits(RTX.name, "sm_89", 128)
    monkeypatch.setattr(tuner.gpu.device, "live_device", lambda index: limits)
    tuner.gpu.device._described.cache_clear()
    yield RTX
    tuner.gpu.device._described.cache_clear()


def test_best_over_http_and_from_the_database_agree(live_server: LiveServer) -> None:
    db_url = live_server.app.state.settings.database_url
    for device in (None, H200, H100.name):
        over_http = best(1024, 2048, 1024, url=live_server.url, device=device)
        direct = best(1024, 2048, 1024, db=db_url, device=device)
        assert isinstance(over_http, Answer) and over_http == direct
        assert (direct.name, direct.source, direct.measured_on) == (
            FAST, "nearest", (1024, 1024, 1024)
        )  # fmt: skip
        assert direct.measured_on_device is not None
        assert direct.measured_on_device.name == H100.name
    assert direct.device == DeviceSpec(H100.name, "sm_90", 132)  # filled in from the database
    assert direct.config.name == FAST


def test_without_cupy_the_answer_is_for_any_device(no_cupy: None, tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/x.db"
    seed(url)
    assert client.current_device() is None
    answer = best(1024, 1024, 1024, db=url)  # device=CURRENT, the default
    assert (answer.name, answer.device, answer.device_match) == (FAST, None, "any_device")


def test_the_current_gpu_is_the_device_asked_about(
    fake_gpu: DeviceSpec, live_server: LiveServer
) -> None:
    assert client.current_device() == fake_gpu
    db_url = live_server.app.state.settings.database_url
    # The H100's results are not for an RTX 4090 (another kind): the default, for the RTX.
    for answer in (best(1024, 1024, 1024, db=db_url), best(1024, 1024, 1024, url=live_server.url)):
        assert (answer.source, answer.name, answer.device) == ("default", DEFAULT_SMALL, RTX)
    assert best(1024, 1024, 1024, db=db_url, device=None).name == FAST  # any device, asked for
    assert best(1024, 1024, 1024, db=db_url, device=CURRENT).device == RTX


def test_an_unknown_device_name_is_an_input_error(live_server: LiveServer) -> None:
    db_url = live_server.app.state.settings.database_url
    with pytest.raises(InputError, match=r"'RTX' is not a known device .*known devices: "):
        best(1, 1, 1, db=db_url, device="RTX")
    with pytest.raises(InputError, match=r"answered 422: .*'RTX' is not a known device"):
        best(1, 1, 1, url=live_server.url, device="RTX")


def test_best_from_an_empty_database_is_the_default(no_cupy: None, tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/empty.db"
    storage.open_database(url)  # the schema, nothing tuned
    answer = best(3, 5, 7, db=url)
    assert answer.source == "default" and answer.ms is None


def test_best_checks_dimensions_and_reports_server_trouble(no_cupy: None, tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/x.db"
    seed(url)
    with pytest.raises(InputError, match=r"`k` must be an integer in 1\.\.2147483647, got 0"):
        best(1, 1, 0, db=url)
    with pytest.raises(InputError, match="cannot reach gemmtune"):
        best(1, 1, 1, url="http://127.0.0.1:9", timeout_s=1)


def test_the_client_never_creates_a_database(tmp_path: Path) -> None:
    typo = tmp_path / "gemtune.db"
    with pytest.raises(storage.StorageError, match=f"no SQLite database at {typo}"):
        best(64, 64, 64, db=f"sqlite:///{typo}", device=None)
    assert list(tmp_path.iterdir()) == []
