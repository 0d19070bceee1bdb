"""The requests the API docs offer to "Try it out" are real: each example in the OpenAPI schema,
sent as it stands to a server preloaded as ``gemmtune serve`` preloads, is answered (a tuned
answer for the questions about tuned shapes) or stored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import storage
from api.preload import Outcome, preload
from tests.api.conftest import TRUSTED, make_app


@pytest.fixture(scope="module")
def preloaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    url = f"sqlite:///{Path(tmp_path_factory.mktemp('examples')) / 'served.db'}"
    assert preload(storage.open_database(url)).outcome is Outcome.STORED
    app = make_app(url)
    with TestClient(app) as client:
        yield client
    app.state.engine.dispose()


def examples(client: TestClient, schema: str) -> list[dict[str, Any]]:
    found = client.get("/openapi.json").json()["components"]["schemas"][schema].get("examples")
    assert found, f"{schema} offers no example"
    return list(found)


def test_every_question_example_is_answered(preloaded: TestClient) -> None:
    for example in examples(preloaded, "BestRequest"):
        reply = preloaded.post("/v1/configs/best", json=example)
        assert reply.status_code == 200, (example, reply.text)
        if "device" in example:  # the examples naming the H100 ask about shapes it tuned
            assert reply.json()["source"] == "exact", (example, reply.json()["source"])


def test_every_upload_example_is_stored(preloaded: TestClient) -> None:
    for example in examples(preloaded, "ResultsUpload"):
        reply = preloaded.post(
            "/v1/results", json=example, headers={"Authorization": f"Bearer {TRUSTED}"}
        )
        assert reply.status_code == 201, (example, reply.text)
