"""Schemathesis against the generated OpenAPI schema, in process: no request may end in a 5xx."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from api.app import create_app
from api.settings import Settings
from tests.api.conftest import TOKEN, seed


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> schemathesis.BaseSchema:
    url = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'fuzz.db'}"
    seed(url)
    app = create_app(Settings(database_url=url, api_token=TOKEN, cache_ttl_s=0))
    return schemathesis.openapi.from_asgi("/openapi.json", app)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)
def test_no_server_errors(case: schemathesis.Case) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"} if case.method == "POST" else None
    case.call_and_validate(headers=headers, checks=[not_a_server_error])
