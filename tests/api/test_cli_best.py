"""``gemmtune best`` prints the answer ``POST /v1/configs/best`` gives: the same config, source
and distance, from the same rules (``tuner.answers.best``)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import H100
from tests.tuner.cli.running import cli


@pytest.mark.parametrize(
    "shape",
    [(1024, 1024, 1024), (1024, 2048, 1024), (4000, 4096, 4100), (3, 5, 7)],
    ids=["exact", "nearest", "nearest-big", "small"],
)
@pytest.mark.parametrize("device", [None, H100.name])
def test_the_cli_and_the_api_answer_alike(
    sqlite_client: TestClient,
    capsys: pytest.CaptureFixture[str],
    shape: tuple[int, int, int],
    device: str | None,
) -> None:
    m, n, k = shape
    body: dict[str, object] = {"m": m, "n": n, "k": k}
    args = ["best", "--shape", f"{m}x{n}x{k}"]
    if device is not None:
        body["device"] = device
        args += ["--device", device]
    api = sqlite_client.post("/v1/configs/best", json=body).json()
    db = sqlite_client.app.state.settings.database_url  # type: ignore[attr-defined]
    code, out, err = cli(capsys, *args, "--db", db)
    lines = out.splitlines()
    assert code == 0, err
    assert lines[0] == api["name"]
    assert lines[1].startswith(f"  source: {api['source']}")
    if api["measured_on"] is not None:
        assert f"distance {api['distance']:.3f}" in lines[1]
        measured = api["measured_on"]
        assert f"measured on {measured['m']}x{measured['n']}x{measured['k']}" in lines[2]
    assert " ".join(api["note"].split()) in " ".join(out.split())
